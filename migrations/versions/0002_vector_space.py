"""pgvector registry: which embedding model (id, dimension) owns which vector table.

The vector tables themselves are created by ``PgVectorStore`` when a model is first used
(their column is sized to the model); downgrading drops them with the registry.

Revision ID: 0002_vector_space
Revises: 0001_chunk_store
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002_vector_space"
down_revision = "0001_chunk_store"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "ragspine_vector_space",
        sa.Column("model_id", sa.Text, primary_key=True),
        sa.Column("dim", sa.Integer, nullable=False),
        sa.Column("table_name", sa.Text, nullable=False, unique=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
    )


def downgrade() -> None:
    conn = op.get_bind()
    for (table_name,) in conn.execute(sa.text("SELECT table_name FROM ragspine_vector_space")):
        op.execute(sa.text('DROP TABLE IF EXISTS "{}"'.format(table_name.replace('"', '""'))))
    op.drop_table("ragspine_vector_space")
