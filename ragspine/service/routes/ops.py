"""``/healthz`` (the process answers), ``/readyz`` (every configured store answers), ``/metrics``.

``/readyz`` is public for load balancers and says only ready / not ready; each store's check
(whose error may name the database's user, host, port and name) is shown to the admin token."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, Response

from ragspine import __version__
from ragspine.service.auth import bearer, is_admin
from ragspine.service.context import ServiceContext
from ragspine.service.routes.common import context

log = logging.getLogger(__name__)

router = APIRouter(tags=["ops"])


@router.get("/healthz", summary="Liveness: the process answers")
def healthz() -> dict[str, Any]:
    return {"status": "ok", "version": __version__}


@router.get("/readyz", summary="Readiness: every configured store is reachable (503 otherwise)",
            description="Public: only `{\"status\": \"ready\"}` or `{\"status\": \"unavailable\"}` (503). With"
                        " `Authorization: Bearer <RAGSPINE_ADMIN_TOKEN>` the answer adds `checks`: each store's `ok` or"
                        " its error (which may name the database's host, port, user and name).")
def readyz(request: Request, ctx: ServiceContext = Depends(context)) -> JSONResponse:
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
    content: dict[str, Any] = {"status": "ready" if ready else "unavailable"}
    if is_admin(bearer(request.scope["headers"]), ctx.settings.admin_token):
        content["checks"] = checks
    elif not ready:  # the operator finds the cause in the log (the caller only learns "not ready")
        log.warning("not ready: %s", "; ".join(f"{role}: {why}" for role, why in checks.items() if why != "ok"))
    return JSONResponse(status_code=200 if ready else 503, content=content)


@router.get("/metrics", summary="Prometheus metrics")
def metrics(ctx: ServiceContext = Depends(context)) -> Response:
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

    assert ctx.metrics is not None
    return Response(generate_latest(ctx.metrics.registry), media_type=CONTENT_TYPE_LATEST)
