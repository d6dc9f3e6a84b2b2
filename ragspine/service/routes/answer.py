"""``POST /v1/answer``: the agent over the tenant's libraries (structured, narrative or composite).

The libraries are the tenant's (another tenant's is a 404, like a missing one): their fact
stores answer the structured half, their link exit (the same one ``/v1/retrieve`` uses, so
RESTRICTED chunks never come out and the security gate applies) the narrative half. The
agent gates the question and each sub-query with the server's gate (:func:`security_gate`). The
``history`` is context for generated prose only — never a source, never searched. Both halves
answer for the key's principal (``viewer``): the narrative search reads only the documents it may
read, a fact read from a document it may not is ``not_found``, and a visual hint of such a
document is left out. Library ids
in the answer are the tenant's names.

With the visual seam on (``RAGSPINE_VISUAL_EMBEDDER``), an answered question gets
``visual_hints`` — pages of the tenant's libraries' visual indexes, after the gate, never cited
(:func:`~ragspine.retrieval.visual.search.answer_with_hints`); the key is there only when a hint
is, so with the seam off the answer is byte for byte what it was.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import APIRouter, Depends

from ragspine.agent.base import AgentAnswer
from ragspine.agent.factory import agent_for
from ragspine.errors import ConfigError, RagspineError
from ragspine.security.gate import SecurityGate
from ragspine.security.principals import Viewer
from ragspine.service.agent_models import AnswerIn, AnswerOut
from ragspine.service.context import ServiceContext
from ragspine.service.routes.common import context, documented_bearer, external_name, tenant_id
from ragspine.service.routes.facts import tenant_libraries
from ragspine.service.routes.raptor import check_raptor_request
from ragspine.service.routes.visibility import viewer_of
from ragspine.service.security import security_gate

router = APIRouter(prefix="/v1", tags=["agent"], dependencies=[Depends(documented_bearer)])
log = logging.getLogger(__name__)


# response_model_exclude_unset: visual_hints, the one field not always given, is left out when not given
@router.post("/answer", response_model=AnswerOut, response_model_exclude_unset=True,
             summary="Answer a question: a stored number, cited snippets, or both")
def answer(body: AnswerIn, ctx: ServiceContext = Depends(context), tenant: str = Depends(tenant_id),
           gate: SecurityGate | None = Depends(security_gate), viewer: Viewer = Depends(viewer_of)) -> AnswerOut:
    libraries = tenant_libraries(ctx, tenant, body.libraries)
    pipelines = {lib.library_id: ctx.index(lib) for lib in libraries}
    retriever = ctx.stack.retriever_for(
        pipelines,
        descriptions={lib.library_id: lib.description for lib in libraries},
        retry_without_filters=False,
        reasoning={lib.library_id: ctx.reasoning(lib) for lib in libraries},  # each library's own, else the server's
    ) if libraries else None
    agent = agent_for(ctx.stack, [lib.library_id for lib in libraries], retriever, gate=gate, top_k=body.top_k)
    history = [turn.model_dump() for turn in body.history]
    try:
        answered = agent.answer(body.question, history, as_of=body.as_of, viewer=viewer)
    except ConfigError:  # a RAPTOR library without vectors or a tree: the 400 /v1/retrieve answers, in the tenant's words
        check_raptor_request(ctx, libraries, pipelines, None)
        raise
    out = _with_hints(ctx, answered, [lib.library_id for lib in libraries], gate, viewer).to_dict()
    return AnswerOut(**_external(out), libraries=[lib.name for lib in libraries])


def _with_hints(ctx: ServiceContext, answer: AgentAnswer, library_ids: list[str], gate: SecurityGate | None,
                viewer: Viewer) -> AgentAnswer:
    """``answer`` with its visual hints over the tenant's ``library_ids`` only when there are some
    (a hint of a document ``viewer`` may not read is left out); a hint that cannot be had (the
    seam's model missing, an index of another model) is logged and left out: the answer stands
    without it."""
    from ragspine.retrieval.visual.search import answer_with_hints, visual_search_for

    try:
        # a page of a document the viewer may not read is skipped before the top-k cut
        hinted = answer_with_hints(visual_search_for(ctx.stack), answer, library_ids, gate=gate, viewer=viewer)  # None (off): answer itself
    except RagspineError as exc:
        log.warning("visual hints left out of an answer: %s", exc)
        return answer
    return hinted if hinted.visual_hints else answer


def _external(answer: dict[str, Any]) -> dict[str, Any]:
    """The answer with every library id as the tenant's name for it (no tenant prefix)."""
    for source in answer["sources"]:
        source["library_id"] = external_name(source["library_id"])
    if answer["structured"] is not None and answer["structured"]["library_id"]:
        answer["structured"]["library_id"] = external_name(answer["structured"]["library_id"])
    for citation in (answer["narrative"] or {}).get("citations", []):
        citation["library_id"] = external_name(citation["library_id"])
    for hint in answer.get("visual_hints", []):
        hint["library_id"] = external_name(hint["library_id"])
    return answer
