"""``POST /v1/retrieve``: cited snippets from one library or several (routed, RRF-fused).

Every response goes through the link exit (``NarrativeIndexRetriever``, and
``MultiIndexRetriever`` over several), so RESTRICTED chunks never come out.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from fastapi import APIRouter, Depends

from ragspine.retrieval.filtering.filters import parse_filter
from ragspine.retrieval.link.narrative_link import (
    NarrativeIndexRetriever,
    NarrativeRetriever,
)
from ragspine.retrieval.mode import make_retrieval_mode
from ragspine.retrieval.routing.multi_index import MultiIndexRetriever
from ragspine.retrieval.routing.routers import make_library_router
from ragspine.service.context import ServiceContext
from ragspine.service.models import RetrieveIn, RetrieveOut
from ragspine.service.routes.common import (
    context,
    documented_bearer,
    external_name,
    library_or_404,
    tenant_id,
)
from ragspine.service.store import Library

router = APIRouter(prefix="/v1", tags=["retrieval"], dependencies=[Depends(documented_bearer)])


def build_retriever(ctx: ServiceContext, libraries: Sequence[Library], *, mode: str | None, retry: bool) -> NarrativeRetriever:
    if len(libraries) == 1:
        return NarrativeIndexRetriever(ctx.index(libraries[0], mode), retry_without_filters=retry)
    return MultiIndexRetriever(  # the retry, if asked for, applies to the fused result
        {lib.library_id: NarrativeIndexRetriever(ctx.index(lib, mode), retry_without_filters=False) for lib in libraries},
        router=make_library_router(ctx.settings.library_router, provider=ctx.stack.provider),
        descriptions={lib.library_id: lib.description for lib in libraries},
        rrf_k=ctx.settings.rrf_k,
        retry_without_filters=retry,
    )


@router.post("/retrieve", response_model=RetrieveOut, summary="Retrieve cited snippets")
def retrieve(body: RetrieveIn, ctx: ServiceContext = Depends(context), tenant: str = Depends(tenant_id)) -> RetrieveOut:
    parse_filter(body.filters)  # a malformed filter is a 400 before any I/O
    mode = make_retrieval_mode(body.mode).name if body.mode is not None else None
    if body.libraries:
        libraries = [library_or_404(ctx, tenant, name) for name in dict.fromkeys(body.libraries)]
    else:
        libraries = ctx.store.list_libraries(tenant)
    if not libraries:
        return RetrieveOut(query=body.query, libraries=[], snippets=[])
    retriever = build_retriever(ctx, libraries, mode=mode, retry=body.retry_without_filters)
    start = time.perf_counter()
    snippets: list[dict[str, Any]] = retriever.retrieve(body.query, filters=body.filters, top_k=body.top_k)
    if ctx.metrics is not None:
        ctx.metrics.retrieval_latency.labels("retrieve", mode or "library").observe(time.perf_counter() - start)
    for snippet in snippets:
        snippet["library_id"] = external_name(snippet["library_id"])
    return RetrieveOut(query=body.query, libraries=[lib.name for lib in libraries], snippets=snippets)
