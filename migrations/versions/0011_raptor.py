"""RAPTOR trees: ``ragspine_raptor_tree`` and ``ragspine_raptor_node``.

One row per library in ``ragspine_raptor_tree`` records what its tree was built from (the
library's change-log position, the embedding model, the build options) and how big it is;
``ragspine_raptor_node`` holds the tree's synthesis nodes (their text, a retrieval probe and
never evidence; the children and the leaves they resolve to; the float32 vector) — apart from
``ragspine_chunk``, so no chunk query, posting list or vector table ever sees one. Nothing
existing changes: the downgrade drops the two tables.

Revision ID: 0011_raptor
Revises: 0010_facts
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0011_raptor"
down_revision = "0010_facts"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "ragspine_raptor_tree",
        sa.Column("library_id", sa.Text, primary_key=True),
        sa.Column("tree_id", sa.Text, nullable=False),
        sa.Column("change_seq", sa.BigInteger, nullable=False),
        sa.Column("model", sa.Text, nullable=False),
        sa.Column("params", JSONB, nullable=False, server_default=sa.text("'{}'::jsonb")),
        sa.Column("chunks", sa.Integer, nullable=False, server_default="0"),
        sa.Column("nodes", sa.Integer, nullable=False, server_default="0"),
        sa.Column("levels", sa.Integer, nullable=False, server_default="0"),
        sa.Column("built_at", sa.Text, nullable=False, server_default=""),
        sa.Column("build_seconds", sa.Float, nullable=False, server_default="0"),
    )
    op.create_table(
        "ragspine_raptor_node",
        sa.Column("library_id", sa.Text, primary_key=True),
        sa.Column("node_id", sa.Text, primary_key=True),
        sa.Column("level", sa.Integer, nullable=False),
        sa.Column("ordinal", sa.Integer, nullable=False),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("children", JSONB, nullable=False),
        sa.Column("leaves", JSONB, nullable=False),
        sa.Column("vector", sa.LargeBinary, nullable=False),
        sa.Column("written_by", sa.Text, nullable=False, server_default="extractive"),
    )
    op.create_index("ragspine_raptor_node_order", "ragspine_raptor_node", ["library_id", "ordinal"])


def downgrade() -> None:
    op.drop_index("ragspine_raptor_node_order", table_name="ragspine_raptor_node")
    op.drop_table("ragspine_raptor_node")
    op.drop_table("ragspine_raptor_tree")
