"""System checks and start-up refusals of the project (registered in ``ProjectConfig.ready``).

A secret key written in the repository signs nothing outside ``DEBUG``: anyone with a clone
could forge sessions, CSRF tokens and signed cookies with it. ``manage.py check --deploy``
reports it as an error, and the served entry points (``rewardhub.wsgi``, ``rewardhub.asgi``)
refuse to start with it, so gunicorn with the base settings fails at once instead of serving.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import Error, Tags, register
from django.core.exceptions import ImproperlyConfigured

# Every key the repository spells out: the embedded default of ``rewardhub.settings.security``
# and the example value of ``.env.example`` (tests/test_secret_key.py keeps both listed here).
REPOSITORY_SECRET_KEYS = frozenset(
    {
        "insecure-dev-key-only-for-the-embedded-default-set-a-real-one",
        "change-me-to-50-random-characters",
    }
)

REPOSITORY_KEY_CHECK_ID = "rewardhub.E001"


def repository_secret_key_problem(debug: bool, keys: list[str]) -> str | None:
    """Why ``keys`` (``SECRET_KEY`` then any ``SECRET_KEY_FALLBACKS``) must not be used, if so."""
    if debug:
        return None
    for key in keys:
        if key.strip() in REPOSITORY_SECRET_KEYS:
            return (
                "SECRET_KEY (or one of SECRET_KEY_FALLBACKS) is the key written in the "
                "repository; set DJANGO_SECRET_KEY to a long random value of your own "
                "(only DJANGO_DEBUG=true may run with the embedded one)"
            )
    return None


def _configured_keys() -> list[str]:
    return [str(settings.SECRET_KEY), *(str(k) for k in settings.SECRET_KEY_FALLBACKS)]


@register(Tags.security, deploy=True)
def check_secret_key_not_from_repository(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    """``check --deploy`` fails on a repository key (Django's own W009 only warns on weak ones)."""
    problem = repository_secret_key_problem(settings.DEBUG, _configured_keys())
    if problem is None:
        return []
    return [
        Error(
            problem,
            hint="README, 'Using PostgreSQL, Redis and a Celery worker for real'.",
            id=REPOSITORY_KEY_CHECK_ID,
        )
    ]


def refuse_repository_secret_key() -> None:
    """Stop a served process at start-up when it would sign with a repository key."""
    problem = repository_secret_key_problem(settings.DEBUG, _configured_keys())
    if problem is not None:
        raise ImproperlyConfigured(problem)
