"""A request never inherits another's deadline. Measured under load: on a keep-alive
connection a deadline set for one request was still seen by later requests' outer middleware
and threads, so every request past the first one's deadline ran its statements with a 1 ms
timeout (503s). The outermost layer (``NoInheritedDeadline``) starts each request without one,
and the deadline middleware sets a fresh one (never the earlier, inherited one)."""

from __future__ import annotations

import asyncio
import time

from ragspine.deadline import deadline, remaining
from ragspine.service.limits import DeadlineMiddleware, NoInheritedDeadline


def _run(app, seen: list) -> None:
    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        pass

    asyncio.run(app({"type": "http", "path": "/v1/x", "headers": []}, receive, send))


def test_a_request_starts_fresh_inside_a_stale_context() -> None:
    seen: list = []

    async def inner(scope, receive, send):
        seen.append(remaining())

    outer_seen: list = []

    async def between(scope, receive, send):  # e.g. the auth middleware, outside the deadline
        outer_seen.append(remaining())
        await DeadlineMiddleware(inner, timeout=30)(scope, receive, send)

    with deadline(0.001):  # another request's deadline, long past, left in the server's context
        time.sleep(0.01)
        _run(NoInheritedDeadline(between), seen)
        assert remaining() == 0.0  # the caller's own context is untouched
    assert outer_seen == [None]  # outside the deadline middleware: no deadline at all
    assert seen and 29.0 < seen[0] <= 30.0  # its own 30 s, not the expired one


def test_the_app_has_the_fresh_context_layer_outermost(tmp_path) -> None:
    from ragspine.config import load_settings
    from ragspine.service.app import create_app

    app = create_app(load_settings({"RAGSPINE_CHUNK_STORE": str(tmp_path / "s.db"), "RAGSPINE_EMBEDDING": "none"}))
    assert app.user_middleware[0].cls is NoInheritedDeadline
