"""``create_app(settings=None, *, stack=None)``: the FastAPI application.

Nothing happens at import or in ``create_app`` beyond reading settings: the stack, the
service store and the job queue are opened when the app starts (its lifespan) and closed when
it stops — a ``stack`` passed in stays the caller's. ``ragspine serve`` runs it with uvicorn
(``uvicorn ragspine.service.app:create_app --factory`` works too).

Middleware, outermost first: path normalization (``//retrieval`` → ``/retrieval``) →
metrics → authentication (before any body is read) → the request deadline (504) → body size
limit (413) → the routes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI

from ragspine import __version__
from ragspine.config import Settings, load_settings
from ragspine.service import errors
from ragspine.service.auth import AuthMiddleware
from ragspine.service.limits import BodyLimitMiddleware, DeadlineMiddleware, NoInheritedDeadline
from ragspine.service.metrics import Metrics, MetricsMiddleware
from ragspine.service.paths import NormalizePathMiddleware
from ragspine.service.routes import admin, answer, dify, documents, facts, libraries, ops, raptor, retrieve, workflow

if TYPE_CHECKING:
    from ragspine.stack import Stack

DESCRIPTION = """Multi-tenant retrieval over document libraries: cited, RESTRICTED-free snippets.

Authenticate with `Authorization: Bearer <API key>` (tenant endpoints and Dify's `/retrieval`)
or `Bearer <RAGSPINE_ADMIN_TOKEN>` (`/v1/admin`)."""


def create_app(settings: Settings | None = None, *, stack: Stack | None = None) -> FastAPI:
    settings = settings or (stack.settings if stack is not None else load_settings())
    metrics = Metrics()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        from anyio.to_thread import run_sync

        ctx = await run_sync(_open, settings, stack, metrics)
        app.state.service = ctx
        try:
            yield
        finally:
            await run_sync(ctx.close)

    app = FastAPI(title="RAGSpine", version=__version__, description=DESCRIPTION, lifespan=lifespan)
    app.state.settings = settings
    app.state.service = None
    metrics.watch(lambda: app.state.service)
    for router in (admin.router, libraries.router, documents.router, retrieve.router, facts.router, answer.router, workflow.router, dify.router,
                   ops.router, raptor.router):
        app.include_router(router)
    errors.install(app)
    app.add_middleware(BodyLimitMiddleware, max_bytes=settings.max_body_bytes)
    app.add_middleware(DeadlineMiddleware, timeout=settings.request_timeout)
    app.add_middleware(AuthMiddleware)
    app.add_middleware(MetricsMiddleware, metrics=metrics)
    app.add_middleware(NormalizePathMiddleware)
    app.add_middleware(NoInheritedDeadline)  # outermost: see limits.py
    return app


def _open(settings: Settings, stack: Any, metrics: Metrics) -> Any:
    from ragspine.service.context import ServiceContext
    from ragspine.service.jobs import JobWatch, make_job_queue, reap

    ctx = ServiceContext.open(settings, stack=stack, metrics=metrics)
    try:
        ctx.queue = make_job_queue(ctx)
        reap(ctx.store, settings.job_stale_after)  # jobs of a worker that died, e.g. this server's last run
        ctx.queue.recover()
        ctx.watch = JobWatch(ctx.store, ctx.queue, settings.job_stale_after).start()
    except Exception:
        ctx.close()
        raise
    return ctx
