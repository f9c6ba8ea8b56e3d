"""The database: PostgreSQL with Django's psycopg 3 pool from ``DATABASE_URL``, else SQLite."""

from __future__ import annotations

from rewardhub.settings.environment import BASE_DIR, env

# Seconds between a pool's attempts to reach a lost PostgreSQL (see rewardhub.apps).
DATABASE_POOL_RECONNECT_SECONDS = env.float("DATABASE_POOL_RECONNECT_SECONDS", default=0.5)
if env.str("DATABASE_URL", default=""):
    _db = env.db("DATABASE_URL")
    if _db["ENGINE"] == "django.db.backends.postgresql" and env.bool("DATABASE_POOL", default=True):
        # psycopg 3 with Django's built-in connection pool (Django >= 5.1).
        _db.setdefault("OPTIONS", {})
        _db["OPTIONS"]["pool"] = {
            "min_size": env.int("DATABASE_POOL_MIN", default=1),
            "max_size": env.int("DATABASE_POOL_MAX", default=10),
            # Seconds a request waits for a connection; then it fails cleanly with a 503.
            "timeout": env.float("DATABASE_POOL_TIMEOUT", default=3.0),
        }
        _db["CONN_MAX_AGE"] = 0  # the pool owns connection reuse
    elif _db["ENGINE"] == "django.db.backends.postgresql":
        _db["CONN_MAX_AGE"] = env.int("CONN_MAX_AGE", default=0)
    if _db["ENGINE"] == "django.db.backends.postgresql":
        # A connection broken by a database restart is dropped before use (the pool checks it
        # on checkout), so the API recovers by itself once PostgreSQL is back.
        _db["CONN_HEALTH_CHECKS"] = env.bool("CONN_HEALTH_CHECKS", default=True)
        _db.setdefault("OPTIONS", {})
        _db["OPTIONS"].setdefault("connect_timeout", env.int("DATABASE_CONNECT_TIMEOUT", default=5))
    DATABASES = {"default": _db}
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": env.str("SQLITE_PATH", default=str(BASE_DIR / "var" / "rewardhub.sqlite3")),
            "OPTIONS": {"transaction_mode": "IMMEDIATE", "timeout": 20},
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
# The embedded default (SQLite, what `make run` serves a newcomer): the sign-in page lists the
# demo logins there, and nowhere else.
EMBEDDED = DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3"
