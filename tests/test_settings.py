"""Settings come from the environment: embedded default, PostgreSQL with a pool, production."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _settings_in_fresh_process(env: dict[str, str], expr: str) -> str:
    code = (
        "import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'rewardhub.settings');"
        f"from django.conf import settings; print({expr})"
    )
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_", "CELERY_"))}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env={**clean, **env}, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_embedded_default_is_sqlite_and_eager_celery() -> None:
    engine = _settings_in_fresh_process({}, "settings.DATABASES['default']['ENGINE']")
    eager = _settings_in_fresh_process({}, "settings.CELERY_TASK_ALWAYS_EAGER")
    assert engine == "django.db.backends.sqlite3" and eager == "True"


def test_database_url_uses_psycopg_pool_and_broker_disables_eager() -> None:
    env = {
        "DATABASE_URL": "postgres://u@db.internal:5432/rh",
        "CELERY_BROKER_URL": "redis://cache.internal:6379/0",
    }
    pool = _settings_in_fresh_process(env, "settings.DATABASES['default']['OPTIONS']['pool']")
    assert "'max_size': 10" in pool
    assert _settings_in_fresh_process(env, "settings.CELERY_TASK_ALWAYS_EAGER") == "False"


def test_production_requires_a_secret_key() -> None:
    code = "import django; django.setup()"
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DJANGO_SECRET_KEY", "DJANGO_ALLOWED_HOSTS")
    }
    env["DJANGO_SETTINGS_MODULE"] = "rewardhub.settings.production"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert out.returncode != 0 and "DJANGO_SECRET_KEY" in out.stderr


def test_pool_retries_a_lost_database_at_a_steady_pace() -> None:
    """psycopg_pool's reconnect delay doubles (1, 2, 4, 8 s ...); the app fixes it at
    DATABASE_POOL_RECONNECT_SECONDS, so every API process is back soon after PostgreSQL."""
    from django.conf import settings
    from psycopg_pool.base import AttemptWithBackoff

    attempt = AttemptWithBackoff(timeout=300.0)
    delays = []
    for step in range(6):
        attempt.update_delay(now=float(step))
        delays.append(attempt.delay)
    wanted = settings.DATABASE_POOL_RECONNECT_SECONDS
    assert all(0.85 * wanted <= d <= 1.15 * wanted for d in delays), delays


def test_served_processes_take_the_gc_thresholds_from_the_environment() -> None:
    """rewardhub.wsgi (what gunicorn loads) sets them after freezing the start-up objects."""
    code = (
        "import gc, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'rewardhub.settings');"
        "import rewardhub.wsgi; print(gc.get_threshold(), gc.get_freeze_count() > 0)"
    )
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_", "CELERY_"))}
    clean["DJANGO_SECRET_KEY"] = secrets.token_urlsafe(50)  # a served process needs its own
    for env, expected in (
        ({}, "(10000, 10, 10) True"),
        ({"RH_GC_THRESHOLDS": "5000,20,30"}, "(5000, 20, 30) True"),
    ):
        out = subprocess.run(
            [sys.executable, "-c", code],
            cwd=ROOT,
            env={**clean, **env},
            capture_output=True,
            text=True,
        )
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == expected


def test_each_setting_is_set_by_one_topic_module() -> None:
    """rewardhub/settings/__init__.py composes the topic modules with star imports: with no name
    set by two of them, their order cannot change a value (production overrides on purpose)."""
    import ast

    owners: dict[str, list[str]] = {}
    for path in sorted((ROOT / "rewardhub" / "settings").glob("*.py")):
        if path.name in ("__init__.py", "production.py"):
            continue
        names = {
            target.id
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Assign)
            for target in node.targets
            if isinstance(target, ast.Name) and target.id.isupper()
        }
        for name in names:
            owners.setdefault(name, []).append(path.name)
    assert owners and not {name: files for name, files in owners.items() if len(files) > 1}


def test_api_key_cache_seconds_comes_from_the_environment() -> None:
    """core.services reads settings.RH_API_KEY_CACHE_SECONDS plainly: it must always exist."""
    assert _settings_in_fresh_process({}, "settings.RH_API_KEY_CACHE_SECONDS") == "5.0"
    env = {"RH_API_KEY_CACHE_SECONDS": "0"}
    assert _settings_in_fresh_process(env, "settings.RH_API_KEY_CACHE_SECONDS") == "0.0"


def test_embedded_mode_lists_demo_logins_and_warns_of_no_broker() -> None:
    """#23.13: SQLite is the embedded mode (the sign-in page lists the demo logins there only),
    and its in-memory Celery transport names a host, so kombu does not warn on each task."""
    assert _settings_in_fresh_process({}, "settings.EMBEDDED") == "True"
    pg = {"DATABASE_URL": "postgres://u@db.internal:5432/rh"}
    assert _settings_in_fresh_process(pg, "settings.EMBEDDED") == "False"
    code = (
        "import logging, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'rewardhub.settings');"
        "import django; django.setup(); logging.basicConfig(level=logging.WARNING);"
        "from rewardhub.celery import app;"
        "conn = app.connection_for_write(); conn.info(); print(conn.transport_cls)"
    )
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_", "CELERY_"))}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=clean, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "memory"
    assert "hostname" not in out.stderr.lower(), out.stderr
