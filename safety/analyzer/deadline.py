"""A cooperative time bound per analysed command: no signals, no threads.

``Analyzer.analyze`` opens one per command (``bounded``); the loops that can run long (bashlex's
tokenizer, the resolver's walk, reading effects, matching rules) call ``tick`` or ``check``,
which raise ``Expired`` once the bound has passed. The engine turns that into an
``analyzer.too-complex`` review. An exception is raised only at those calls, in the analyzing
thread's own code, so it can never land inside a garbage-collector callback, a ``finally`` of
another library or a thread that did not ask for it, as a timer signal could; and it works in
every thread, not only the main one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager


class Expired(Exception):
    """The current time bound has passed."""


class _Local(threading.local):
    at: float | None = None  # monotonic time the innermost bound ends; None: no bound
    ticks: int = 0


_local = _Local()
_TICK_MASK = 63  # ``tick`` reads the clock once per 64 calls


def check() -> None:
    """Raise ``Expired`` when the current bound has passed."""
    at = _local.at
    if at is not None and time.monotonic() > at:
        raise Expired


def passed() -> bool:
    """Has the current bound passed? (For code that stops by itself, like tree-sitter.)"""
    at = _local.at
    return at is not None and time.monotonic() > at


def active() -> bool:
    """Is a bound set in this thread?"""
    return _local.at is not None


def tick() -> None:
    """``check`` once per 64 calls: cheap enough for a per-character loop."""
    _local.ticks += 1
    if not _local.ticks & _TICK_MASK:
        check()


@contextmanager
def bounded(seconds: float) -> Iterator[None]:
    """Bound the block to ``seconds`` (0 or less: no new bound); an enclosing bound that ends
    sooner still holds."""
    outer = _local.at
    if seconds > 0:
        end = time.monotonic() + seconds
        _local.at = end if outer is None else min(outer, end)
    try:
        yield
    finally:
        _local.at = outer
