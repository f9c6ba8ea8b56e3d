"""The Django project itself: apps, middleware, URLs, templates, accounts, i18n, static files."""

from __future__ import annotations

from rewardhub.settings.environment import BASE_DIR, env

DEBUG = env.bool("DJANGO_DEBUG", default=False)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    # One-way layers: each app imports only the ones above it (tests/test_layers.py).
    "core.apps.CoreConfig",
    "audit",
    "annotations",
    "safety",
    "rewards",
    "review",
    "rewardhub.apps.ProjectConfig",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "rewardhub.middleware.ContentSecurityPolicyMiddleware",
    # Bidi controls in model output never reach a page (core.bidi); static files are streamed
    # and pass untouched.
    "rewardhub.middleware.BidiControlMiddleware",
    "rewardhub.middleware.RequestGuardMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Makes the request (user or API key, request id, IP) visible to the audit log.
    "audit.context.AuditContextMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "rewardhub.urls"
WSGI_APPLICATION = "rewardhub.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "core.context_processors.areas",
            ],
        },
    }
]

AUTH_USER_MODEL = "rewardhub.User"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/accounts/login/"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# Step-label exports too large for one request are written to files here by a Celery task
# (review.export_jobs); shared storage when workers and web processes run on several machines.
# A running export that saved no chunk for STALL_SECONDS has died and may be resumed.
EXPORTS = {
    "ROOT": env.str("RH_EXPORT_ROOT", default="") or str(BASE_DIR / "var" / "exports"),
    "STALL_SECONDS": env.int("RH_EXPORT_STALL_SECONDS", default=300),
}

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "var" / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
# Serve straight from the source folders until production runs collectstatic.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = env.bool("WHITENOISE_AUTOREFRESH", default=True)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": env.str(
            "STATICFILES_BACKEND",
            default="django.contrib.staticfiles.storage.StaticFilesStorage",
        )
    },
}
