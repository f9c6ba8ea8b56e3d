"""No process outside DEBUG runs with a secret key from the repository (issue #22, item 6).

``manage.py check --deploy`` fails on one (``rewardhub.E001``), and the served entry points
refuse to start with one: gunicorn with the base settings and no ``DJANGO_SECRET_KEY`` stops at
once. The embedded mode (``make run``: management commands, then runserver under DEBUG) keeps
working without any configuration.
"""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

from rewardhub.checks import REPOSITORY_KEY_CHECK_ID, REPOSITORY_SECRET_KEYS
from tests.fault.servers import HOST, free_port

ROOT = Path(__file__).resolve().parent.parent


def _env(**extra: str) -> dict[str, str]:
    """A fresh process's environment: no inherited key, URLs, debug flag or settings module."""
    dropped = ("DATABASE_", "CELERY_", "DJANGO_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(dropped)}
    return {**env, "DJANGO_SETTINGS_MODULE": "rewardhub.settings", **extra}


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def _random_key() -> str:
    return secrets.token_urlsafe(50)


def test_every_key_written_in_the_repository_is_known() -> None:
    default = _run(
        ["-c", "import django; django.setup(); from django.conf import settings; "
               "print(settings.SECRET_KEY)"],
        _env(),
    )  # fmt: skip
    assert default.returncode == 0, default.stderr
    assert default.stdout.strip() in REPOSITORY_SECRET_KEYS
    example = re.search(r"DJANGO_SECRET_KEY=(\S+)", (ROOT / ".env.example").read_text())
    assert example is not None and example.group(1) in REPOSITORY_SECRET_KEYS


def test_check_deploy_fails_on_a_repository_key() -> None:
    base = _run(["manage.py", "check", "--deploy"], _env())
    assert base.returncode != 0 and REPOSITORY_KEY_CHECK_ID in base.stderr, base.stderr
    assert "DJANGO_SECRET_KEY" in base.stderr
    production = _run(
        ["manage.py", "check", "--deploy"],
        _env(
            DJANGO_SETTINGS_MODULE="rewardhub.settings.production",
            DJANGO_SECRET_KEY="change-me-to-50-random-characters",
            DJANGO_ALLOWED_HOSTS="rewardhub.example.com",
        ),
    )
    assert production.returncode != 0 and REPOSITORY_KEY_CHECK_ID in production.stderr
    fallback = _run(
        ["-c", "import django, os; from django.conf import settings; "
               "settings.configure(DEBUG=False, SECRET_KEY=os.environ['K'], "
               "SECRET_KEY_FALLBACKS=[os.environ['F']]); "
               "from rewardhub.checks import check_secret_key_not_from_repository as c; "
               "print([e.id for e in c()])"],
        _env(K=_random_key(), F="insecure-dev-key-only-for-the-embedded-default-set-a-real-one"),
    )  # fmt: skip
    assert fallback.stdout.strip() == f"['{REPOSITORY_KEY_CHECK_ID}']", fallback.stderr


def test_check_deploy_accepts_a_key_of_ones_own() -> None:
    out = _run(
        ["manage.py", "check", "--deploy"],
        _env(
            DJANGO_SETTINGS_MODULE="rewardhub.settings.production",
            DJANGO_SECRET_KEY=_random_key(),
            DJANGO_ALLOWED_HOSTS="rewardhub.example.com",
        ),
    )
    assert out.returncode == 0, out.stderr
    assert REPOSITORY_KEY_CHECK_ID not in out.stdout + out.stderr


def test_the_embedded_mode_needs_no_key() -> None:
    """``make run``: plain management commands without DEBUG, then the served app under DEBUG."""
    assert _run(["manage.py", "check"], _env()).returncode == 0
    served = _run(["-c", "import rewardhub.wsgi, rewardhub.asgi"], _env(DJANGO_DEBUG="true"))
    assert served.returncode == 0, served.stderr


def test_served_entry_points_refuse_a_repository_key() -> None:
    for module in ("rewardhub.wsgi", "rewardhub.asgi"):
        out = _run(["-c", f"import {module}"], _env())
        assert out.returncode != 0, module
        assert "ImproperlyConfigured" in out.stderr and "DJANGO_SECRET_KEY" in out.stderr
        own = _run(["-c", f"import {module}"], _env(DJANGO_SECRET_KEY=_random_key()))
        assert own.returncode == 0, own.stderr


def test_gunicorn_with_the_base_settings_and_no_key_does_not_serve() -> None:
    """The README's old "for real" command line: gunicorn with the base settings, no key."""
    env = _env(RH_BIND=f"{HOST}:{free_port()}", RH_WEB_WORKERS="1", PYTHONUNBUFFERED="1")
    out = subprocess.run(
        [sys.executable, "-m", "gunicorn", "rewardhub.wsgi:application",
         "-c", "python:rewardhub.gunicorn_conf"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode != 0
    log = out.stdout + out.stderr
    assert "DJANGO_SECRET_KEY" in log and "Worker failed to boot" in log, log[-3000:]


def test_a_celery_worker_refuses_a_repository_key() -> None:
    """Outside DEBUG a worker stops at start-up with the repository's key, naming the variable
    (the integration tests start theirs with a key of their own, and those run)."""
    redis = os.environ.get("RH_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
    out = _run(
        ["-m", "celery", "-A", "rewardhub", "worker", "-Q", "default", "--pool", "solo",
         "--without-gossip", "--without-mingle", "--without-heartbeat"],
        _env(CELERY_BROKER_URL=redis, CELERY_TASK_ALWAYS_EAGER="false"),
    )  # fmt: skip
    assert out.returncode != 0
    log = out.stdout + out.stderr
    assert "refusing to start the worker" in log and "DJANGO_SECRET_KEY" in log, log[-3000:]
