"""RESTRICTED chunks leave the PostgreSQL lexical index.

Their postings are deleted, their ``n_tokens`` set NULL (the mark of a chunk the index does
not hold), and the document frequencies and per-library statistics recomputed, so BM25
scores, rankings and everything a search answers no longer depend on whether a library holds
RESTRICTED documents. The write path keeps it so from here on. The downgrade indexes them
again (what 0004 did).

Revision ID: 0005_restricted_unindexed
Revises: 0004_lexical
Create Date: 2026-12-01
"""

from __future__ import annotations

from alembic import op

revision = "0005_restricted_unindexed"
down_revision = "0004_lexical"
branch_labels = None
depends_on = None


def upgrade() -> None:
    from ragspine.stores.postgres.writes import RESTRICTED_SQL, recount_lexical

    raw = op.get_bind().connection.driver_connection
    assert raw is not None
    with raw.cursor() as cur:
        cur.execute(f"UPDATE ragspine_chunk SET n_tokens = NULL WHERE active AND {RESTRICTED_SQL}")
        cur.execute(
            "DELETE FROM ragspine_lex_posting p USING ragspine_chunk c"
            " WHERE c.library_id = p.library_id AND c.chunk_id = p.chunk_id AND c.active AND c.n_tokens IS NULL"
        )
        recount_lexical(cur)


def downgrade() -> None:
    from ragspine.stores.postgres.writes import backfill_lexical

    backfill_lexical(op.get_bind().connection.driver_connection, restricted=True)
