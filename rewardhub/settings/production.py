"""Production settings: the base settings plus everything ``manage.py check --deploy`` asks for.

Secrets are required here: a missing ``DJANGO_SECRET_KEY`` fails at start-up, not at first use.
"""

from __future__ import annotations

from rewardhub.settings import *  # noqa: F403
from rewardhub.settings import env

DEBUG = False
SECRET_KEY = env.str("DJANGO_SECRET_KEY")
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS")

# One switch for HTTPS (issue #22, item 8). Behind the TLS-terminating proxy (the default) plain
# HTTP is redirected, the session and CSRF cookies are Secure and HSTS is sent. On a private
# plain-HTTP network (DJANGO_SECURE_SSL_REDIRECT=false) none of them: a browser drops Secure
# cookies over plain HTTP from any host but loopback, so nobody could sign in, and HSTS would
# pin a host that has no HTTPS at all.
_https = env.bool("DJANGO_SECURE_SSL_REDIRECT", default=True)
SECURE_SSL_REDIRECT = _https
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_HSTS_SECONDS = env.int("DJANGO_SECURE_HSTS_SECONDS", default=31_536_000) if _https else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = _https
SECURE_HSTS_PRELOAD = _https
SESSION_COOKIE_SECURE = _https
CSRF_COOKIE_SECURE = _https
SECURE_REFERRER_POLICY = "same-origin"
WHITENOISE_USE_FINDERS = False
WHITENOISE_AUTOREFRESH = False
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}
