"""Chunk store: libraries, versioned chunks, change log.

Revision ID: 0001_chunk_store
Revises:
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0001_chunk_store"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "ragspine_library",
        sa.Column("library_id", sa.Text, primary_key=True),
        sa.Column("tenant_id", sa.Text, nullable=False, server_default=""),
        sa.Column("description", sa.Text, nullable=False, server_default=""),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
    )
    op.create_table(
        "ragspine_chunk",
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
    )
    op.create_index("ragspine_chunk_doc", "ragspine_chunk", ["library_id", "doc_id", "version"])
    op.create_index(
        "ragspine_chunk_active_id", "ragspine_chunk", ["library_id", "chunk_id"], unique=True,
        postgresql_where=sa.text("active"),
    )
    op.create_index(
        "ragspine_chunk_active_doc", "ragspine_chunk", ["library_id", "doc_id", "ordinal"],
        postgresql_where=sa.text("active"),
    )
    op.create_table(
        "ragspine_change",
        sa.Column("seq", sa.BigInteger, sa.Identity(always=False), primary_key=True),
        sa.Column("library_id", sa.Text, nullable=False),
        sa.Column("doc_id", sa.Text, nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("changed_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
    )
    op.create_index("ragspine_change_lib_seq", "ragspine_change", ["library_id", "seq"])
    op.create_index("ragspine_change_lib_doc", "ragspine_change", ["library_id", "doc_id", "version"])


def downgrade() -> None:
    op.drop_table("ragspine_change")
    op.drop_table("ragspine_chunk")
    op.drop_table("ragspine_library")
