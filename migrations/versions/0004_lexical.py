"""Bulk ingest and the PostgreSQL lexical index.

* ``ragspine_change.fingerprint``: the :func:`fingerprint` of each replace's input, so a bulk
  ingest resumes by skipping documents that are already current (``''`` for older rows:
  unknown, never current).
* ``ragspine_chunk.n_tokens`` and the tables ``ragspine_lex_posting`` / ``ragspine_lex_term`` /
  ``ragspine_lex_stats``:
  the lexical index that every replace keeps in its own transaction. The upgrade tokenizes
  the active chunks already stored (one pass, streamed); the downgrade drops it all.

Revision ID: 0004_lexical
Revises: 0003_service
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004_lexical"
down_revision = "0003_service"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("ragspine_change", sa.Column("fingerprint", sa.Text, nullable=False, server_default=""))
    op.add_column("ragspine_chunk", sa.Column("n_tokens", sa.Integer, nullable=True))
    op.create_table(
        "ragspine_lex_posting",
        sa.Column("library_id", sa.Text, nullable=False),
        sa.Column("token", sa.Text(collation="C"), nullable=False),
        sa.Column("chunk_id", sa.Text, nullable=False),
        sa.Column("tf", sa.Integer, nullable=False),
        sa.Column("dl", sa.Integer, nullable=False),
        sa.PrimaryKeyConstraint(
            "library_id", "token", "chunk_id", name="ragspine_lex_posting_pkey", postgresql_include=["tf", "dl"]
        ),
    )
    op.create_index("ragspine_lex_posting_chunk", "ragspine_lex_posting", ["library_id", "chunk_id"])
    op.create_table(
        "ragspine_lex_term",
        sa.Column("library_id", sa.Text, primary_key=True),
        sa.Column("token", sa.Text(collation="C"), primary_key=True),
        sa.Column("df", sa.BigInteger, nullable=False),
    )
    op.create_table(
        "ragspine_lex_stats",
        sa.Column("library_id", sa.Text, primary_key=True),
        sa.Column("n_chunks", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("total_len", sa.BigInteger, nullable=False, server_default="0"),
    )
    from ragspine.stores.postgres.writes import backfill_lexical

    backfill_lexical(op.get_bind().connection.driver_connection)


def downgrade() -> None:
    op.drop_table("ragspine_lex_stats")
    op.drop_table("ragspine_lex_term")
    op.drop_table("ragspine_lex_posting")
    op.drop_column("ragspine_chunk", "n_tokens")
    op.drop_column("ragspine_change", "fingerprint")
