"""`make test-frameworks`: TRL, verl and OpenRLHF's own code against the live service.

Prepares the database ``rewardhub_frameworks`` or ``RH_FRAMEWORKS_DATABASE`` (PostgreSQL on
127.0.0.1; migrate, seed_demo, an API key with the ``score`` and ``read`` scopes), then runs
tests_frameworks/ with the frameworks' virtualenv (var/frameworks-venv, where the Makefile
installed them and trainer_bridge as a package). The tests start the service's gunicorn
themselves (rewardhub/gunicorn_conf.py, on 127.0.0.1), stop and restart it. Exits with
pytest's status.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# RH_FRAMEWORKS_DATABASE: another name, so runs of two checkouts on one server do not share it
DB_NAME = os.environ.get("RH_FRAMEWORKS_DATABASE", "rewardhub_frameworks")
PG = ["-h", "127.0.0.1", "-p", "5432", "-U", "postgres"]


def run(cmd: list[str], env: dict[str, str]) -> str:
    done = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:3])} failed:\n{done.stderr[-2000:]}")
    return done.stdout


def main() -> int:
    venv_python = ROOT / "var" / "frameworks-venv" / "bin" / "python"
    if not venv_python.exists():
        raise SystemExit("var/frameworks-venv is missing: run `make test-frameworks`")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_", "CELERY_"))}
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "rewardhub.settings",
            # served with DEBUG off, which refuses the repository's development key
            "DJANGO_SECRET_KEY": os.environ.get("DJANGO_SECRET_KEY") or secrets.token_urlsafe(50),
            "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{DB_NAME}",
        }
    )
    if subprocess.run(["pg_isready", *PG, "-q"], check=False).returncode != 0:
        raise SystemExit("PostgreSQL is not answering on 127.0.0.1:5432")
    query = f"SELECT 1 FROM pg_database WHERE datname='{DB_NAME}'"  # noqa: S608 (a constant)
    if run(["psql", *PG, "-tAc", query], env).strip() != "1":
        run(["createdb", *PG, DB_NAME], env)
    python = sys.executable
    run([python, "manage.py", "migrate", "--noinput"], env)
    run([python, "manage.py", "seed_demo"], env)
    # One key scores and reads: a key reads the records its owner scored.
    key = run([python, "manage.py", "create_api_key", "frameworks", "--scopes", "score,read"], env)
    test_env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_", "VIRTUAL_ENV"))},
        "RH_FW_DATABASE_URL": env["DATABASE_URL"],
        "RH_FW_SCORE_KEY": key.strip(),
        "RH_FW_READ_KEY": key.strip(),
        "RH_FW_ROOT": str(ROOT),
    }
    # From tests_frameworks/, so trainer_bridge is the installed package, not the checkout.
    cmd = [str(venv_python), "-m", "pytest", "-c", "pytest.ini", "-rA", *sys.argv[1:]]
    return subprocess.run(cmd, cwd=ROOT / "tests_frameworks", env=test_env, check=False).returncode


if __name__ == "__main__":
    raise SystemExit(main())
