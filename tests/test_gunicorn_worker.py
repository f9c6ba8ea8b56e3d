"""The production gunicorn worker (SheddingThreadWorker) closes keep-alive connections after
slow requests, so a client's next heavy request can reach a free worker; quick ones keep theirs."""

from __future__ import annotations

import http.client
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fault.servers import HOST, free_port, stop_group, wait_until

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def server(tmp_path: Path) -> Iterator[int]:
    import subprocess

    port = free_port()
    log = (tmp_path / "gunicorn.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "tests.slow_wsgi:application",
         "--bind", f"{HOST}:{port}", "--workers", "1", "--threads", "2",
         "--worker-class", "rewardhub.gunicorn_workers.SheddingThreadWorker",
         "--timeout", "30", "--graceful-timeout", "2"],
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        env={"PATH": "", "RH_CLOSE_AFTER_SECONDS": "0.15", "PYTHONPATH": str(ROOT)},
    )  # fmt: skip

    def up() -> bool:
        conn = http.client.HTTPConnection(HOST, port, timeout=2)
        try:
            conn.request("GET", "/")
            return conn.getresponse().status == 200
        except OSError:
            return False
        finally:
            conn.close()

    try:
        assert wait_until(up, 30, 0.1), (tmp_path / "gunicorn.log").read_text()
        yield port
    finally:
        stop_group(proc)
        log.close()


def get(conn: http.client.HTTPConnection, ms: int) -> tuple[str, str | None]:
    conn.request("GET", f"/?ms={ms}")
    response = conn.getresponse()
    return response.read().decode(), response.getheader("Connection")


def test_quick_requests_keep_their_connection_and_slow_ones_close_it(server: int) -> None:
    conn = http.client.HTTPConnection(HOST, server, timeout=10)
    pid, connection = get(conn, 0)
    assert connection == "keep-alive"
    local = conn.sock.getsockname()
    assert get(conn, 10) == (pid, "keep-alive")
    assert conn.sock.getsockname() == local  # the same TCP connection served both
    assert get(conn, 300) == (pid, "close")
    assert conn.sock is None  # http.client closed it, as the header said
    # the next request opens a new connection, which works as before
    assert get(conn, 0) == (pid, "keep-alive")
    assert conn.sock.getsockname() != local
    conn.close()


def test_a_quick_request_that_waited_for_a_thread_closes_too(server: int) -> None:
    import threading

    slow = [http.client.HTTPConnection(HOST, server, timeout=10) for _ in range(2)]
    threads = [threading.Thread(target=get, args=(conn, 400)) for conn in slow]
    for thread in threads:
        thread.start()
    wait_until(lambda: False, 0.15)  # both threads of the worker are busy now
    quick = http.client.HTTPConnection(HOST, server, timeout=10)
    assert get(quick, 0)[1] == "close"  # it queued behind them: on a busy worker
    for thread in threads:
        thread.join()
    assert get(quick, 0)[1] == "keep-alive"
    for conn in [*slow, quick]:
        conn.close()
