"""A chunk whose label looks like RESTRICTED but was stored verbatim (an ingest before labels
were folded, ``ragspine.testing.lookalikes.written_verbatim``) is RESTRICTED to the PostgreSQL
lexical index's own SQL paths too: ``ragspine migrate --rebuild-postings`` leaves it out of the
postings and statistics, as it does a chunk stored as ``RESTRICTED`` (issue 25)."""

from __future__ import annotations

from tests.helpers import needs

needs("sqlalchemy")

from ragspine.retrieval.chunking.chunking import Chunk, chunk_id_for  # noqa: E402
from ragspine.testing.lookalikes import RESTRICTED_LOOKALIKES, written_verbatim  # noqa: E402


def _chunk(doc_id: str, text: str, sensitivity: str) -> Chunk:
    return Chunk(chunk_id=chunk_id_for(doc_id, 0), doc_id=doc_id, text=text, ordinal=0, sensitivity=sensitivity)


def _indexed(db, library: str) -> set[str]:
    rows = db.query("SELECT DISTINCT chunk_id FROM ragspine_lex_posting WHERE library_id = %(l)s", {"l": library})
    return {r[0] for r in rows}


def test_rebuilt_postings_leave_out_a_lookalike_label_stored_verbatim(pg_db) -> None:
    store = pg_db.chunk_store("lib")
    labels = list(RESTRICTED_LOOKALIKES.values())
    with written_verbatim():  # an older release: the lookalike was open, so it was indexed
        for i, label in enumerate(labels):
            store.replace_doc_chunks(f"memo{i}", [_chunk(f"memo{i}", "zanzibar merger codename", label)])
    store.replace_doc_chunks("open", [_chunk("open", "zanzibar merger press note", "PUBLIC")])
    assert {c.sensitivity for c in store.iter_chunks() if c.doc_id != "open"} >= {labels[0], labels[4]}
    assert len(_indexed(pg_db, "lib")) > 1
    assert pg_db.rebuild_postings("lib") == 1
    assert _indexed(pg_db, "lib") == {"open#0"}
    stats = pg_db.query("SELECT n_chunks FROM ragspine_lex_stats WHERE library_id = %(l)s", {"l": "lib"})
    assert int(stats[0][0]) == 1
