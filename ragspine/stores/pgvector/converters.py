"""Pure conversion between ``VectorRecord``/``VectorHit`` and pgvector rows (no I/O).

Vectors are L2-normalized to float32 exactly as :class:`InProcessVectorStore` does, so that
``1 - (embedding <=> q)`` is the same cosine score. A zero vector has no direction: pgvector
gives a NaN distance for it, which scores 0 here (as the in-process dot product does).

:func:`copy_binary` encodes rows as a PostgreSQL binary ``COPY`` stream (the bulk path of
``PgVectorStore.upsert``): texts as UTF-8, ``version`` as int4, ``metadata`` as jsonb
(version byte 1 + JSON text) and the embedding in pgvector's ``vector_recv`` layout
(uint16 dim, uint16 0, big-endian float4s) — no driver type adapters involved.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from ragspine.errors import IngestError
from ragspine.retrieval.metadata import validate_metadata
from ragspine.retrieval.storable import check_record
from ragspine.retrieval.vector.similarity import unit_vector as _unit_vector
from ragspine.retrieval.vector.vector_store import VectorHit, VectorRecord

__all__ = [
    "COPY_COLUMNS",
    "copy_binary",
    "distance_to_score",
    "rank_hits",
    "record_to_row",
    "row_to_hit",
    "unit_vector",
]

#: The columns of a row, in ``COPY`` order.
COPY_COLUMNS = ("library_id", "chunk_id", "version", "doc_id", "sensitivity", "metadata", "embedding")
_INT4 = (-(2**31), 2**31 - 1)


def unit_vector(vector: Sequence[float], dim: int, what: str) -> list[float]:
    """The L2-normalized float32 vector as floats (``ConfigError`` on a bad dimension)."""
    values: list[float] = _unit_vector(vector, dim, what).tolist()
    return values


def is_zero(vector: Sequence[float]) -> bool:
    return not any(vector)


def record_to_row(record: VectorRecord, library_id: str, dim: int) -> dict[str, Any]:
    """The insert parameters of one record (raises ConfigError / IngestError before any I/O)."""
    metadata = validate_metadata(record.metadata)
    for what, text in (("chunk id", record.id), ("doc_id", record.doc_id), ("sensitivity", record.sensitivity)):
        if not isinstance(text, str):
            raise IngestError(f"{what} must be a string, got {type(text).__name__}")
    check_record(record)  # no NUL, no lone surrogate: as every vector store refuses them
    version = int(record.version)
    if not _INT4[0] <= version <= _INT4[1]:
        raise IngestError(f"version {version} of chunk {record.id!r} does not fit a 32-bit integer")
    return {
        "library_id": library_id,
        "chunk_id": record.id,
        "version": version,
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


_COPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + struct.pack("!ii", 0, 0)
_COPY_TRAILER = struct.pack("!h", -1)


def _field(data: bytes) -> bytes:
    return struct.pack("!i", len(data)) + data


def copy_binary(rows: Sequence[Mapping[str, Any]], dim: int, *, chunk_rows: int = 1000) -> Iterator[bytes]:
    """The binary ``COPY ... (COPY_COLUMNS) FROM STDIN (FORMAT BINARY)`` stream of ``rows``
    (as :func:`record_to_row` makes them), in pieces of ``chunk_rows`` rows."""
    yield _COPY_HEADER
    tuple_head = struct.pack("!h", len(COPY_COLUMNS))
    vector_head = struct.pack("!iHH", 4 + 4 * dim, dim, 0)
    for start in range(0, len(rows), chunk_rows):
        part = rows[start : start + chunk_rows]
        vectors = np.asarray([row["embedding"] for row in part], dtype=">f4").reshape(len(part), dim)
        out = bytearray()
        for row, vector in zip(part, vectors, strict=True):
            out += tuple_head
            out += _field(row["library_id"].encode())
            out += _field(row["chunk_id"].encode())
            out += struct.pack("!ii", 4, row["version"])
            out += _field(row["doc_id"].encode())
            out += _field(row["sensitivity"].encode())
            out += _field(b"\x01" + json.dumps(row["metadata"], ensure_ascii=False, allow_nan=False).encode())
            out += vector_head
            out += vector.tobytes()
        yield bytes(out)
    yield _COPY_TRAILER
