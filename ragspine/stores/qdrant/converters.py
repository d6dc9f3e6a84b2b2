"""Pure conversions between RAGSpine records and Qdrant points (no I/O).

* :func:`collection_name_for` — ``<prefix>_<model slug>_<hash8>_d<dim>``: one collection per
  embedding model and dimension, in characters every Qdrant accepts; the hash keeps models
  whose slugs collide (``Model`` / ``model``) apart.
* :func:`point_id` — ``uuid5((library_id, chunk_id))``: the same chunk id in two libraries
  is two points, so no write or ``retrieve`` of one library can touch another's.
* :func:`to_point` / :func:`to_hit` — the payload layout documented in ``filters.py``.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from typing import Any, Mapping, Sequence

from ragspine.errors import ConfigError
from ragspine.retrieval.metadata import validate_metadata
from ragspine.retrieval.storable import check_record
from ragspine.retrieval.vector.similarity import unit_vector as _unit_vector
from ragspine.retrieval.vector.vector_store import VectorHit, VectorRecord
from ragspine.stores.qdrant.filters import (
    METADATA_KEY,
    decode_metadata,
    encode_metadata,
    models,
)

__all__ = ["collection_name_for", "point_id", "to_hit", "to_point", "unit_vector"]

_POINT_NAMESPACE = uuid.UUID("5b0c3f7e-6a7e-5d0b-9c56-7261677370a1")
_PREFIX = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")


def point_id(library_id: str, chunk_id: str) -> str:
    return str(uuid.uuid5(_POINT_NAMESPACE, json.dumps([library_id, chunk_id])))


def collection_name_for(model_id: str, dim: int, prefix: str = "ragspine") -> str:
    if not _PREFIX.fullmatch(prefix):
        raise ConfigError(f"collection_prefix must match {_PREFIX.pattern}, got {prefix!r}")
    slug = re.sub(r"[^a-z0-9]+", "-", model_id.lower()).strip("-")[:48] or "model"
    digest = hashlib.blake2b(model_id.encode("utf-8"), digest_size=4).hexdigest()
    return f"{prefix}_{slug}_{digest}_d{int(dim)}"


def unit_vector(vector: Sequence[float], dim: int, what: str) -> list[float]:
    """The L2-normalized float32 vector as floats (``ConfigError`` on a bad dimension)."""
    values: list[float] = _unit_vector(vector, dim, what).tolist()
    return values


def to_point(library_id: str, record: VectorRecord, dim: int) -> models.PointStruct:
    """A point for ``record``; raises IngestError for non-scalar metadata and for a string no
    store can keep (:func:`~ragspine.retrieval.storable.check_record`)."""
    metadata = validate_metadata(record.metadata)
    check_record(record)
    payload = {
        "library_id": library_id,
        "chunk_id": record.id,
        "doc_id": record.doc_id,
        "version": int(record.version),
        "sensitivity": record.sensitivity,
        METADATA_KEY: encode_metadata(metadata),
    }
    vector = unit_vector(record.vector, dim, f"vector for {record.id!r}")
    return models.PointStruct(id=point_id(library_id, record.id), vector=vector, payload=payload)


def to_hit(point: models.ScoredPoint, score: float | None = None) -> VectorHit:
    """A ``VectorHit`` from a scored point (``score`` overrides the engine's score)."""
    p: Mapping[str, Any] = point.payload or {}
    return VectorHit(
        p.get("chunk_id", ""),
        float(point.score if score is None else score),
        p.get("doc_id", ""),
        int(p.get("version", 0)),
        p.get("sensitivity", ""),
        decode_metadata(p.get(METADATA_KEY)),
    )
