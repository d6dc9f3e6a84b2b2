"""Pure conversion between ``VectorRecord``/``VectorHit`` and pgvector rows (no I/O).

Vectors are L2-normalized to float32 exactly as :class:`InProcessVectorStore` does, so that
``1 - (embedding <=> q)`` is the same cosine score. A zero vector has no direction: pgvector
gives a NaN distance for it, which scores 0 here (as the in-process dot product does).
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping, Sequence

from ragspine.errors import IngestError
from ragspine.retrieval.metadata import validate_metadata
from ragspine.retrieval.vector.base import VectorHit, VectorRecord
from ragspine.retrieval.vector.base import unit_vector as _unit_vector
from ragspine.stores.pgvector.filters import pg_storable

__all__ = ["distance_to_score", "rank_hits", "record_to_row", "row_to_hit", "unit_vector"]


def unit_vector(vector: Sequence[float], dim: int, what: str) -> list[float]:
    """The L2-normalized float32 vector as floats (``ConfigError`` on a bad dimension)."""
    return _unit_vector(vector, dim, what).tolist()


def is_zero(vector: Sequence[float]) -> bool:
    return not any(vector)


def _check_text(value: str, what: str) -> None:
    if not pg_storable(value):
        raise IngestError(f"{what} {value!r} contains a NUL or a lone surrogate, which PostgreSQL cannot store")


def record_to_row(record: VectorRecord, library_id: str, dim: int) -> dict[str, Any]:
    """The insert parameters of one record (raises ConfigError / IngestError before any I/O)."""
    metadata = validate_metadata(record.metadata)
    for key, value in metadata.items():
        _check_text(key, "metadata key")
        if isinstance(value, str):
            _check_text(value, f"metadata value of {key!r}")
    for what, text in (("chunk id", record.id), ("doc_id", record.doc_id), ("sensitivity", record.sensitivity)):
        if not isinstance(text, str):
            raise IngestError(f"{what} must be a string, got {type(text).__name__}")
        _check_text(text, what)
    return {
        "library_id": library_id,
        "chunk_id": record.id,
        "version": int(record.version),
        "doc_id": record.doc_id,
        "sensitivity": record.sensitivity,
        "metadata": metadata,
        "embedding": unit_vector(record.vector, dim, f"vector for {record.id!r}"),
    }


def distance_to_score(distance: float | None) -> float:
    """Cosine similarity from pgvector's cosine distance; NaN/NULL (zero vector) → 0."""
    if distance is None or math.isnan(distance):
        return 0.0
    return 1.0 - float(distance)


def row_to_hit(row: Mapping[str, Any]) -> VectorHit:
    """A result row (``chunk_id, distance, doc_id, version, sensitivity, metadata``) → hit."""
    return VectorHit(
        id=row["chunk_id"],
        score=distance_to_score(row["distance"]),
        doc_id=row["doc_id"],
        version=int(row["version"]),
        sensitivity=row["sensitivity"],
        metadata=dict(row["metadata"] or {}),
    )


def rank_hits(hits: Iterable[VectorHit], top_k: int) -> list[VectorHit]:
    """Order by ``(-score, id)`` (code-point order, as in-process) and keep ``top_k``."""
    return sorted(hits, key=lambda h: (-h.score, h.id))[: max(top_k, 0)]
