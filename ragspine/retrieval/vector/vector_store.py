"""The ``VectorStore`` role: one vector per active chunk of a library, with its payload.

A store instance is scoped to one library (``library_id``) and one vector space (model and
dimension). Every backend passes ``ragspine.testing.VectorStoreConformance``.

A backend module also provides a :class:`VectorStoreConnector`: built once per process from
configuration (``RAGSPINE_VECTOR_STORE``), it holds what the libraries share (an engine, a
client) and opens each library's store.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Collection, ContextManager, Mapping, Protocol, Sequence, runtime_checkable

from ragspine.retrieval.filtering.filters import MetadataFilter


@dataclass(frozen=True)
class VectorRecord:
    """What ``upsert`` stores for one chunk: its vector and payload."""

    id: str
    vector: Sequence[float] | Any
    doc_id: str = ""
    version: int = 0
    sensitivity: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class VectorHit:
    """One result of ``query``: the chunk id, its cosine similarity and payload."""

    id: str
    score: float
    doc_id: str = ""
    version: int = 0
    sensitivity: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)


@runtime_checkable
class VectorStore(Protocol):
    """Library-scoped vectors (see the module docstring)."""

    library_id: str

    def upsert(self, records: Sequence[VectorRecord]) -> None:
        """Insert or replace by ``id``. Vectors are L2-normalized; a wrong dimension, a
        non-finite component or metadata that is not scalar raises ``ConfigError``/
        ``IngestError`` before anything is written."""
        ...

    def query(
        self,
        vector: Sequence[float],
        *,
        top_k: int = 10,
        where: MetadataFilter | None = None,
        ids: Collection[str] | None = None,
    ) -> list[VectorHit]:
        """Up to ``top_k`` hits by descending cosine similarity, ties by ascending id.
        ``where`` narrows by the payload metadata (the filter semantics of every backend);
        ``ids`` restricts the candidates. A store keeps and returns whatever it is given,
        RESTRICTED payloads too; the policy lives in its one writer: the dense leg never
        writes a RESTRICTED chunk's vector (``vector/dense.py``), so an approximate search
        never walks one, and the rerank and link exits drop any RESTRICTED result anyway."""
        ...

    def delete(self, ids: Sequence[str] = (), *, doc_ids: Sequence[str] = ()) -> int:
        """Delete by chunk id and/or by document; returns how many vectors went."""
        ...

    def clear(self) -> int:
        """Delete every vector of the library; returns how many went."""
        ...

    def count(self, where: MetadataFilter | None = None) -> int:
        """Vectors of the library (passing ``where``)."""
        ...

    def versions(self, ids: Sequence[str]) -> dict[str, int]:
        """``{id: chunk version its vector was computed from}`` for the stored ids."""
        ...


@runtime_checkable
class ProcessLocal(Protocol):
    """A store that lives in the process (lost on restart, refilled from the embedding cache):
    the dense leg may list and prune its ids."""

    process_local: bool

    def ids(self) -> list[str]:
        """Every stored id."""
        ...


@runtime_checkable
class BulkLoads(Protocol):
    """A store that writes many upserts faster as one load (pgvector: its HNSW index is
    built once over a first load instead of kept up row by row)."""

    def bulk_load(self, expected: int) -> ContextManager[None]:
        """The calling thread's upserts inside the block are one load of about ``expected`` vectors."""
        ...


@runtime_checkable
class VectorStoreConnector(Protocol):
    """A configured vector store backend: opens one store per library and vector space."""

    def open(self, library_id: str, *, model_id: str, dim: int) -> VectorStore:
        """A handle on ``library_id``'s vectors of model ``model_id`` (no I/O until used)."""
        ...

    def check(self) -> None:
        """Raise ``BackendError`` (with the fix) unless the backend can serve."""
        ...

    def close(self) -> None:
        """Release what the connector holds (connections, clients)."""
        ...
