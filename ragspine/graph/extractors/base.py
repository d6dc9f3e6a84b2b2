"""The ``RelationExtractor`` role: relations read from narrative chunks, with the chunk as lineage.

``extract(chunks) -> list[Edge]`` reads chunks (anything with ``chunk_id``, ``doc_id``,
``text``, ``source_locator`` and ``sensitivity`` — a ``StoredChunk``) and proposes edges
between the glossary entities they name. Every extractor:

* skips RESTRICTED chunks before reading them (:func:`open_chunks`): their text reaches no
  model, and no edge cites them;
* stamps each edge with its chunk's lineage (``source_doc_id`` = the chunk's ``doc_id``,
  ``source_locator``, ``chunk_id``), as the caller provided it;
* proposes only entity → entity edges between keys of its glossary.

``make_relation_extractor`` (``RAGSPINE_RELATION_EXTRACTOR``) picks one: ``none`` (the
default: no extractor, the graph stays byte for byte the glossary's and the facts'),
``cooccurrence`` or ``llm``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Iterable, Protocol, runtime_checkable

from ragspine.errors import ConfigError
from ragspine.graph.base import Edge
from ragspine.retrieval.sensitivity import is_restricted

if TYPE_CHECKING:
    from ragspine.llm.base import LLMProvider
    from ragspine.structured.glossary import Glossary

__all__ = ["ChunkLike", "EndpointGate", "RelationExtractor", "endpoint_gate", "make_relation_extractor", "open_chunks"]

#: ``text -> allowed?``: the security check an extracted edge's endpoints must pass.
EndpointGate = Callable[[str], bool]


class ChunkLike(Protocol):
    chunk_id: str
    doc_id: str
    text: str
    source_locator: str
    sensitivity: str


@runtime_checkable
class RelationExtractor(Protocol):
    def extract(self, chunks: Iterable[ChunkLike]) -> list[Edge]:
        """Edges read from ``chunks`` (RESTRICTED ones skipped), each cited by its chunk."""
        ...


def open_chunks(chunks: Iterable[ChunkLike]) -> list[ChunkLike]:
    """``chunks`` without the RESTRICTED ones (read before any text is)."""
    return [c for c in chunks if not is_restricted(getattr(c, "sensitivity", ""))]


def endpoint_gate(gate: object) -> EndpointGate | None:
    """``gate`` as an :data:`EndpointGate`: ``None``; a callable ``text -> bool``; or a security
    gate object whose ``check(text)`` returns a decision with ``allowed`` (the deterministic
    deny-list gate of the query path)."""
    if gate is None:
        return None
    check = getattr(gate, "check", None)
    if callable(check):
        return lambda text: bool(check(text).allowed)
    if callable(gate):
        return lambda text: bool(gate(text))
    raise ConfigError(f"a relation extractor's gate is a callable text -> bool or has check(text), got {type(gate).__name__}")


def make_relation_extractor(
    spec: str = "none", *, glossary: Glossary | None = None, provider: LLMProvider | None = None, gate: object = None,
) -> RelationExtractor | None:
    """The extractor named ``spec`` (the caller's ``RAGSPINE_RELATION_EXTRACTOR``; default
    ``none``, the seed's); ``None`` for ``none``. Both extractors read ``glossary`` (default: the shipped one); ``llm`` needs an LLM
    ``provider`` and checks each edge's endpoints with ``gate`` (:func:`endpoint_gate`; default:
    no deny list)."""
    from ragspine.registries import RELATION_EXTRACTORS

    name = RELATION_EXTRACTORS.canonical(spec)
    if name == "none":
        return None
    if glossary is None:
        from ragspine.structured.glossary import Glossary

        glossary = Glossary.default()
    if name == "llm":
        if provider is None:
            raise ConfigError("the llm relation extractor needs an LLM provider (RAGSPINE_LLM)")
        extractor: RelationExtractor = RELATION_EXTRACTORS.build(name, provider, glossary, endpoint_gate=endpoint_gate(gate))
    else:
        extractor = RELATION_EXTRACTORS.build(name, glossary)
    return extractor
