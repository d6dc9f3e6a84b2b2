"""A chunk's line boxes on its PDF's pages: ``ragspine_chunk.boxes``.

A PDF's (or an OCR'd image's) chunks keep where their lines are on the pages (compact JSON,
``ragspine/retrieval/boxes.py``) so that an answer asked for boxes — the HTTP service's
``"boxes": true`` — gives them from the store, from the bytes the document was read from,
never by reading a path again. Every other chunk has ``''``; chunks written before this
revision have none until their document is ingested again.

Revision ID: 0014_chunk_boxes
Revises: 0013_library_profile
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014_chunk_boxes"
down_revision = "0013_library_profile"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("ragspine_chunk", sa.Column("boxes", sa.Text, nullable=False, server_default=""))


def downgrade() -> None:
    op.drop_column("ragspine_chunk", "boxes")
