"""The per-model vector table, as SQLAlchemy Core (pure: no I/O).

One table per embedding model (its ``vector(dim)`` column is sized to the model), shared by
every library of the database; the Alembic-owned registry ``ragspine_vector_space`` maps the
model id to its dimension and table. Names are built from a slug of the model id plus a hash,
so any model id (quotes, slashes, unicode) gives a short, safe, unique identifier — and
SQLAlchemy quotes it anyway.

Indexes: the primary key ``(library_id, chunk_id)``; HNSW on ``embedding vector_cosine_ops``
``WITH (m, ef_construction)``; btree ``(library_id, doc_id)`` for per-document deletes; GIN
``jsonb_path_ops`` on ``metadata`` for ``eq``/``in`` filters (JSONB containment).
"""

from __future__ import annotations

import hashlib
import re

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB

from ragspine.errors import ConfigError

__all__ = ["MAX_HNSW_DIM", "TABLE_PREFIX", "table_name_for", "vector_table"]

TABLE_PREFIX = "ragspine_vec_"
#: pgvector's HNSW index supports ``vector`` columns up to 2,000 dimensions.
MAX_HNSW_DIM = 2000
_SLUG_CHARS = 30  # prefix 13 + slug 30 + "_" + hash 8 + index suffix ≤ 6  <  63 (NAMEDATALEN)


def table_name_for(model_id: str) -> str:
    """``ragspine_vec_<slug>_<hash8>``: readable, ≤ 52 chars, distinct per model id."""
    if not isinstance(model_id, str) or not model_id.strip():
        raise ConfigError(f"an embedding model id is a non-empty string, got {model_id!r}")
    slug = re.sub(r"[^a-z0-9]+", "_", model_id.lower()).strip("_")[:_SLUG_CHARS].strip("_") or "model"
    digest = hashlib.sha256(model_id.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{TABLE_PREFIX}{slug}_{digest}"


def check_dim(dim: object) -> int:
    if isinstance(dim, bool) or not isinstance(dim, int) or dim <= 0:
        raise ConfigError(f"vector dimension must be a positive integer, got {dim!r}")
    if dim > MAX_HNSW_DIM:
        raise ConfigError(
            f"vector dimension {dim} exceeds pgvector's HNSW limit of {MAX_HNSW_DIM} for the vector type; "
            "use a model with at most 2000 dimensions (or Qdrant) for this store"
        )
    return dim


def vector_table(name: str, dim: int, *, hnsw_m: int = 16, hnsw_ef_construction: int = 64) -> sa.Table:
    """The table (and its indexes) for one model, on a private ``MetaData``."""
    from pgvector.sqlalchemy import Vector

    table = sa.Table(
        name,
        sa.MetaData(),
        sa.Column("library_id", sa.Text, primary_key=True),
        sa.Column("chunk_id", sa.Text, primary_key=True),
        sa.Column("version", sa.Integer, nullable=False, server_default="0"),
        sa.Column("doc_id", sa.Text, nullable=False, server_default=""),
        sa.Column("sensitivity", sa.Text, nullable=False, server_default=""),
        sa.Column("metadata", JSONB, nullable=False, server_default=sa.text("'{}'::jsonb")),
        sa.Column("embedding", Vector(dim), nullable=False),
    )
    sa.Index(
        f"{name}_hnsw",
        table.c.embedding,
        postgresql_using="hnsw",
        postgresql_with={"m": int(hnsw_m), "ef_construction": int(hnsw_ef_construction)},
        postgresql_ops={"embedding": "vector_cosine_ops"},
    )
    sa.Index(f"{name}_doc", table.c.library_id, table.c.doc_id)
    sa.Index(f"{name}_meta", table.c.metadata, postgresql_using="gin", postgresql_ops={"metadata": "jsonb_path_ops"})
    return table
