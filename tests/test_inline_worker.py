"""The shipped worker classes that serve one request at a time per process (inline: keep-alive
on gthread's loop; sync: a connection per request) shed what waited too long, or what has too
many connections behind it, with a quick 503 + Retry-After, reading both from the kernel."""

from __future__ import annotations

import http.client
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from rewardhub.gunicorn_workers import accept_queue_depth, request_wait
from tests.fault.servers import HOST, free_port, stop_group, wait_until

ROOT = Path(__file__).resolve().parent.parent
CLASSES = {
    "inline": "rewardhub.gunicorn_workers.SheddingInlineWorker",
    "sync": "rewardhub.gunicorn_workers.SheddingSyncWorker",
}


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Callable[..., int]]:
    procs: list[subprocess.Popen[bytes]] = []

    def run(kind: str, workers: int = 1, **env: str) -> int:
        port = free_port()
        with (tmp_path / f"{kind}-{port}.log").open("wb") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "gunicorn", "tests.slow_wsgi:application",
                 "--bind", f"{HOST}:{port}", "--workers", str(workers),
                 "--worker-class", CLASSES[kind],
                 "--timeout", "30", "--graceful-timeout", "2"],
                cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                env={"PATH": "", "PYTHONPATH": str(ROOT), "RH_CLOSE_AFTER_SECONDS": "0.15", **env},
            )  # fmt: skip
        procs.append(proc)

        def up() -> bool:
            try:
                return get(port, 0)[0] == 200
            except OSError:
                return False

        assert wait_until(up, 30, 0.1)
        return port

    yield run
    for proc in procs:
        stop_group(proc)


def get(port: int, ms: int, conn: http.client.HTTPConnection | None = None) -> tuple[int, dict]:
    own = conn is None
    conn = conn or http.client.HTTPConnection(HOST, port, timeout=10)
    try:
        conn.request("GET", f"/?ms={ms}")
        response = conn.getresponse()
        response.read()
        return response.status, {k.lower(): v for k, v in response.getheaders()}
    finally:
        if own:
            conn.close()


def test_kernel_figures() -> None:
    import socket

    with socket.socket() as listener:
        listener.bind((HOST, 0))
        listener.listen(16)
        clients = [socket.create_connection(listener.getsockname()) for _ in range(3)]
        for c in clients:
            c.sendall(b"GET / HTTP/1.1\r\n\r\n")
        time.sleep(0.25)
        assert accept_queue_depth(listener) == 3
        accepted, _ = listener.accept()
        wait = request_wait(accepted)
        assert wait is not None and 0.2 <= wait < 2
        assert accept_queue_depth(listener) == 2
        accepted.close()
        for c in clients:
            c.close()


def test_found_busy_is_read_from_the_threads_own_record() -> None:
    """Only a wait for another connection's request, past one kernel tick, counts as busy:
    a scheduler delay on an idle process or the client's own previous request does not."""
    from rewardhub.gunicorn_workers import SheddingInlineWorker

    worker = SheddingInlineWorker.__new__(SheddingInlineWorker)
    ours, other = object(), object()
    tick = SheddingInlineWorker.KERNEL_TICK
    busy = SheddingInlineWorker.CLOSE_AFTER_BUSY
    now = time.monotonic()
    # The thread served another connection until 50 ms ago; our request arrived after that,
    # then waited 40 ms for a loaded machine's scheduler: not busy.
    worker._last_conn, worker._last_done = other, now - 0.05
    assert not worker._waited_for_others(ours, 0.04)
    # It arrived 100 ms ago, while the other connection's request ran for 50 ms more: busy.
    assert worker._waited_for_others(ours, 0.1)
    # A reading one tick long with the other request done just after: within the kernel's
    # resolution, so not believed.
    worker._last_done = time.monotonic() - 0.0005
    assert not worker._waited_for_others(ours, tick)
    assert worker._waited_for_others(ours, tick + busy + 0.01)
    # The connection the thread served last: its client sent this after reading the answer.
    worker._last_conn = ours
    assert not worker._waited_for_others(ours, 0.1)
    assert not worker._waited_for_others(other, None)


def pid_of(conn: http.client.HTTPConnection) -> str:
    """The worker serving this keep-alive connection (the app answers its process id)."""
    conn.request("GET", "/?ms=0")
    response = conn.getresponse()
    return response.read().decode()


def on_worker(port: int, pid: str, same: bool = True) -> http.client.HTTPConnection:
    """A keep-alive connection served by worker ``pid`` (or, ``same=False``, by another)."""
    for _ in range(200):
        conn = http.client.HTTPConnection(HOST, port, timeout=10)
        if (pid_of(conn) == pid) == same:
            return conn
        conn.close()
    raise AssertionError(f"no connection landed {'on' if same else 'off'} worker {pid}")


def test_inline_keeps_quick_connections_alive(start: Callable[..., int]) -> None:
    port = start("inline", workers=2)
    conn = http.client.HTTPConnection(HOST, port, timeout=10)
    assert get(port, 0, conn)[1]["connection"] == "keep-alive"
    local = conn.sock.getsockname()
    assert get(port, 0, conn)[0] == 200 and conn.sock.getsockname() == local
    # slow, and the other worker is idle: the client moves on
    assert get(port, 300, conn)[1]["connection"] == "close"
    conn.close()


def test_one_worker_keeps_even_slow_connections(start: Callable[..., int]) -> None:
    """With no other worker to move to, closing would only cost the client a reconnect."""
    port = start("inline")
    conn = http.client.HTTPConnection(HOST, port, timeout=10)
    assert get(port, 300, conn)[1]["connection"] == "keep-alive"
    conn.close()


def test_the_board_tells_whether_another_worker_is_idle() -> None:
    from rewardhub.gunicorn_workers import WorkerBoard

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    board = WorkerBoard()
    ours = board.join(1)
    assert not board.another_is_idle(ours)  # alone
    board._ints[2 * 2] = gone.pid  # a worker that has exited: not counted
    assert not board.another_is_idle(ours)
    board._ints[2 * 3] = os.getppid()  # a live one (this test's parent), idle
    assert board.another_is_idle(ours)
    board.set_busy(3, True)
    assert not board.another_is_idle(ours)
    board.set_busy(3, False)
    assert board.another_is_idle(ours)
    board.leave(3)
    assert not board.another_is_idle(ours)
    assert board.join(1 + WorkerBoard.SLOTS) == ours  # slots by age, wrapping


@pytest.mark.parametrize("kind", ["inline", "sync"])
def test_a_request_that_waited_too_long_is_shed_quickly(start, kind: str) -> None:  # type: ignore[no-untyped-def]
    port = start(kind, RH_SHED_QUEUE_SECONDS="0.3")
    slow = threading.Thread(target=get, args=(port, 900))
    slow.start()
    time.sleep(0.1)  # the one process is busy now
    t0 = time.monotonic()
    status, headers = get(port, 0)
    took = time.monotonic() - t0
    slow.join()
    assert status == 503 and headers["retry-after"] == "1"
    assert took < 1.5  # answered as soon as the process got to it, without running the app
    assert get(port, 0)[0] == 200  # and once idle, served again


@pytest.mark.parametrize("kind", ["inline", "sync"])
def test_too_many_waiting_behind_is_shed(start, kind: str) -> None:  # type: ignore[no-untyped-def]
    port = start(kind, RH_SHED_MAX_QUEUE="2")
    slow = threading.Thread(target=get, args=(port, 700))
    slow.start()
    time.sleep(0.1)
    results: list[int] = []

    def one() -> None:
        results.append(get(port, 0)[0])

    waiting = [threading.Thread(target=one) for _ in range(5)]
    for t in waiting:
        t.start()
        time.sleep(0.02)  # queue in order
    for t in [slow, *waiting]:
        t.join()
    # The first three had two or more behind them when accepted; the last two were served.
    assert sorted(results) == [200, 200, 503, 503, 503]


def test_inline_closes_a_connection_whose_request_found_the_process_busy(start) -> None:  # type: ignore[no-untyped-def]
    port = start("inline", workers=2)
    quick = http.client.HTTPConnection(HOST, port, timeout=10)
    busy_pid = pid_of(quick)  # connected, idle
    slow_conn = on_worker(port, busy_pid)
    slow = threading.Thread(target=get, args=(port, 300, slow_conn))
    slow.start()
    time.sleep(0.1)
    # It waited for its worker's one thread while the other worker was idle: the client
    # should take its next request there.
    assert get(port, 0, quick)[1]["connection"] == "close"
    slow.join()
    quick.close()
    slow_conn.close()


def test_inline_keeps_connections_when_every_worker_is_busy(start) -> None:  # type: ignore[no-untyped-def]
    """More client connections than workers, all busy: moving a client gains nothing, so its
    connection stays (closing each one after each request cost a third of the throughput)."""
    port = start("inline", workers=2)
    quick = http.client.HTTPConnection(HOST, port, timeout=10)
    busy_pid = pid_of(quick)
    here, there = on_worker(port, busy_pid), on_worker(port, busy_pid, same=False)
    slow = [
        threading.Thread(target=get, args=(port, 300, here)),
        threading.Thread(target=get, args=(port, 3000, there)),  # busy well past the check
    ]
    for thread in slow:
        thread.start()
    time.sleep(0.1)
    assert get(port, 0, quick)[1]["connection"] == "keep-alive"
    for thread in slow:
        thread.join()
    for conn in (quick, here, there):
        conn.close()


def test_a_request_that_arrived_while_the_process_was_busy_is_served_not_cut(
    start: Callable[..., int],
) -> None:
    """A connection accepted before its request arrived waits in the poller for gthread's
    keep-alive time (2 s). If the one thread was busy longer than that and the request came
    meanwhile, the connection must be served, not closed with the request unread (a reset:
    a burst's clients saw hundreds)."""
    import socket

    port = start("inline")
    early = socket.create_connection((HOST, port), timeout=10)  # accepted, nothing sent yet
    time.sleep(0.3)
    busy = threading.Thread(target=get, args=(port, 3000))  # the thread is busy for 3 s
    busy.start()
    time.sleep(0.3)
    early.sendall(f"GET /?ms=0 HTTP/1.1\r\nHost: {HOST}\r\nConnection: close\r\n\r\n".encode())
    try:
        answer = early.recv(4096)
    except ConnectionResetError:
        answer = b"reset"
    busy.join()
    early.close()
    assert answer.startswith(b"HTTP/1.1 200"), answer[:80]
