"""Health probes answer within a second when PostgreSQL is unreachable (issue #22, item 12).

Each runs in a fresh process whose settings point at a closed port (a stopped server: refused)
or at a port that accepts connections and never answers (a hung server or a lost network: the
connect timeout), with the connection pool on (as served): load balancers must learn of the
outage at once, not after a pool or connect timeout."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

_PROBE = """
import json, os, time
import django
django.setup()
from django.test import Client
client, out = Client(), []
client.get("/no-such-page/")  # loads the URLs and middleware: first-request cost, no database
for path in ("/healthz", "/readyz", "/healthz", "/readyz"):
    start = time.monotonic()
    response = client.get(path)
    out.append([path, response.status_code, time.monotonic() - start, response.json()])
print(json.dumps(out))
"""


@pytest.fixture(params=["refused", "silent"])
def unreachable_port(request: pytest.FixtureRequest) -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
        if request.param == "silent":
            # The kernel completes each handshake into the backlog; nobody ever reads the
            # startup message, so a client waits for its connect timeout (5 s by default).
            sock.listen(64)
            yield port
            return
    yield port  # bound, then closed: nothing listens there now


def test_probes_answer_within_a_second_when_the_database_is_unreachable(
    unreachable_port: int,
) -> None:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_", "CELERY_"))}
    env = {
        **clean,
        "DJANGO_SETTINGS_MODULE": "rewardhub.settings",
        "DJANGO_ALLOWED_HOSTS": "testserver",
        "DATABASE_URL": f"postgres://postgres@127.0.0.1:{unreachable_port}/rewardhub",
        "DATABASE_POOL": "true",
    }
    run = subprocess.run(
        [sys.executable, "-c", _PROBE], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    results = json.loads(run.stdout.strip().splitlines()[-1])
    for path, status, seconds, body in results:
        assert status == 503, (path, body)
        assert seconds < 1.0, f"{path} took {seconds:.2f} s"
    ready = results[1][3]
    assert ready["status"] == "not ready" and ready["checks"]["database"] == "unavailable"
