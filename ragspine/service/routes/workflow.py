"""``GET /v1/workflow/preview``: the pipeline as a redacted Dify DSL graph (a picture, not executable).

Authenticated with a **tenant key**, like every ``/v1`` route: the picture holds no tenant data
and no secret — registry names, store kinds and numbers only (:class:`PipelineView`) — so any
tenant may see the server's pipeline, and the admin token is not needed. ``?library=NAME``
draws that library's pipeline (its embedding, retrieval mode, chunker and ranking); another
tenant's library is answered exactly like a missing one (404). The library's name is not in the
picture. ``?format=yaml`` returns the YAML Dify exports and imports (default: JSON).
"""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Depends, Query
from fastapi.responses import JSONResponse, Response

from ragspine.service.context import ServiceContext
from ragspine.service.routes.common import context, documented_bearer, library_or_404, tenant_id
from ragspine.workflow.dify import dify_preview, render
from ragspine.workflow.view import pipeline_view

router = APIRouter(prefix="/v1/workflow", tags=["workflow"], dependencies=[Depends(documented_bearer)])

_DOC = {"description": "a Dify app DSL document (kind: app, app.mode: workflow, workflow.graph)",
        "content": {"application/json": {"schema": {"type": "object"}}, "application/yaml": {"schema": {"type": "object"}}}}  # the YAML of the same object


@router.get("/preview", response_class=Response, responses={200: _DOC},
            summary="The configured pipeline as a redacted Dify workflow graph (a picture: not evidence, not executable)")
def workflow_preview(
    library: str | None = Query(None, max_length=256, description="draw this library's pipeline (default: the server's)"),
    format: Literal["json", "yaml"] = Query("json", description="json (default) or yaml"),
    ctx: ServiceContext = Depends(context),
    tenant: str = Depends(tenant_id),
) -> Response:
    if library is None:
        view = pipeline_view(ctx.settings, ctx.stack.mode.name)
    else:  # what its searches run: its recipe over the server's
        view = pipeline_view(ctx.settings, recipe=library_or_404(ctx, tenant, library).recipe(ctx.stack.profile))
    document = dify_preview(view)
    if format == "yaml":
        return Response(render(document, "yaml"), media_type="application/yaml")
    return JSONResponse(document)
