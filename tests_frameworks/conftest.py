"""The real frameworks' code against the live service (``make test-frameworks``).

Runs in its own virtualenv (var/frameworks-venv: TRL, verl and OpenRLHF at the versions
README "Trainer bridge" names, none of their GPU stack), never in the service's. The service is
the service's own gunicorn (``.venv/bin/gunicorn -c python:rewardhub.gunicorn_conf``), started
here on 127.0.0.1 against the database ``scripts/frameworks_check.py`` prepared; tests stop and
restart it to check the fallbacks. Records and review are checked over the REST API.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import secrets
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
HOST = "127.0.0.1"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


# The service runs with DEBUG off, which refuses the repository's development key.
SERVICE_KEY = secrets.token_urlsafe(50)


class Service:
    """gunicorn of the service's own virtualenv, in its own process group."""

    def __init__(self, tmp: Path) -> None:
        self.port = _free_port()
        self.url = f"http://{HOST}:{self.port}"
        self.key = os.environ["RH_FW_SCORE_KEY"]
        self.read_key = os.environ["RH_FW_READ_KEY"]
        self.model = os.environ.get("RH_FW_REWARD_MODEL", "swe-bugfix-default")
        self.log = tmp / "gunicorn.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.env = {
            k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHON"))
        }
        self.env.update(
            {
                "DJANGO_SETTINGS_MODULE": "rewardhub.settings",
                "DJANGO_SECRET_KEY": os.environ.get("DJANGO_SECRET_KEY", SERVICE_KEY),
                "DATABASE_URL": os.environ["RH_FW_DATABASE_URL"],
                "RH_BIND": f"{HOST}:{self.port}",
                "RH_SCORE_REVIEW_SAMPLE_RATE": "1",  # every rollout reaches review
                "RH_SCORE_RECORD_FLUSH_SECONDS": "0.2",
                "PYTHONUNBUFFERED": "1",
            }
        )

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                [str(ROOT / ".venv" / "bin" / "gunicorn"), "rewardhub.wsgi:application",
                 "-c", "python:rewardhub.gunicorn_conf"],
                cwd=ROOT, env=self.env, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        deadline = time.monotonic() + 90
        while self.get("/healthz")[0] != 200:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"gunicorn did not start:\n{self.log.read_text()[-3000:]}")
            time.sleep(0.2)

    def stop(self) -> None:
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)
        self.proc = None

    def get(self, path: str, key: str | None = None) -> tuple[int, Any]:
        request = urllib.request.Request(self.url + path)
        if key:
            request.add_header("Authorization", f"Bearer {key}")
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as exc:
            return exc.code, None
        except OSError:
            return 0, None

    def records(self, run: str, expected: int = 1, wait: float = 15.0) -> list[dict[str, Any]]:
        """Every scoring record of ``run`` (the REST stream), waiting for the background writer
        until at least ``expected`` are there."""
        deadline = time.monotonic() + wait
        while True:
            rows: list[dict[str, Any]] = []
            path: str | None = f"/api/v1/scorings/?run={run}"
            while path:
                status, body = self.get(path, self.read_key)
                assert status == 200, (status, body)
                rows += body["results"]
                path = body["next"].replace(self.url, "") if body.get("next") else None
            if len(rows) >= expected or time.monotonic() > deadline:
                return rows
            time.sleep(0.3)

    def reviewed(self, records: list[dict[str, Any]], wait: float = 30.0) -> set[str]:
        """The scoring ids among ``records`` whose rollout is stored for review. A routed
        rollout is named ``scoring-<id>`` after the record that routed it, and the same content
        (digest) is imported once: a record counts when any record of its digest was routed."""
        groups: dict[str, list[str]] = {}
        for r in records:
            groups.setdefault(r["trajectory_digest"], []).append(r["scoring_id"])
        deadline = time.monotonic() + wait
        found: set[str] = set()
        while True:
            for ids in groups.values():
                if ids[0] in found:
                    continue
                for sid in ids:
                    body = self.get(f"/api/v1/trajectories/?external_id=scoring-{sid}",
                                    self.read_key)[1]  # fmt: skip
                    if body and body.get("results"):
                        found |= set(ids)
                        break
            if found == {r["scoring_id"] for r in records} or time.monotonic() > deadline:
                return found
            time.sleep(0.5)


@pytest.fixture(scope="session")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    svc = Service(tmp_path_factory.mktemp("service"))
    svc.start()
    try:
        yield svc
    finally:
        svc.stop()
        text = svc.log.read_text(errors="replace")
        for secret in (svc.key, svc.read_key):
            assert secret not in text, "an API key reached gunicorn's log"


@pytest.fixture
def hub_env(service: Service, monkeypatch: pytest.MonkeyPatch) -> Service:
    monkeypatch.setenv("REWARDHUB_URL", service.url)
    monkeypatch.setenv("REWARDHUB_API_KEY", service.key)
    monkeypatch.setenv("REWARDHUB_REWARD_MODEL", service.model)
    monkeypatch.setenv("REWARDHUB_MAX_RETRIES", "1")
    monkeypatch.setenv("REWARDHUB_TIMEOUT", "10")
    from trainer_bridge import _runtime

    _runtime.reset()
    return service


@dataclasses.dataclass
class Row:
    """One framework version's tally over the run, for the closing table."""

    samples: int = 0
    scored: int = 0
    tied: int = 0
    flagged: int = 0
    routed: int = 0
    restart: list[str] = dataclasses.field(default_factory=list)


TABLE: dict[tuple[str, str], Row] = {}
TIED_TO: dict[tuple[str, str], str] = {}


def report(
    framework: str,
    version: str,
    *,
    samples: int = 0,
    scored: int = 0,
    records: list[dict[str, Any]] | None = None,
    step: bool = True,
    routed: int = 0,
    restart: str = "",
) -> None:
    """Add to ``framework`` ``version``'s row: samples sent, samples that got a real reward,
    records carrying the run (and the step, when ``step``) and how many are flagged unsafe,
    records whose rollout reached review (every one: the service samples all of them here),
    and what a restart did."""
    row = TABLE.setdefault((framework, version), Row())
    row.samples += samples
    row.scored += scored
    for r in records or []:
        row.tied += bool(r["run"]) and (r["step"] is not None or not step)
        row.flagged += bool(r["unsafe"])
    if records is not None:
        TIED_TO[(framework, version)] = "run, step" if step else "run (no step sent)"
    row.routed += routed
    if restart:
        row.restart.append(restart)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """The per-framework table (README "Trainer bridge"), from what the tests saw."""
    if not TABLE:
        return
    write = terminalreporter.write_line
    write("")
    write(
        "| framework | version | samples | scored | records tied to | tied | flagged "
        "| routed to review | restart |"
    )
    write("| --- | --- | ---: | ---: | --- | ---: | ---: | ---: | --- |")
    for (framework, version), row in sorted(TABLE.items()):
        write(
            f"| {framework} | {version} | {row.samples} | {row.scored} | "
            f"{TIED_TO.get((framework, version), '-')} | {row.tied} | {row.flagged} | "
            f"{row.routed} | "
            f"{'; '.join(row.restart) or '-'} |"
        )
