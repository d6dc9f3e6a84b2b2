"""``POST /v1/answer``: the agent over the tenant's libraries (structured, narrative or composite).

The libraries are the tenant's (another tenant's is a 404, like a missing one): their fact
stores answer the structured half, their link exit (the same one ``/v1/retrieve`` uses, so
RESTRICTED chunks never come out and the security gate applies) the narrative half. The
agent gates the question and each sub-query with the server's gate (:func:`security_gate`). The
``history`` is context for generated prose only — never a source, never searched. Library ids
in the answer are the tenant's names.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends

from ragspine.agent.factory import agent_for
from ragspine.errors import ConfigError
from ragspine.security.gate import SecurityGate
from ragspine.service.agent_models import AnswerIn, AnswerOut
from ragspine.service.context import ServiceContext
from ragspine.service.routes.common import context, documented_bearer, external_name, tenant_id
from ragspine.service.routes.facts import tenant_libraries
from ragspine.service.routes.raptor import check_raptor_request
from ragspine.service.security import security_gate

router = APIRouter(prefix="/v1", tags=["agent"], dependencies=[Depends(documented_bearer)])


@router.post("/answer", response_model=AnswerOut, summary="Answer a question: a stored number, cited snippets, or both")
def answer(body: AnswerIn, ctx: ServiceContext = Depends(context), tenant: str = Depends(tenant_id),
           gate: SecurityGate | None = Depends(security_gate)) -> AnswerOut:
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
        out = agent.answer(body.question, history, as_of=body.as_of).to_dict()
    except ConfigError:  # a RAPTOR library without vectors or a tree: the 400 /v1/retrieve answers, in the tenant's words
        check_raptor_request(ctx, libraries, pipelines, None)
        raise
    return AnswerOut(**_external(out), libraries=[lib.name for lib in libraries])


def _external(answer: dict[str, Any]) -> dict[str, Any]:
    """The answer with every library id as the tenant's name for it (no tenant prefix)."""
    for source in answer["sources"]:
        source["library_id"] = external_name(source["library_id"])
    if answer["structured"] is not None and answer["structured"]["library_id"]:
        answer["structured"]["library_id"] = external_name(answer["structured"]["library_id"])
    for citation in (answer["narrative"] or {}).get("citations", []):
        citation["library_id"] = external_name(citation["library_id"])
    return answer
