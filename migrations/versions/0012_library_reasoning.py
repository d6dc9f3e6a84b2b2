"""A service library's query-time reasoning and its RAPTOR switch.

``query_transform``, ``decompose``, ``adaptive`` (registry names), ``corrective``, ``query_fanout``
and ``raptor`` are kept with the library when it is created with them. Unlike its ranking, a
setting the library does not choose stays NULL and reads as the server's
(``RAGSPINE_QUERY_TRANSFORM``, ``RAGSPINE_QUERY_DECOMPOSE``, ``RAGSPINE_ADAPTIVE``,
``RAGSPINE_CORRECTIVE``, ``RAGSPINE_QUERY_FANOUT``, ``RAGSPINE_RAPTOR``) at each search; a
``/v1/retrieve`` request may override either. Libraries made before this revision read as
all NULL: the server's, as until now.

Revision ID: 0012_library_reasoning
Revises: 0011_raptor
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012_library_reasoning"
down_revision = "0011_raptor"
branch_labels = None
depends_on = None

COLUMNS = (
    ("query_transform", sa.Text), ("decompose", sa.Text), ("adaptive", sa.Text),
    ("corrective", sa.Boolean), ("query_fanout", sa.Integer), ("raptor", sa.Boolean),
)


def upgrade() -> None:
    for name, kind in COLUMNS:
        op.add_column("ragspine_service_library", sa.Column(name, kind, nullable=True))


def downgrade() -> None:
    for name, _ in reversed(COLUMNS):
        op.drop_column("ragspine_service_library", name)
