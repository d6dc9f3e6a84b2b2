"""A library's recipe as one value: ``ragspine_library.profile``.

The chunk database records, per library, the :class:`~ragspine.profile.Profile` (JSON) it was
built with, so a query uses the recipe its library was built with — the embedding model, the
chunker, its budget and the contextual header cannot silently differ at query time. Libraries
made before this revision have none recorded (NULL) and are queried with the configured recipe,
as until now; their next ingest records it. The downgrade drops the column.

Revision ID: 0013_library_profile
Revises: 0012_library_reasoning
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013_library_profile"
down_revision = "0012_library_reasoning"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("ragspine_library", sa.Column("profile", sa.Text, nullable=True))


def downgrade() -> None:
    op.drop_column("ragspine_library", "profile")
