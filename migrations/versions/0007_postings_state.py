"""Whether a library's postings in PostgreSQL are complete.

``ragspine_lex_stats.postings`` is true while every active, indexable chunk of the library
has its postings (what ``RAGSPINE_LEXICAL_INDEX=postgres`` reads). A write made with
``RAGSPINE_PG_POSTINGS=off`` — a deployment whose processes search with the in-process index
following PostgreSQL, so that ingest skips writing a row per (chunk, token) — sets it false,
and the PostgreSQL index then refuses that library with the fix, instead of answering from a
partial index. ``PostgresDatabase.rebuild_postings`` makes it complete again.

Revision ID: 0007_postings_state
Revises: 0006_job_heartbeat
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007_postings_state"
down_revision = "0006_job_heartbeat"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("ragspine_lex_stats", sa.Column("postings", sa.Boolean, nullable=False, server_default=sa.true()))


def downgrade() -> None:
    op.drop_column("ragspine_lex_stats", "postings")
