"""A service library's ranking: its reranker, rerank depth, postprocessor chain and fusion weights.

Chosen when the library is created (the server's ``RAGSPINE_RERANKER``, ``RAGSPINE_RERANK_DEPTH``,
``RAGSPINE_POSTPROCESSOR``, ``RAGSPINE_FUSION_WEIGHTS`` when not given) and kept with it, like
its chunker; a ``/v1/retrieve`` request may override them for itself. NULL (libraries made
before this revision) reads as none / 50 / none / no weights: how they ranked until now.

Revision ID: 0009_library_ranking
Revises: 0008_library_chunking
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009_library_ranking"
down_revision = "0008_library_chunking"
branch_labels = None
depends_on = None

COLUMNS = (("reranker", sa.Text), ("rerank_depth", sa.Integer), ("postprocessor", sa.Text), ("fusion_weights", sa.Text))


def upgrade() -> None:
    for name, kind in COLUMNS:
        op.add_column("ragspine_service_library", sa.Column(name, kind, nullable=True))


def downgrade() -> None:
    for name, _ in reversed(COLUMNS):
        op.drop_column("ragspine_service_library", name)
