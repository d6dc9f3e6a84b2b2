"""A service library's chunker and contextual header, chosen when it is created.

``chunker`` (a ``RAGSPINE_CHUNKER`` name) and ``contextual`` (``none`` | ``header``) are kept
with the library like its embedding model and retrieval mode, so every job and query of the
library cuts and indexes alike whatever the server's defaults later become. NULL (libraries
made before this revision) reads as ``default`` / ``none``: what they were made with.

Revision ID: 0008_library_chunking
Revises: 0007_postings_state
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008_library_chunking"
down_revision = "0007_postings_state"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("ragspine_service_library", sa.Column("chunker", sa.Text, nullable=True))
    op.add_column("ragspine_service_library", sa.Column("contextual", sa.Text, nullable=True))


def downgrade() -> None:
    op.drop_column("ragspine_service_library", "contextual")
    op.drop_column("ragspine_service_library", "chunker")
