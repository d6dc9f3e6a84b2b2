"""The vector-side roles: ``EmbeddingBackend``, ``VectorStore`` and ``EmbeddingCache``.

``EmbeddingBackend`` — one method, ``embed_texts(texts) -> list[list[float]]``. Backends may
also expose ``model_id`` and ``dim`` (used to namespace cached vectors and to size stores)
and ``unknown_token_share(texts)`` (used by the dense gate, see ``vector/gate.py``).

``VectorStore`` — library-scoped storage of one vector per active chunk, with its payload
(``doc_id``, ``version``, ``sensitivity``, ``metadata``):

* ``upsert(records)`` inserts or replaces by ``id``;
* ``query(vector, top_k=, where=, ids=)`` returns hits by descending cosine similarity,
  ties broken by ascending id; ``where`` is a :class:`MetadataFilter` over the payload
  metadata (same semantics as everywhere), ``ids`` optionally restricts the candidates. It
  does **not** drop RESTRICTED chunks: the rerank and link exits do;
* ``delete(ids=, doc_ids=)`` returns how many vectors went; ``clear()`` deletes every vector
  of the library; ``count(where=)``; ``versions(ids)`` maps stored ids to the chunk version
  their vector was computed from.

``EmbeddingCache`` — vectors by key (model namespace + chunk_id + content hash, see
:func:`embedding_key`): ``get_many(keys)`` / ``set_many(items)``. A cache never fails a
query: backends swallow their own outages and count them.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Collection, Mapping, Protocol, Sequence, runtime_checkable

import numpy as np

from ragspine.retrieval.filtering.filters import MetadataFilter


@runtime_checkable
class EmbeddingBackend(Protocol):
    def embed_texts(self, texts: list[str]) -> list[list[float]]: ...


@dataclass(frozen=True)
class VectorRecord:
    id: str
    vector: Sequence[float]
    doc_id: str = ""
    version: int = 0
    sensitivity: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class VectorHit:
    id: str
    score: float
    doc_id: str = ""
    version: int = 0
    sensitivity: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)


@runtime_checkable
class VectorStore(Protocol):
    library_id: str

    def upsert(self, records: Sequence[VectorRecord]) -> None: ...

    def query(
        self,
        vector: Sequence[float],
        *,
        top_k: int = 10,
        where: MetadataFilter | None = None,
        ids: Collection[str] | None = None,
    ) -> list[VectorHit]: ...

    def delete(self, ids: Sequence[str] = (), *, doc_ids: Sequence[str] = ()) -> int: ...

    def clear(self) -> int: ...

    def count(self, where: MetadataFilter | None = None) -> int: ...

    def versions(self, ids: Sequence[str]) -> dict[str, int]: ...


@runtime_checkable
class EmbeddingCache(Protocol):
    def get_many(self, keys: Sequence[str]) -> list[np.ndarray | None]: ...

    def set_many(self, items: Mapping[str, np.ndarray]) -> None: ...


def model_namespace(backend: object) -> str:
    """``model_id@dim`` of a backend (falls back to its class name)."""
    model_id = getattr(backend, "model_id", None) or type(backend).__name__
    dim = getattr(backend, "dim", None)
    return f"{model_id}@{dim}" if dim else str(model_id)


def embedding_key(namespace: str, chunk_id: str, text: str) -> str:
    """Cache key: model namespace + chunk_id + a hash of the text that was embedded."""
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=12).hexdigest()
    return f"{namespace}:{chunk_id}:{digest}"


def to_float32(vector: Sequence[float]) -> np.ndarray:
    return np.asarray(vector, dtype=np.float32).reshape(-1)


def unit_vector(vector: Sequence[float], dim: int | None, what: str) -> np.ndarray:
    """``vector`` as an L2-normalized float32 array (a zero vector stays zero).

    Raises :class:`ConfigError` for a wrong dimension or a non-finite component — the one
    check every vector store applies before it stores or compares a vector.
    """
    from ragspine.errors import ConfigError

    vec = to_float32(vector)
    if dim is not None and vec.shape[0] != dim:
        raise ConfigError(f"{what} has dimension {vec.shape[0]}, the store holds {dim}-dimensional vectors")
    if not np.all(np.isfinite(vec)):
        raise ConfigError(f"{what} contains NaN or infinite components")
    norm = float(np.linalg.norm(vec))
    return vec / norm if norm > 0 else vec


#: Candidates whose fast (float32 / engine) score is within this of the k-th best are
#: re-scored with :func:`exact_cosine_scores` before the cut; float32 products of unit
#: vectors err by far less.
RESCORE_MARGIN = 1e-4


def exact_cosine_scores(unit_rows: np.ndarray, unit_query: np.ndarray) -> np.ndarray:
    """Scores of L2-normalized float32 rows against a normalized float32 query: the dot
    product in float64, rounded to float32.

    A float32 BLAS product gives a row a score that depends on its position among the rows
    scored with it, so near-ties (common with hashing embeddings) would order differently
    from one call, or one store, to the next. Here a score depends on the row and the query
    only, so every store that keeps the same vectors ranks them the same way.
    """
    q = np.asarray(unit_query, dtype=np.float64)
    rows = np.asarray(unit_rows, dtype=np.float32)
    out = np.empty(len(rows), dtype=np.float32)
    for start in range(0, len(rows), 16384):
        out[start : start + 16384] = rows[start : start + 16384].astype(np.float64) @ q
    return out
