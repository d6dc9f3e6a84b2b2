"""``POST /v1/retrieve``: cited snippets from one library or several (routed, RRF-fused).

The request's filter is parsed here, once (a malformed one is a 400 before any I/O), and the
retriever is the stack's own link exit (``Stack.retriever_for``: one library's, or the routed
multi-library one), so RESTRICTED chunks never come out. ``filters_dropped`` says when the
snippets were found only after dropping the filters (``retry_without_filters``), and
``dense_incomplete`` which libraries' dense leg lacked vectors (a query never computes them).
Each library ranks with its own reranker, depth, postprocessors and fusion weights; a request
naming ``reranker``/``rerank_depth``/``postprocessor`` or ``fusion_weights`` ranks with those
instead (depth at most ``MAX_RERANK_DEPTH``; no pipeline is built for it). A request may choose its
query-time reasoning (``query_transform``, ``decompose``, ``adaptive``, ``corrective``,
``query_fanout`` at most the server's) within the server's LLM call budget per request; each
choice it leaves out is each library's own, else the server's (libraries whose reasoning then
differs each reason over their own answer: ``reasoning/per_library.py``; their trace steps name
the ``library``). The security gate, when configured, applies whatever the request says
(``refusal``, ``refused``). The search runs for the key's principal (``viewer``: a key bound to
a user reads what its ACLs let it, a key that is no principal the documents without an ACL):
every leg scores only those documents, with their statistics, so a principal's answer is the
one a library holding only what it may read would give. ``raptor`` (else each library's, else ``RAGSPINE_RAPTOR``) searches
each library's RAPTOR tree too (``routes/raptor.py``: without vectors or a tree, a 400).
"""

from __future__ import annotations

import time
from typing import Any

from fastapi import APIRouter, Depends

from ragspine.errors import ConfigError
from ragspine.profile import INDEX_FIELDS, OPTIONS, canonical_choice
from ragspine.retrieval.boxes import add_stored_boxes
from ragspine.retrieval.filtering.filters import FilterLimits, parse_filter
from ragspine.retrieval.fusion.weights import parse_weights
from ragspine.retrieval.mode import make_retrieval_mode
from ragspine.retrieval.ranking import Stages
from ragspine.retrieval.request import SearchRequest, ask
from ragspine.security.principals import Viewer
from ragspine.service.context import ServiceContext
from ragspine.service.models import DenseIncompleteOut, RetrieveIn, RetrieveOut
from ragspine.service.routes.common import (
    context,
    documented_bearer,
    external_name,
    library_or_404,
    tenant_id,
)
from ragspine.service.routes.raptor import check_raptor_request
from ragspine.service.routes.visibility import viewer_of

router = APIRouter(prefix="/v1", tags=["retrieval"], dependencies=[Depends(documented_bearer)])


def request_ranking(ctx: ServiceContext, body: RetrieveIn) -> tuple[Stages | None, dict[str, float] | None]:
    """The request's own reranker/depth/postprocessor (all three, the unnamed ones the server's
    defaults) and fusion weights, when it names any; ``(None, None)``: each library's own."""
    stages = None
    if body.reranker is not None or body.postprocessor is not None or body.rerank_depth is not None:
        stages = ctx.stack.stages(ctx.stack.ranking(body.reranker, body.postprocessor, None, body.rerank_depth))
    return stages, parse_weights(body.fusion_weights, where="fusion_weights")


#: RetrieveIn field -> the Profile choice it makes for one request
REQUEST_FIELDS = {
    "mode": "mode", "reranker": "reranker", "rerank_depth": "rerank_depth", "postprocessor": "postprocessor",
    "fusion_weights": "fusion_weights", "query_transform": "transform", "decompose": "decompose", "adaptive": "adaptive",
    "corrective": "corrective", "query_fanout": "fanout", "raptor": "raptor",
}


def with_request_recipe(body: RetrieveIn) -> RetrieveIn:
    """``body`` with its nested ``recipe``'s choices in the flat fields. What a library stores
    (:data:`~ragspine.profile.INDEX_FIELDS`) and its registered options are kept with the library,
    and a choice made both ways with different values is ambiguous: each a 400 naming it."""
    if body.recipe is None:
        return body
    choices = body.recipe.choices()
    fixed = [name for name in choices if name in INDEX_FIELDS or name in OPTIONS]
    if fixed:
        raise ConfigError(f"recipe {fixed[0]}: a request cannot change what a library keeps ({', '.join((*INDEX_FIELDS, 'options'))});"
                          " create the library with it")
    update: dict[str, Any] = {}
    for field, choice in REQUEST_FIELDS.items():
        if choice in choices:
            mine, theirs = getattr(body, field), choices[choice]
            if field in body.model_fields_set and mine is not None and canonical_choice(choice, mine) != canonical_choice(choice, theirs):
                raise ConfigError(f"{field}={mine!r} and recipe {choice}={theirs!r} differ: send the choice once")
            update[field] = theirs
    return body.model_copy(update=update)


@router.post("/retrieve", response_model=RetrieveOut, summary="Retrieve cited snippets")
def retrieve(body: RetrieveIn, ctx: ServiceContext = Depends(context), tenant: str = Depends(tenant_id),
             viewer: Viewer = Depends(viewer_of)) -> RetrieveOut:
    body = with_request_recipe(body)
    metadata_filter = parse_filter(body.filters, limits=FilterLimits.from_settings(ctx.settings))  # the one parse of this request's filter
    chosen = {"transform": body.query_transform, "decompose": body.decompose, "adaptive": body.adaptive,
              "corrective": body.corrective, "fanout": body.query_fanout}
    ctx.stack.reasoning_options(**chosen)  # a request's own query-time reasoning, checked before any I/O
    mode = make_retrieval_mode(body.mode).name if body.mode is not None else None
    if body.libraries:
        libraries = [library_or_404(ctx, tenant, name) for name in dict.fromkeys(body.libraries)]
    else:
        libraries = ctx.store.list_libraries(tenant)
    if not libraries:
        return RetrieveOut(query=body.query, libraries=[], snippets=[])
    pipelines = {lib.library_id: ctx.index(lib, mode) for lib in libraries}
    reasoning = {lib.library_id: ctx.reasoning(lib, chosen) for lib in libraries}  # request > library > server
    check_raptor_request(ctx, libraries, pipelines, body.raptor)  # 400 without vectors or a tree
    retriever = ctx.stack.retriever_for(
        pipelines,
        descriptions={lib.library_id: lib.description for lib in libraries},
        retry_without_filters=body.retry_without_filters,
        reasoning=reasoning,
        raptor=body.raptor,
    )
    stages, weights = request_ranking(ctx, body)
    request = SearchRequest(body.query, filter=metadata_filter, top_k=body.top_k, stages=stages, weights=weights, raptor=body.raptor,
                            retry_without_filters=body.retry_without_filters, viewer=viewer)
    start = time.perf_counter()
    answer = ask(retriever, request)
    if ctx.metrics is not None:
        ctx.metrics.retrieval_latency.labels("retrieve", mode or "library").observe(time.perf_counter() - start)
    if body.boxes:  # from the store: what the document was read from, never a path read again
        add_stored_boxes(answer.snippets, ctx.stack.db.chunk_store)
    for snippet in answer.snippets:
        snippet["library_id"] = external_name(snippet["library_id"])
    incomplete = [DenseIncompleteOut(library=external_name(lib), missing=c.missing, total=c.total)
                  for lib, c in sorted(answer.dense_incomplete.items())]
    if ctx.metrics is not None and incomplete:
        ctx.metrics.dense_incomplete.labels("retrieve").inc()
    return RetrieveOut(
        query=body.query, libraries=[lib.name for lib in libraries], snippets=answer.snippets,
        filters_dropped=answer.filters_dropped, dense_incomplete=incomplete,
        refusal=answer.refusal, refused=_external(answer.refused), trace=_external(answer.trace),
    )


def _external(items: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
    """Trace steps or refusals with the ``library`` a library's own reasoning tagged them with
    as the tenant's name for it."""
    if items is None:
        return None
    return [{**item, "library": external_name(item["library"])} if "library" in item else item for item in items]
