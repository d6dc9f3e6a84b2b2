"""``/healthz`` (the process answers), ``/readyz`` (every configured store answers), ``/metrics``."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse, Response

from ragspine import __version__
from ragspine.service.context import ServiceContext
from ragspine.service.routes.common import context

router = APIRouter(tags=["ops"])


@router.get("/healthz", summary="Liveness: the process answers")
def healthz() -> dict[str, Any]:
    return {"status": "ok", "version": __version__}


@router.get("/readyz", summary="Readiness: every configured store is reachable (503 otherwise)")
def readyz(ctx: ServiceContext = Depends(context)) -> JSONResponse:
    checks: dict[str, str] = {}
    for role, problem in ctx.stack.check_stores():
        checks[role] = problem or "ok"
    for role, probe in (("service store", ctx.store.ping), (f"job queue ({ctx.queue.kind})", ctx.queue.ping)):
        try:
            probe()
            checks[role] = "ok"
        except Exception as exc:
            checks[role] = f"{type(exc).__name__}: {exc}"
    ready = all(value == "ok" for value in checks.values())
    return JSONResponse(status_code=200 if ready else 503, content={"status": "ready" if ready else "unavailable", "checks": checks})


@router.get("/metrics", summary="Prometheus metrics")
def metrics(ctx: ServiceContext = Depends(context)) -> Response:
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

    assert ctx.metrics is not None
    return Response(generate_latest(ctx.metrics.registry), media_type=CONTENT_TYPE_LATEST)
