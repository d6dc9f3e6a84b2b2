"""The PostgreSQL schema as SQLAlchemy Core tables — the single source the Alembic
revisions in ``migrations/`` are written against (``alembic revision --autogenerate``
compares with :data:`metadata`).

Every chunk row carries ``library_id``; a library belongs to a tenant (``tenant_id``).
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB

metadata = sa.MetaData()

library = sa.Table(
    "ragspine_library",
    metadata,
    sa.Column("library_id", sa.Text, primary_key=True),
    sa.Column("tenant_id", sa.Text, nullable=False, server_default=""),
    sa.Column("description", sa.Text, nullable=False, server_default=""),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
)

chunk = sa.Table(
    "ragspine_chunk",
    metadata,
    sa.Column("library_id", sa.Text, primary_key=True),
    sa.Column("chunk_id", sa.Text, primary_key=True),
    sa.Column("version", sa.Integer, primary_key=True),
    sa.Column("doc_id", sa.Text, nullable=False),
    sa.Column("active", sa.Boolean, nullable=False, server_default=sa.true()),
    sa.Column("ordinal", sa.Integer, nullable=False, server_default="0"),
    sa.Column("text", sa.Text, nullable=False),
    sa.Column("title", sa.Text, nullable=False, server_default=""),
    sa.Column("source_locator", sa.Text, nullable=False, server_default=""),
    sa.Column("char_start", sa.Integer, nullable=False, server_default="0"),
    sa.Column("char_end", sa.Integer, nullable=False, server_default="0"),
    sa.Column("metadata", JSONB, nullable=False, server_default=sa.text("'{}'::jsonb")),
    sa.Column("sensitivity", sa.Text, nullable=False, server_default="INTERNAL"),
    sa.Column("parent_id", sa.Text, nullable=False, server_default=""),
    sa.Column("heading", sa.Text, nullable=False, server_default=""),
    sa.Column("window_text", sa.Text, nullable=False, server_default=""),
    sa.Column("parent_locator", sa.Text, nullable=False, server_default=""),
    sa.Column("valid_as_of", sa.Text, nullable=False, server_default=""),
    sa.Column("ingested_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
    sa.Index("ragspine_chunk_doc", "library_id", "doc_id", "version"),
    sa.Index(
        "ragspine_chunk_active_id",
        "library_id",
        "chunk_id",
        unique=True,
        postgresql_where=sa.text("active"),
    ),
    sa.Index(
        "ragspine_chunk_active_doc",
        "library_id",
        "doc_id",
        "ordinal",
        postgresql_where=sa.text("active"),
    ),
)

change = sa.Table(
    "ragspine_change",
    metadata,
    sa.Column("seq", sa.BigInteger, sa.Identity(always=False), primary_key=True),
    sa.Column("library_id", sa.Text, nullable=False),
    sa.Column("doc_id", sa.Text, nullable=False),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("changed_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
    sa.Index("ragspine_change_lib_seq", "library_id", "seq"),
    sa.Index("ragspine_change_lib_doc", "library_id", "doc_id", "version"),
)

#: One row per embedding model whose vectors live in this database (pgvector): the model
#: id and dimension are recorded so that a mismatch is an error, never a mixed space.
vector_space = sa.Table(
    "ragspine_vector_space",
    metadata,
    sa.Column("model_id", sa.Text, primary_key=True),
    sa.Column("dim", sa.Integer, nullable=False),
    sa.Column("table_name", sa.Text, nullable=False, unique=True),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
)
