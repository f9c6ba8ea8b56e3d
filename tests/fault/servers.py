"""Real servers for the fault tests: a private PostgreSQL cluster and Redis server, Celery
workers and gunicorn as subprocesses pointed at them (fixtures in conftest.py).

The machine's shared PostgreSQL and Redis are never stopped: every server a test stops, kills
or restarts is started here, on a free port, and removed afterwards. A missing binary skips the
test with the reason.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
HOST = "127.0.0.1"
SERVICE_SECRET_KEY = secrets.token_urlsafe(50)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def wait_until(predicate: Callable[[], Any], timeout: float, interval: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return bool(predicate())


def service_env(**extra: str) -> dict[str, str]:
    """The environment of a worker or API process: production-like, no inherited URLs."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_", "CELERY_"))}
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "rewardhub.settings",
            "DJANGO_DEBUG": "false",
            # Like production, a key of its own (a repository key stops a served process).
            "DJANGO_SECRET_KEY": SERVICE_SECRET_KEY,
            "LOG_LEVEL": "INFO",
            "PYTHONUNBUFFERED": "1",
            "WHITENOISE_AUTOREFRESH": "false",
            "RH_SCORE_RECORD_IN_BACKGROUND": "true",
            "RH_SCORE_REVIEW_SAMPLE_RATE": "0",
        }
    )
    env.update(extra)
    return env


def django_test_database_url() -> str:
    """The URL of pytest-django's test database, for subprocesses (PostgreSQL only)."""
    from django.db import connection

    cfg = connection.settings_dict
    if cfg["ENGINE"] != "django.db.backends.postgresql":
        pytest.skip("the fault tests need PostgreSQL (run with DATABASE_URL, as `make test` does)")
    password = f":{cfg['PASSWORD']}" if cfg.get("PASSWORD") else ""
    host, port = cfg.get("HOST") or HOST, cfg.get("PORT") or 5432
    return f"postgres://{cfg.get('USER') or 'postgres'}{password}@{host}:{port}/{cfg['NAME']}"


def _kill_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)


def stop_group(proc: subprocess.Popen[bytes], timeout: float = 20) -> None:
    """SIGTERM the process group (started with start_new_session), SIGKILL if it lingers."""
    if proc.poll() is None:
        _kill_group(proc, signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc, signal.SIGKILL)
            proc.wait(timeout=10)
    else:  # the leader is gone; children (a pool, gunicorn workers) may not be
        _kill_group(proc, signal.SIGKILL)


def children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                stat = (entry / "stat").read_text()
                if int(stat[stat.rindex(")") + 2 :].split()[1]) == pid:
                    found.append(int(entry.name))
    return found


# --- Redis ---------------------------------------------------------------------------------------


class RedisServer:
    """``redis-server`` without persistence on a free port; stop() and start() keep the port."""

    def __init__(self, binary: str) -> None:
        self.binary = binary
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    def url(self, db: int = 0) -> str:
        return f"redis://{HOST}:{self.port}/{db}"

    def client(self) -> Any:
        import redis

        return redis.Redis(host=HOST, port=self.port, socket_connect_timeout=1)

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", HOST, "--save", "",
             "--appendonly", "no"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip

        def answers() -> bool:
            with contextlib.suppress(Exception):
                return bool(self.client().ping())
            return False

        if not wait_until(answers, 10):
            raise RuntimeError(f"redis-server did not start on port {self.port}")

    def stop(self) -> None:
        if self.proc is not None:
            stop_group(self.proc)
            self.proc = None


# --- PostgreSQL ----------------------------------------------------------------------------------


def postgres_bindir() -> Path | None:
    """Where initdb and pg_ctl are: pg_config's bindir, PATH, then Debian's versioned dirs."""
    candidates: list[Path] = []
    if pg_config := shutil.which("pg_config"):
        out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, check=False)
        if out.returncode == 0:
            candidates.append(Path(out.stdout.strip()))
    if pg_ctl := shutil.which("pg_ctl"):
        candidates.append(Path(pg_ctl).resolve().parent)
    candidates += sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)
    for candidate in candidates:
        if all((candidate / name).is_file() for name in ("initdb", "pg_ctl", "postgres")):
            return candidate
    return None


class PostgresServer:
    """A throw-away cluster (trust auth, no fsync) that tests may stop and restart at will."""

    def __init__(self, bindir: Path, datadir: Path, run_as: list[str]) -> None:
        self.bindir = bindir
        self.datadir = datadir
        self.run_as = run_as
        self.port = free_port()
        self.log = datadir.parent / "postgres.log"

    def _run(self, tool: str, *args: str, timeout: float = 60) -> None:
        out = subprocess.run(
            [*self.run_as, str(self.bindir / tool), *args],
            capture_output=True, text=True, timeout=timeout, check=False,
        )  # fmt: skip
        if out.returncode != 0:
            raise RuntimeError(f"{tool} {' '.join(args)} failed:\n{out.stdout}\n{out.stderr}")

    def init(self) -> None:
        self._run("initdb", "-D", str(self.datadir), "-U", "postgres", "--auth=trust",
                  "-E", "UTF8", "--no-sync")  # fmt: skip

    def start(self) -> None:
        options = (
            f"-p {self.port} -c listen_addresses={HOST} -k {self.datadir} -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=60"
        )
        self._run("pg_ctl", "-D", str(self.datadir), "-l", str(self.log), "-o", options,
                  "-w", "-t", "30", "start")  # fmt: skip

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.datadir), "-m", mode, "-w", "-t", "30", "stop")

    def url(self, name: str) -> str:
        return f"postgres://postgres@{HOST}:{self.port}/{name}"

    def createdb(self, name: str) -> None:
        self._run("createdb", "-h", HOST, "-p", str(self.port), "-U", "postgres", name)


# --- Celery workers and gunicorn --------------------------------------------------------------


class Worker:
    """``celery worker`` (prefork, one pool process) in its own process group."""

    def __init__(self, env: dict[str, str], queues: str, log: Path) -> None:
        self.env, self.queues, self.log = env, queues, log
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 60) -> None:
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "rewardhub", "worker", "-Q", self.queues,
                 "--concurrency", "1", "--pool", "prefork", "-n", f"f{uuid.uuid4().hex[:8]}@%h",
                 "--without-gossip", "--without-mingle", "--without-heartbeat", "-l", "info"],
                cwd=ROOT, env=self.env, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        ready = self.log_text().count(" ready.")
        if not wait_until(lambda: self.log_text().count(" ready.") > ready, timeout, 0.1):
            raise RuntimeError(f"the worker did not start:\n{self.log_text()[-3000:]}")

    def pool_pids(self) -> list[int]:
        assert self.proc is not None
        return children_of(self.proc.pid)

    def kill(self) -> None:
        """kill -9 the whole worker (main process and pool), as a machine crash would."""
        assert self.proc is not None
        _kill_group(self.proc, signal.SIGKILL)
        self.proc.wait(timeout=10)
        self.proc = None

    def stop(self) -> None:
        if self.proc is not None:
            stop_group(self.proc)
            self.proc = None

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


class Gunicorn:
    """The API on a free port: the one place the tests start gunicorn.

    ``make_serve=True`` starts it as ``make serve`` does (``-c python:rewardhub.gunicorn_conf``,
    configured by the ``RH_*`` variables in ``env``, with ``RH_BIND`` and ``RH_WEB_WORKERS`` set
    here); otherwise with gthread workers that shed load and the given ``threads``, as the fault
    tests run it. It answers /healthz before the constructor returns (``probe_headers`` go with
    that probe: production settings redirect a request that did not come through TLS)."""

    def __init__(
        self,
        env: dict[str, str],
        log: Path,
        workers: int = 2,
        threads: int = 2,
        *,
        make_serve: bool = False,
        probe_headers: dict[str, str] | None = None,
    ) -> None:
        self.log = log
        self.port = free_port()
        if make_serve:
            self.env = {**env, "RH_BIND": f"{HOST}:{self.port}", "RH_WEB_WORKERS": str(workers)}
            options = ["-c", "python:rewardhub.gunicorn_conf"]
        else:
            self.env = env
            options = [
                "--bind", f"{HOST}:{self.port}", "--workers", str(workers),
                "--threads", str(threads),
                "--worker-class", "rewardhub.gunicorn_workers.SheddingThreadWorker",
                "--timeout", "60", "--graceful-timeout", "5",
            ]  # fmt: skip
        with log.open("ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "gunicorn", "rewardhub.wsgi:application", *options],
                cwd=ROOT, env=self.env, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip

        def up() -> bool:
            if self.proc.poll() is not None:
                raise RuntimeError(f"gunicorn exited:\n{self.log_text()[-3000:]}")
            with contextlib.suppress(OSError, http.client.HTTPException):
                return self.request("GET", "/healthz", timeout=2, headers=probe_headers)[0] == 200
            return False

        try:
            if not wait_until(up, 60, 0.2):
                raise RuntimeError(f"gunicorn did not answer /healthz:\n{self.log_text()[-3000:]}")
        except BaseException:
            self.stop()
            raise

    def __enter__(self) -> Gunicorn:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        key: str = "",
        timeout: float = 30,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, dict[str, str], Any]:
        """One request on a new connection: (status, headers, JSON body or None)."""
        conn = http.client.HTTPConnection(HOST, self.port, timeout=timeout)
        try:
            sent = {"Content-Type": "application/json", **(headers or {})}
            if key:
                sent["Authorization"] = f"Bearer {key}"
            conn.request(method, path, body=None if body is None else json.dumps(body),
                         headers=sent)  # fmt: skip
            response = conn.getresponse()
            raw = response.read()
            try:
                parsed = json.loads(raw) if raw else None
            except ValueError:
                parsed = None
            return response.status, {k.lower(): v for k, v in response.getheaders()}, parsed
        finally:
            conn.close()

    def worker_pids(self) -> list[int]:
        return children_of(self.proc.pid)

    def stop(self) -> None:
        stop_group(self.proc)

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""
