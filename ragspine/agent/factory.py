"""``make_agent(stack, library_ids)``: the agent over a stack's libraries.

``stack`` is anything with what :class:`AgentStack` names — the settings, the chunk database,
the model, the security gate, the link exit over libraries — as :class:`ragspine.stack.Stack`
has them; the agent package never imports the stack module.

The narrative path searches the stack's link exit over the libraries (``stack.retriever``, or
the ``retriever`` given — the service passes the tenant's); the structured path asks each
library's fact store (in the chunk store's database); the glossary is
``RAGSPINE_FACT_GLOSSARY``'s (else the shipped one); the router is ``RAGSPINE_AGENT_ROUTER``'s;
the model (``RAGSPINE_LLM``, or the one the stack was given) writes the narrative prose, and
without one the narrative answer is extractive. The security gate is the stack's
(``Stack.security_gate``: ``RAGSPINE_SECURITY_DENYLIST``'s :class:`~ragspine.security.SecurityGate`),
or the ``gate`` given; the stack's link exit applies the same gate again around its own search.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, Sequence

from ragspine.agent.agent import Agent
from ragspine.agent.base import QueryGate
from ragspine.agent.narrative import NarrativePath
from ragspine.agent.router import make_agent_router
from ragspine.agent.spotting import load_fact_glossary
from ragspine.agent.structured import StructuredPath
from ragspine.structured.channel import StructuredChannel
from ragspine.structured.factory import make_fact_store
from ragspine.structured.glossary import Glossary

if TYPE_CHECKING:
    from ragspine.config import Settings
    from ragspine.llm.base import LLMProvider
    from ragspine.retrieval.chunking.chunk_store import ChunkDatabase, LibraryInfo
    from ragspine.retrieval.link.narrative_link import NarrativeRetriever

DEFAULT_TOP_K = 3


class AgentStack(Protocol):
    """What the agent is built from (:class:`ragspine.stack.Stack` is one)."""

    @property
    def settings(self) -> Settings: ...

    @property
    def db(self) -> ChunkDatabase: ...

    @property
    def provider(self) -> LLMProvider | None: ...

    @property
    def security_gate(self) -> QueryGate | None: ...

    def retriever(self, library_ids: Sequence[str] | None = None) -> NarrativeRetriever: ...

    def libraries(self) -> Sequence[LibraryInfo]: ...


def make_agent(
    stack: AgentStack,
    library_ids: Sequence[str] | None = None,
    *,
    glossary: Glossary | None = None,
    gate: QueryGate | None = None,
    top_k: int = DEFAULT_TOP_K,
) -> Agent:
    """The agent over ``library_ids`` (default: every library of the stack), see the module
    docstring. Unknown libraries raise ``ConfigError`` naming the known ones (``stack.retriever``)."""
    retriever = stack.retriever(library_ids)
    ids = list(library_ids) if library_ids else sorted(lib.library_id for lib in stack.libraries())
    return agent_for(stack, ids, retriever, glossary=glossary, gate=gate, top_k=top_k)


def agent_for(
    stack: AgentStack,
    library_ids: Sequence[str],
    retriever: NarrativeRetriever | None,
    *,
    glossary: Glossary | None = None,
    gate: QueryGate | None = None,
    top_k: int = DEFAULT_TOP_K,
) -> Agent:
    """The agent over exactly ``library_ids``' fact stores and ``retriever`` (``None``: no
    narrative source), looking nothing up: what the service builds per request."""
    settings = stack.settings
    glossary = glossary if glossary is not None else load_fact_glossary(settings.fact_glossary)
    channels = {lib: fact_channel(stack.db, lib, glossary) for lib in dict.fromkeys(library_ids)}
    provider = stack.provider
    router = make_agent_router(settings.agent_router, provider=provider if settings.agent_router == "llm" else None)
    return Agent(
        structured=StructuredPath(channels),
        narrative=NarrativePath(retriever, provider=provider, top_k=top_k),
        glossary=glossary,
        gate=gate if gate is not None else stack.security_gate,
        router=router,
    )



def fact_channel(db: ChunkDatabase, library_id: str, glossary: Glossary) -> StructuredChannel:
    """The structured channel over ``library_id``'s fact store, reading its facts' source
    documents' ACLs from its chunk store (where the store keeps ACLs)."""
    from ragspine.retrieval.chunking.chunk_store import DocumentAcls

    store = db.chunk_store(library_id)
    return StructuredChannel(make_fact_store(library_id, database=db), glossary, acls=store if isinstance(store, DocumentAcls) else None)
