"""Deadlines: how long the work of one request may take, checked where the work happens.

``with deadline(30):`` sets a deadline for everything the code inside does in this context
(threads a request runs in inherit it). Work that can run long checks it — the retry rounds
of a search, each page of fetched chunks, each batch of embeddings — and raises
:class:`DeadlineExceeded`; database statements are bounded by it too (PostgreSQL's
``statement_timeout`` is set to what is left, a SQLite statement is interrupted), so a
request past its deadline stops doing work instead of holding a worker. Outside a
``deadline`` block nothing is bounded (the CLI's ingest may take hours).

Optional work that can wait long (a language model's call) runs inside ``with
reserve(seconds):`` — an earlier deadline, ``seconds`` before the request's — so what must
follow it (the plain search, the answer without the model) always keeps that much time.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from ragspine.errors import BackendError

_DEADLINE: ContextVar[tuple[float, float] | None] = ContextVar("ragspine_deadline", default=None)  # (at, seconds)
_RESERVED: ContextVar[bool] = ContextVar("ragspine_deadline_reserved", default=False)  # inside a ``reserve`` block


class DeadlineExceeded(BackendError):
    """The work ran past its deadline (the service answers 504)."""


@contextmanager
def deadline(seconds: float | None, *, fresh: bool = False) -> Iterator[None]:
    """Bound the work inside to ``seconds`` from now (``None``: no bound; a deadline already
    set and earlier stays, unless ``fresh``: a new request's own deadline, whatever context
    the server runs it in)."""
    if seconds is None:
        yield
        return
    at = time.monotonic() + seconds
    current = None if fresh else _DEADLINE.get()
    token = _DEADLINE.set((at, seconds) if current is None or at < current[0] else current)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


@contextmanager
def no_deadline() -> Iterator[None]:
    """No deadline for the work inside (a request's outermost layer, before its own is set)."""
    token = _DEADLINE.set(None)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


@contextmanager
def reserve(seconds: float) -> Iterator[float | None]:
    """The work inside ends ``seconds`` before the deadline (at once when less is left), so
    what follows the block keeps them; yields the seconds the work inside has (``None``
    without a deadline: nothing is bounded). Nested, the outermost reserve holds (the time is
    not kept twice)."""
    current = _DEADLINE.get()
    if current is None:
        yield None
        return
    if _RESERVED.get():
        yield remaining()
        return
    at, length = current
    token = _DEADLINE.set((at - max(0.0, seconds), length))
    marked = _RESERVED.set(True)
    try:
        yield remaining()
    finally:
        _RESERVED.reset(marked)
        _DEADLINE.reset(token)


def length() -> float | None:
    """The current deadline's length in seconds (``RAGSPINE_REQUEST_TIMEOUT`` in the service), or ``None``."""
    current = _DEADLINE.get()
    return None if current is None else current[1]


def remaining() -> float | None:
    """Seconds left (at least 0), or ``None`` without a deadline."""
    current = _DEADLINE.get()
    return None if current is None else max(0.0, current[0] - time.monotonic())


def check(doing: str = "the request") -> None:
    """Raise :class:`DeadlineExceeded` when the deadline has passed."""
    current = _DEADLINE.get()
    if current is not None and time.monotonic() >= current[0]:
        raise DeadlineExceeded(f"{doing} ran past its {current[1]:g} s deadline (RAGSPINE_REQUEST_TIMEOUT)")


def expired() -> bool:
    current = _DEADLINE.get()
    return current is not None and time.monotonic() >= current[0]
