"""Request bounds: ``BodyLimitMiddleware`` (size), ``DeadlineMiddleware`` (time) and ``Lane`` (turns).

* A request body over ``max_bytes`` is answered 413 before any handler parses it — at once
  when ``Content-Length`` says so, else as soon as the streamed body passes the limit. The
  body is buffered (at most ``max_bytes``) and replayed to the app.
* Every request runs under a deadline of ``timeout`` seconds (``ragspine.deadline``): the work
  checks it — every CPU-bound loop of a request (CSV and fact rows, the agent's reading of a
  question, filter building, RAPTOR clustering, each search pass, each embedding batch) — and
  database statements are cancelled by it, so a request past it ends with 504 and frees its
  worker; as a backstop, a request still running ``grace`` seconds later is answered 504 at
  once (its thread ends at its next check).
* A bulk request's CPU-bound step runs in a :class:`Lane`: a few at once, the others waiting
  without a thread, so bulk requests never take every thread (and the GIL) from plain queries.
"""

from __future__ import annotations

import asyncio
import json
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

from ragspine.deadline import DeadlineExceeded, deadline, no_deadline, remaining

T = TypeVar("T")

#: Requests of one lane that run their CPU-bound work at once. One: they share the process's
#: GIL, so a second one adds no throughput, and each one more slows every plain query (measured:
#: a 4 ms query took 0.1-0.5 s beside two 10,000-row fact bodies, 0.02-0.2 s beside one).
LANE_SIZE = 1


class NoInheritedDeadline:
    """The outermost layer: a request starts with no deadline, whatever the server's context
    holds. Measured under load on a keep-alive connection, a deadline set for one request was
    seen by the next ones' outer middleware and threads — every request after the first one's
    deadline got a 1 ms statement timeout (503s) — so nothing a request does may rely on
    inheriting a clean context."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        with no_deadline():
            await self.app(scope, receive, send)


class DeadlineMiddleware:
    def __init__(self, app: Any, timeout: float, grace: float = 2.0) -> None:
        self.app = app
        self.timeout = timeout
        self.grace = grace

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def sending(message: dict[str, Any]) -> None:
            nonlocal started
            started = True
            await send(message)

        # fresh: a request never inherits another's deadline (the server may run successive
        # requests of one keep-alive connection in contexts derived from one another)
        with deadline(self.timeout, fresh=True):
            try:
                await asyncio.wait_for(self.app(scope, receive, sending), self.timeout + self.grace)
            except asyncio.TimeoutError:
                if not started:
                    message = timeout_message(self.timeout)
                    if scope.get("path", "").rstrip("/") == "/retrieval":  # Dify's endpoint answers in Dify's shape
                        from ragspine.service.dify import TIMED_OUT

                        await _reply(send, 504, message, {"error_code": TIMED_OUT, "error_msg": message})
                    else:
                        await _reply(send, 504, message)


def timeout_message(timeout: float) -> str:
    return (f"the request ran past its {timeout:g} s deadline (RAGSPINE_REQUEST_TIMEOUT); narrow it (a smaller top_k,"
            " fewer libraries, a simpler filter) or raise the limit")


class Lane:
    """At most ``size`` requests at once run the work given to :meth:`run` — a bulk request's
    CPU-bound step (parsing and checking 10,000 fact rows) — in the server's thread pool; the
    others wait for a turn holding no thread, until their deadline (504). Measured before:
    41 such requests took all 40 threads of the pool and shared one GIL, and a plain query
    sent meanwhile waited 37 s for a thread, then got 504 too. A lane is per process (its
    requests share one GIL), its waiting room per event loop."""

    def __init__(self, doing: str, size: int = LANE_SIZE) -> None:
        self.doing = doing
        self.size = size
        self._slots: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = weakref.WeakKeyDictionary()

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` in the thread pool once a slot is free (with the request's context, so
        its deadline); :class:`DeadlineExceeded` when the deadline passes while waiting."""
        from starlette.concurrency import run_in_threadpool

        loop = asyncio.get_running_loop()
        slots = self._slots.get(loop)
        if slots is None:
            slots = self._slots[loop] = asyncio.Semaphore(self.size)
        left = remaining()
        try:
            await asyncio.wait_for(slots.acquire(), left) if left is not None else await slots.acquire()
        except asyncio.TimeoutError:
            raise DeadlineExceeded(f"{self.doing} waited past the request's deadline for one of {self.size} turns"
                                   " (RAGSPINE_REQUEST_TIMEOUT); send it again later, or in smaller parts") from None
        try:  # the slot is held until the thread ends (a cancelled request waits for its thread)
            return await run_in_threadpool(fn, *args)
        finally:
            slots.release()


class BodyLimitMiddleware:
    def __init__(self, app: Any, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope["headers"]:
            if name.lower() == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    await _reply(send, 400, "Content-Length is not a number")
                    return
                if declared > self.max_bytes:
                    await _too_large(send, self.max_bytes)
                    return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            body = message.get("body", b"")
            size += len(body)
            if size > self.max_bytes:
                await _too_large(send, self.max_bytes)
                return
            chunks.append(body)
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay() -> dict[str, Any]:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            message: dict[str, Any] = await receive()
            return message

        await self.app(scope, replay, send)


async def _too_large(send: Any, limit: int) -> None:
    await _reply(send, 413, f"request body is over the {limit}-byte limit (RAGSPINE_MAX_BODY_BYTES)")


async def _reply(send: Any, status: int, detail: str, body: dict[str, Any] | None = None) -> None:
    data = json.dumps(body if body is not None else {"detail": detail}).encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()), (b"connection", b"close"),
    ]})
    await send({"type": "http.response.body", "body": data})
