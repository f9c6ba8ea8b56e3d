"""gunicorn worker and logger classes (``rewardhub/gunicorn_conf.py`` selects them).

- ``RedactingLogger`` (``--logger-class``): gunicorn's own access and error logs with every
  API key taken out, including the OpenRLHF URL's key segment (C3 says it is never logged).
- ``SheddingInlineWorker``: gthread's event loop and keep-alive with each request handled
  inline by the one thread (no thread pool), shedding by the kernel's own queue figures: the
  run mode ``make serve`` ships (the fastest ``bench/bench_score_http.py`` finds).
- ``SheddingSyncWorker``: gunicorn's sync worker (one request per connection) shedding alike.
- ``SheddingThreadWorker``: gthread with a bounded queue in front of its threads.
"""

from __future__ import annotations

import contextlib
import errno
import mmap
import os
import socket
import struct
import threading
import time
from collections.abc import Callable
from concurrent import futures
from typing import Any

from gunicorn import http, util
from gunicorn.glogging import Logger
from gunicorn.workers.gthread import _DEFER, ThreadWorker
from gunicorn.workers.sync import SyncWorker

from rewardhub.load_shedding import SHED, queue_wait, set_queue_wait
from rewardhub.logging import RedactApiKeysFilter


class RedactingLogger(Logger):
    """gunicorn's logger with the Django logs' redacting filter on its access and error logs.

    The filter redacts each formatted line, so whatever ``--access-logformat`` prints (the
    request line, the path, a header such as ``Authorization``, the environ) and whatever the
    error log quotes (a failed request's URI, request lines at ``--log-level debug``) loses
    every API key, including the OpenRLHF URL's key segment (C3: it is never logged).
    """

    def setup(self, cfg: Any) -> None:
        super().setup(cfg)
        for log in (self.error_log, self.access_log):
            if not any(isinstance(f, RedactApiKeysFilter) for f in log.filters):
                log.addFilter(RedactApiKeysFilter())


# Linux's struct tcp_info: u8 x 8, then u32 fields; for a listening socket tcpi_unacked holds
# the accept queue's length, and tcpi_last_data_recv is the ms since data last arrived.
_TCP_INFO = getattr(socket, "TCP_INFO", None)
_TCP_INFO_LEN = 104
_UNACKED, _LAST_DATA_RECV = 24, 52


def _tcp_info_u32(sock: Any, offset: int) -> int | None:
    if _TCP_INFO is None:
        return None
    try:
        info = sock.getsockopt(socket.IPPROTO_TCP, _TCP_INFO, _TCP_INFO_LEN)
    except (OSError, AttributeError):
        return None
    if len(info) < offset + 4:
        return None
    value: int = struct.unpack_from("=I", info, offset)[0]
    return value


def accept_queue_depth(listener: Any) -> int | None:
    """Connections waiting in the listening socket's accept queue (all workers share it);
    None where the kernel does not say (not Linux, not TCP)."""
    return _tcp_info_u32(listener, _UNACKED)


def request_wait(client: Any) -> float | None:
    """Seconds since the accepted connection's request arrived: how long it waited in the
    accept queue (a client sends its request as soon as it connects). None if unknown."""
    ms = _tcp_info_u32(client, _LAST_DATA_RECV)
    return None if ms is None else ms / 1000.0


class SheddingSyncWorker(SyncWorker):
    """gunicorn's sync worker with load shedding read from the kernel.

    Sync workers serve one request at a time and close each connection; waiting requests sit
    in the listening socket's accept queue, which every worker shares (``--backlog``). On each
    accept the worker reads from the kernel how long this request waited there
    (``request_wait``) and how many still wait behind it (``accept_queue_depth``); the WSGI
    wrapper (``rewardhub.load_shedding.LoadShedding``) answers 503 + ``Retry-After`` before
    Django runs when the wait is over ``RESILIENCE["SHED_QUEUE_SECONDS"]`` or when
    ``RESILIENCE["SHED_MAX_QUEUE"]`` connections wait. A refusal costs a tenth of a scoring,
    so under true overload the queue drains faster than it fills.
    """

    def accept(self, listener: Any) -> None:
        client, addr = listener.accept()
        client.setblocking(1)
        util.close_on_exec(client)
        wait = request_wait(client)
        max_queue = getattr(self.wsgi, "max_queue", 0)
        if max_queue:
            depth = accept_queue_depth(listener)
            if depth is not None and depth >= max_queue:
                wait = SHED
        set_queue_wait(wait)
        try:
            self.handle(listener, client, addr)
        finally:
            set_queue_wait(None)

    def handle(self, listener: Any, client: Any, addr: Any) -> None:
        # gunicorn's own, except the close: gunicorn's sync worker half-closes and then waits
        # for the client to close its side (up to 2 s), so each request held a worker for a
        # client round trip on top of its work: on a busy machine, where the client is slow
        # to be scheduled, that was most of a worker's time.
        req = None
        try:
            parser = http.get_parser(self.cfg, client, addr)
            req = next(parser)
            self.handle_request(listener, req, client, addr)
        except http.errors.NoMoreData as e:
            self.log.debug("Ignored premature client disconnection. %s", e)
        except StopIteration as e:
            self.log.debug("Closing connection. %s", e)
        except OSError as e:
            if e.errno not in (errno.EPIPE, errno.ECONNRESET, errno.ENOTCONN):
                self.log.exception("Socket error processing request.")
        except BaseException as e:
            self.handle_error(req, client, addr, e)
        finally:
            close_quickly(client)


class WorkerBoard:
    """Which workers of one gunicorn master are serving a request: a small shared memory block
    made in the master (this module is imported there before the fork) that every inline
    worker marks while it serves, so a worker can tell whether another one is idle.

    Closing a keep-alive connection to move its client helps only when another worker is free
    to take it: when every worker is busy (a loaded machine, more client connections than
    workers), closing each connection after each request only adds a TCP set-up to every
    request (``bench/bench_score_http.py`` measured the shipped worker at 0.66 to 0.70x of
    plain sync workers that way, and 1.30x with no closing at all)."""

    SLOTS = 256

    def __init__(self) -> None:
        # Two ints per slot: the worker's pid (0: free) and whether it serves a request now.
        self._memory = mmap.mmap(-1, self.SLOTS * 2 * 4)  # anonymous and shared across fork
        self._ints = memoryview(self._memory).cast("i")

    def join(self, age: int) -> int:
        """This process's slot, by gunicorn's worker age (a count of the workers the master
        has started, so live workers differ unless 256 were replaced while one lived on)."""
        slot = age % self.SLOTS
        self._ints[2 * slot], self._ints[2 * slot + 1] = os.getpid(), 0
        return slot

    def leave(self, slot: int) -> None:
        if slot >= 0:
            self._ints[2 * slot], self._ints[2 * slot + 1] = 0, 0

    def set_busy(self, slot: int, busy: bool) -> None:
        if slot >= 0:
            self._ints[2 * slot + 1] = int(busy)

    def another_is_idle(self, slot: int) -> bool:
        """Whether a live worker other than ``slot``'s is waiting for requests now."""
        for other in range(self.SLOTS):
            owner = self._ints[2 * other]
            if other != slot and owner and not self._ints[2 * other + 1] and _alive(owner):
                return True
        return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, owned by someone else
    return True


BOARD = WorkerBoard()


class SheddingInlineWorker(ThreadWorker):
    """gthread's event loop (keep-alive, deferred slow clients, graceful stop) with each
    request handled inline by the loop's own thread instead of a thread pool.

    One thread per process serves one request at a time, as a sync worker does, without a
    thread hand-off per request or threads contending for the GIL, and keeps connections alive,
    so a request costs no TCP set-up and fewer wake-ups (which a busy machine makes expensive).
    Shedding reads the kernel: before a request is handled, how long its bytes waited
    (``request_wait``); on accept, how many connections wait behind it
    (``accept_queue_depth``); ``LoadShedding`` answers 503 + ``Retry-After`` past
    ``SHED_QUEUE_SECONDS`` or ``SHED_MAX_QUEUE``. Keep-alive connections are closed after a
    slow request (``RH_CLOSE_AFTER_SECONDS``) or one that waited for another connection's,
    when another process is idle (``WorkerBoard``), so a client's connections spread over the
    processes. A new connection whose request has not arrived yet waits in the poller, never
    in the thread.
    """

    # A request that waited this long while the thread served other connections found the
    # process busy: its connection is closed after the answer, so the client's next request
    # can go to a process that is free (one thread per process makes keep-alive connections
    # piled on one process cost the most).
    CLOSE_AFTER_BUSY = 0.002
    # The kernel's wait reading (``request_wait``) counts whole clock ticks: 4 ms at the usual
    # server HZ=250, so a 1 ms wait can read 4 ms. Only an overlap past one tick is believed.
    KERNEL_TICK = 0.004

    _last_conn: Any = None  # the connection of the request the thread served last
    _last_done = 0.0  # when it finished (monotonic)
    _found_busy = False  # the request being served waited for another connection's
    _slot = -1  # this worker's slot on the board

    def init_process(self) -> None:
        self._slot = BOARD.join(self.age)
        super().init_process()

    def load_wsgi(self) -> None:
        super().load_wsgi()
        after = getattr(self.wsgi, "close_after_seconds", 0)
        if after and after > 0:
            self.wsgi = _CloseAfterSlow(
                self.wsgi,
                after,
                found_busy=lambda: self._found_busy,
                can_move=lambda: BOARD.another_is_idle(self._slot),
            )

    def handle_quit(self, sig: Any, frame: Any) -> None:
        BOARD.leave(self._slot)
        super().handle_quit(sig, frame)

    def _waited_for_others(self, conn: Any, wait: float | None) -> bool:
        """Whether this request arrived while the thread was serving another connection's,
        and waited at least ``CLOSE_AFTER_BUSY`` for it to finish.

        Read from the thread's own record, not from the wait alone: on a loaded machine the
        scheduler delays even an idle process by milliseconds, which says nothing about this
        process being the wrong one to talk to. A request on the connection the thread just
        served cannot have waited for it (its client sent it after reading the answer)."""
        if wait is None or wait == SHED or conn is self._last_conn:
            return False
        arrived = time.monotonic() - wait
        return self._last_done - arrived >= self.CLOSE_AFTER_BUSY + self.KERNEL_TICK

    def get_thread_pool(self) -> Any:
        return futures.ThreadPoolExecutor(max_workers=1)  # never used: requests run inline

    def accept(self, listener: Any) -> None:
        # Read before accepting: the queue still counts this connection, hence the "-1".
        max_queue = getattr(self.wsgi, "max_queue", 0)
        depth = accept_queue_depth(listener) if max_queue else None
        self._depth = depth if depth is not None and depth - 1 >= max_queue else None
        try:
            super().accept(listener)  # handles the request inline (enqueue_req)
        finally:
            self._depth = None

    def murder_pending(self) -> None:
        self._expire(self.pending_conns)

    def murder_keepalived(self, force: bool = False) -> None:
        if force:
            super().murder_keepalived(force=True)
        else:
            self._expire(self.keepalived_conns)

    def _expire(self, conns: Any) -> None:
        """gthread's expiry of connections waiting in the poller (``keepalive`` seconds),
        except one whose request has arrived: with one thread, a burst keeps the loop busy
        longer than that, and closing such a connection unread resets it. It is kept for the
        next turn of the loop, which serves it."""
        now = time.monotonic()
        kept = []
        while conns and conns[0].timeout <= now:
            conn = conns.popleft()
            if _has_data(conn.sock):
                kept.append(conn)
                continue
            with contextlib.suppress(OSError, KeyError, ValueError):
                self.poller.unregister(conn.sock)
            self.nr_conns -= 1
            conn.close()
        for conn in kept:
            conn.set_timeout()
            conns.append(conn)

    def enqueue_req(self, conn: Any) -> None:
        done: futures.Future[Any] = futures.Future()
        if not conn.initialized and not conn.data_ready and not conn.wait_for_data(0):
            done.set_result(_DEFER)  # no request yet: the poller waits for it, not the thread
        else:
            wait = SHED if getattr(self, "_depth", None) is not None else request_wait(conn.sock)
            self._depth = None
            self._found_busy = self._waited_for_others(conn, wait)
            set_queue_wait(wait)
            BOARD.set_busy(self._slot, True)
            try:
                done.set_result(self.handle(conn))
            except BaseException as exc:
                done.set_exception(exc)
            finally:
                BOARD.set_busy(self._slot, False)
                set_queue_wait(None)
                self._found_busy = False
                self._last_conn, self._last_done = conn, time.monotonic()
        self.finish_request(conn, done)


def _has_data(sock: Any) -> bool:
    """Whether ``sock`` has bytes to read (a request that arrived), without reading them."""
    try:
        return bool(sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT))
    except OSError:
        return False


def close_quickly(sock: Any) -> None:
    """Half-close, drain what the client sent and we did not read (so the kernel sends no RST
    that could cut the response), then close, without waiting for the client. The request
    was read whole (Django reads the body; a shed request's body is drained by
    ``LoadShedding``), so there is rarely anything left."""
    try:
        try:
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            return
        drained = 0
        while drained < 65536:
            try:
                data = sock.recv(65536, socket.MSG_DONTWAIT)
            except OSError:
                break
            if not data:
                break
            drained += len(data)
    finally:
        with contextlib.suppress(OSError):
            sock.close()


class _CloseAfterSlow:
    """Asks gunicorn to close a keep-alive connection after a slow request (``Connection: close``).

    gthread workers keep a client's connection for good: a trainer holding a few keep-alive
    connections to a pool of workers can find most of them on one worker, which then serves
    every batch on one core while the others idle (measured: half the batch throughput of
    fresh connections). Closing the connection after a request that took at least ``after``
    seconds, waiting for a thread included, makes the client reconnect, and a free worker is
    the likeliest to accept; a reconnect costs well under a millisecond, a tiny share of a
    request that slow.
    """

    def __init__(
        self,
        app: Any,
        after: float,
        found_busy: Callable[[], bool] | None = None,
        can_move: Callable[[], bool] | None = None,
    ) -> None:
        self.app = app
        self.after = after
        # also close when the worker says this request waited for others' (it is busy)
        self.found_busy = found_busy
        # close only when the client can find a free worker by reconnecting (None: always)
        self.can_move = can_move

    def __getattr__(self, name: str) -> Any:
        return getattr(self.app, name)  # max_queue and the like, read by the worker

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        # The wait for a thread counts too: a request that queued behind others is on a busy
        # worker, even if it was quick to serve.
        wait = queue_wait() or 0.0
        wait = 0.0 if wait == SHED else wait
        started = time.monotonic() - wait
        busy = self.found_busy is not None and self.found_busy()

        def start(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            response = getattr(start_response, "__self__", None)  # gunicorn's Response
            slow = busy or time.monotonic() - started >= self.after
            if slow and self.can_move is not None:
                slow = self.can_move()
            if slow and hasattr(response, "force_close"):
                response.force_close()
            return start_response(status, headers, exc_info)

        return self.app(environ, start)


class SheddingThreadWorker(ThreadWorker):
    """gunicorn's gthread worker with a bounded queue in front of its threads.

    A request is queued for the thread pool when its connection is accepted or becomes readable
    again (keep-alive). When ``max_queue`` requests already wait (``RESILIENCE["SHED_MAX_QUEUE"]``,
    read from the WSGI app, ``rewardhub.load_shedding.LoadShedding``), the request goes to a
    one-thread lane that only answers 503, so a burst costs a quick refusal instead of growing
    the queue. For the requests let in, the thread records how long they waited, and the WSGI
    wrapper sheds those that waited longer than ``RESILIENCE["SHED_QUEUE_SECONDS"]``.
    """

    def load_wsgi(self) -> None:
        super().load_wsgi()
        after = getattr(self.wsgi, "close_after_seconds", 0)
        if after and after > 0:
            self.wsgi = _CloseAfterSlow(self.wsgi, after)

    def init_process(self) -> None:
        self.shed_pool = futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="shed")
        self.waiting = 0
        self.waiting_lock = threading.Lock()
        super().init_process()

    def enqueue_req(self, conn: Any) -> None:
        conn.rh_queued_at = time.monotonic()
        max_queue = getattr(self.wsgi, "max_queue", 0)
        conn.rh_shed = bool(max_queue) and self.waiting >= max_queue
        if conn.rh_shed:
            fs = self.shed_pool.submit(self.handle, conn)
            fs.add_done_callback(
                lambda fut: self.method_queue.defer(self.finish_request, conn, fut)
            )
            return
        with self.waiting_lock:
            self.waiting += 1
        super().enqueue_req(conn)

    def handle(self, conn: Any) -> Any:
        shed = getattr(conn, "rh_shed", False)
        queued = getattr(conn, "rh_queued_at", None)
        if not shed and queued is not None:
            with self.waiting_lock:
                self.waiting -= 1
        set_queue_wait(SHED if shed else None if queued is None else time.monotonic() - queued)
        try:
            return super().handle(conn)
        finally:
            set_queue_wait(None)

    def handle_quit(self, sig: Any, frame: Any) -> None:
        self.shed_pool.shutdown(wait=False)
        super().handle_quit(sig, frame)
