"""``POST /retrieval``: Dify's external knowledge API (see ``ragspine/service/dify.py``).

Register RAGSpine in Dify as an external knowledge API with endpoint ``http(s)://host:8000``
and a tenant API key; the knowledge id is a library name. The key was already checked by the
AuthMiddleware (403 1001/1002) before this body is read. The search runs for the key's principal
(a trusted application's key names it in ``X-RAGSpine-User``): records of documents it may not
read never come out, and the score is normalized as for a library holding only what it may read.
"""

from __future__ import annotations

import logging
import time

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse

from ragspine.errors import FilterError
from ragspine.retrieval.filtering.filters import FilterLimits, parse_filter
from ragspine.retrieval.reasoning.options import ReasoningOptions
from ragspine.retrieval.request import SearchRequest, ask
from ragspine.security.principals import Viewer
from ragspine.service import dify
from ragspine.service.context import ServiceContext
from ragspine.service.models import DifyRequest
from ragspine.service.routes.common import context, documented_bearer, tenant_id
from ragspine.service.routes.raptor import check_raptor_request
from ragspine.service.routes.visibility import viewer_of

log = logging.getLogger(__name__)

router = APIRouter(tags=["dify"], dependencies=[Depends(documented_bearer)])


def dify_error(status: int, code: int, message: str) -> JSONResponse:
    return JSONResponse(status_code=status, content={"error_code": code, "error_msg": message})


@router.post(
    "/retrieval",
    summary="Dify external knowledge retrieval",
    responses={
        200: {"description": '{"records": [{"content", "score" (0..1), "title", "metadata"}]}'},
        400: {"description": "error_code 2001: unknown knowledge_id; 3001: a metadata condition that cannot be applied"},
        403: {"description": "error_code 1001: missing/malformed Authorization header; 1002: authorization failed"},
        422: {"description": "error_code 3002: the body is not a valid request"},
    },
)
def retrieval(body: DifyRequest, ctx: ServiceContext = Depends(context), tenant: str = Depends(tenant_id),
              viewer: Viewer = Depends(viewer_of)) -> JSONResponse:
    library = ctx.store.get_library(tenant, body.knowledge_id) if body.knowledge_id else None
    if library is None:
        return dify_error(400, dify.KNOWLEDGE_MISSING, "The knowledge does not exist.")
    try:
        metadata_filter = parse_filter(dify.map_condition(body.metadata_condition), limits=FilterLimits.from_settings(ctx.settings))  # parsed once
    except (dify.UnsupportedCondition, FilterError) as exc:
        return dify_error(400, dify.UNSUPPORTED_CONDITION, f"unsupported metadata condition: {exc}")
    setting = body.retrieval_setting
    top_k = (setting.top_k if setting and setting.top_k else None) or dify.DEFAULT_TOP_K
    threshold = (setting.score_threshold if setting and setting.score_threshold is not None else 0.0)
    if not body.query.strip():
        return JSONResponse({"records": []})
    index = ctx.index(library)
    check_raptor_request(ctx, [library], {library.library_id: index}, None)  # RAPTOR without vectors or a tree: 400 naming the library
    # never widen Dify's filter; no query-time reasoning (Dify's score is normalized on the plain
    # pipeline, its schema has no trace), but the security gate, when configured, applies here too
    retriever = ctx.stack.retriever_for({library.library_id: index}, retry_without_filters=False, reasoning=ReasoningOptions())
    start = time.perf_counter()
    request = SearchRequest(body.query, filter=metadata_filter, top_k=top_k, retry_without_filters=False, viewer=viewer)
    answer = ask(retriever, request)
    snippets = answer.snippets
    if ctx.metrics is not None:
        ctx.metrics.retrieval_latency.labels("dify", library.retrieval_mode).observe(time.perf_counter() - start)
        if answer.dense_incomplete:  # Dify's schema has no field for it: the metric and the log say it
            ctx.metrics.dense_incomplete.labels("dify").inc()
    if answer.dense_incomplete:
        log.info("library %s: dense leg incomplete (%s); run `ragspine embed`", library.name,
                 ", ".join(f"{c.missing} of {c.total} chunks without a vector" for c in answer.dense_incomplete.values()))
    best = index.max_fused_score(body.query)
    records = dify.records(snippets, best, top_k=top_k, threshold=threshold, library_name=library.name)
    return JSONResponse({"records": records})
