"""No pathological plans after a bulk load (asserted on ``EXPLAIN``, never a wall clock).

The sequence a new user ran: a small library is in use (autovacuum's ANALYZE sees only it),
then a large one is bulk-loaded and queried at once. On statistics that predate the large
library PostgreSQL estimates it at one row and plans its postings and chunks through the
index on ``library_id`` alone, filtering every row of the library per lookup — minutes per
query at 50,000 chunks. A bulk write now refreshes the statistics
(``PostgresDatabase.note_written``), so the lookups use the whole key; with that refresh
switched off the same sequence yields the bad plan, which is what makes this test able to fail.
"""

from __future__ import annotations

import random

from tests.helpers import needs

needs("sqlalchemy")

from ragspine.stores.postgres.lexical import _CANDIDATES, search_sql  # noqa: E402
from tests.helpers import make_chunk  # noqa: E402

WORDS = [f"w{i}" for i in range(400)]


def _docs(n_chunks: int, prefix: str, seed: int) -> list:
    rng = random.Random(seed)
    out = []
    for d in range(n_chunks // 2):
        doc_id = f"{prefix}{d:05d}"
        out.append((doc_id, [make_chunk(doc_id, i, " ".join(rng.choices(WORDS, k=25))) for i in range(2)]))
    return out


def _load_after_a_small_library(db) -> None:
    db.chunk_store("small").replace_many(_docs(60, "s", 1))
    db.analyze()  # what autovacuum did while only the small library existed
    big = db.chunk_store("big")
    docs = _docs(6000, "b", 2)
    for start in range(0, len(docs), 500):  # a bulk load in transactions of 1,000 chunks
        big.replace_many(docs[start : start + 500])


def _plans(db) -> str:
    params = {"library_id": "big", "essential": ["w1", "w2"]}
    scored = {"library_id": "big", "tokens": ["w1", "w2", "w3"], "k1": 1.5, "b": 0.75, "k": 10, "margin": 0.999999999}
    with db.engine.connect() as conn:
        raw = conn.connection.driver_connection
        lines = [r[0] for r in raw.execute("EXPLAIN " + _CANDIDATES.format(where=""), params)]
        lines += [r[0] for r in raw.execute("EXPLAIN " + search_sql(None, 10), scored)]
    return "\n".join(lines)


def test_a_bulk_load_after_a_small_library_plans_on_fresh_statistics(pg_db) -> None:
    _load_after_a_small_library(pg_db)
    plan = _plans(pg_db)
    assert "ragspine_lex_posting_pkey" in plan, plan  # postings by (library_id, token)
    assert "ragspine_lex_posting_chunk" not in plan, plan  # never "all the library's postings, filtered"
    assert "Filter: (token = " not in plan, plan
    assert "Filter: (chunk_id = " not in plan, plan  # chunks by (library_id, chunk_id), not filtered per row


def test_without_the_refresh_the_same_sequence_plans_badly(pg_db, monkeypatch) -> None:
    monkeypatch.setattr(type(pg_db), "ANALYZE_AFTER_ROWS", 10**9)
    _load_after_a_small_library(pg_db)
    plan = _plans(pg_db)
    assert "Filter: (token = " in plan or "Filter: (chunk_id = " in plan, plan
