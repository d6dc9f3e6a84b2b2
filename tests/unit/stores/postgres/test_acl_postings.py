"""Document ACLs in PostgreSQL's postings layout (``RAGSPINE_LEXICAL_INDEX=postgres``): a
principal's BM25, computed in SQL over exactly the chunks it may read, equals ``bm25_scores``
over the library L' that holds only those — bit for bit — over a seeded random history (the
in-process index's: ``tests/unit/retrieval/lexical/test_acl_views.py``'s ``History``): ingests
with ACLs, ACL changes without a re-ingest, re-ingests, retirements, RESTRICTED documents.
A leaky double (the whole library's statistics, the hidden rows dropped after scoring) must
fail the same check."""

from __future__ import annotations

import random

import pytest

from ragspine.retrieval.chunking.chunk_store import DocumentChunks
from ragspine.retrieval.filtering.filters import FilterCondition, MetadataFilter
from ragspine.retrieval.lexical.tokenizer import tokenize
from ragspine.security.principals import ACL, ANONYMOUS, EVERYTHING, Principal, Viewer
from ragspine.testing.lexical_history import SyntheticText
from tests.helpers import needs
from tests.unit.retrieval.lexical.test_acl_views import VIEWERS, History

needs("sqlalchemy")


class LeakyIndex:
    """What a peer that filters after retrieval does: the whole library's BM25 (its statistics
    count every row), the chunks the viewer may not read dropped from the ranking."""

    def __init__(self, store) -> None:  # type: ignore[no-untyped-def]
        from ragspine.stores.postgres.lexical import PostgresLexicalIndex

        self.inner = PostgresLexicalIndex(store)
        self.store = store

    def refresh(self) -> None:
        self.inner.refresh()

    def view(self, viewer, snapshot=None):  # type: ignore[no-untyped-def]
        return self.inner.view(viewer, snapshot)

    def search(self, query, *, metadata_filter=None, top_k=None, view=None):  # type: ignore[no-untyped-def]
        hits = self.inner.search(query, metadata_filter=metadata_filter)
        if view is not None:
            doc_of = {c.chunk_id: c.doc_id for c in self.store.get_chunks([h.chunk_id for h in hits])}
            hits = [h for h in hits if not view.snapshot.hides(view.viewer, doc_of[h.chunk_id])]
        return hits if top_k is None else hits[:top_k]


class PgHistory(History):
    """``History`` over a PostgreSQL library, searched by its postings (``index``)."""

    def __init__(self, db, seed: int, index=None) -> None:  # type: ignore[no-untyped-def]  # noqa: D107
        from ragspine.stores.postgres.lexical import PostgresLexicalIndex

        self.rng = random.Random(seed)
        self.text = SyntheticText(seed, ascii_words=3_000, cjk_words=500)
        self.path, self.kernel = "", "postgres"
        self.db = db
        self.make = index or PostgresLexicalIndex
        self.store = db.chunk_store("acl")
        self.index = self.make(self.store)
        self.docs: list[str] = []
        self.compared = 0
        self._tokens: dict = {}
        self._checks = 0

    def reopen(self) -> None:
        self.index = self.make(self.store)  # a new index: no cached ACL snapshot nor hidden classes

    def check_candidates(self) -> None:
        """The dense leg's candidates under each view: exactly the visible indexed chunks."""
        where = MetadataFilter((FilterCondition("topic", "eq", "b"),))
        for viewer in VIEWERS:
            view = self.index.view(viewer)
            chunks = self.visible(viewer)
            for f in (None, where):
                want = sorted(((c.chunk_id, c.version) for c in chunks if f is None or f.matches(c.metadata)),
                              key=lambda t: t[0].encode("utf-8", "surrogatepass"))
                assert self.index.candidates(f, **({} if view is None else {"view": view})) == want, viewer


@pytest.fixture
def pg_db(pg15_schema):
    from ragspine.stores.postgres import PostgresDatabase

    url, schema = pg15_schema
    db = PostgresDatabase(url, schema=schema, pool_size=2)
    db.init_schema()
    yield db
    db.close()


def test_a_principals_bm25_in_sql_is_the_visible_librarys_bit_for_bit(pg_db) -> None:
    h = PgHistory(pg_db, seed=38)
    h.write(60)
    h.check()
    h.check_candidates()
    while h.store.count() < 1_500:
        h.write(60)
        h.check()
        h.change_acls(15)  # no re-ingest: the next search sees it
        h.write(1)
        h.check()
        h.reopen()
    h.check_candidates()
    h.change_acls(len(h.docs) // 10)
    h.check()
    assert h.compared >= 120
    assert h.store.acl_seq() > 0 and len(h.store.document_acls()[1]) > 50


def test_a_view_made_before_an_acl_change_answers_that_snapshot_whole(pg_db) -> None:
    """A search's legs share one view: an ACL change committed after it was made is seen by
    none of them (the statements then name the snapshot's hidden documents, not the ACL texts),
    except that a document with an ACL now and none in the snapshot — one written since with an
    ACL — is hidden: a race never shows a document its ACL hides."""
    h = PgHistory(pg_db, seed=39)
    h.write(120)
    viewer = Viewer(Principal.of("u1", ["hr"]))
    view = h.index.view(viewer)
    assert view is not None
    before = h.visible(viewer)
    h.store.set_acls({d: ACL.parse("group:hr") for d in h.docs[:40]} | {d: ACL.parse("group:board") for d in h.docs[40:80]}, by="test")
    assert {c.chunk_id for c in h.visible(viewer)} != {c.chunk_id for c in before}
    # written since with an ACL (no ACL in the snapshot): hidden under the old view, failing closed
    h.store.replace_many([DocumentChunks("late", h.doc("late"), "", ACL.parse("group:board"))])
    before_ids = {c.chunk_id for c in before}
    assert any(c.doc_id == "late" for c in h.store.iter_chunks()) and not any(c.startswith("late") for c in before_ids)
    # the snapshot's ACLs, except that a document with an ACL now and none then is hidden (failing closed)
    gained = set(h.store.document_acls()[1]) - set(view.snapshot.acls)
    assert "late" in gained and any(c.doc_id in gained for c in before)
    want = [c for c in before if c.doc_id not in gained]
    late = [tokenize(c.text) for c in h.store.iter_chunks() if c.doc_id == "late"][:2]
    for query in h.queries(6) + late:
        got = [(x.chunk_id, x.score, x.version) for x in h.index.search(query, top_k=10, view=view)]
        assert got == h.reference(want, query, None, 10)
    assert [c for c, _ in h.index.candidates(view=view)] == sorted(c.chunk_id for c in want)


def test_the_leaky_double_fails_the_same_check(pg_db) -> None:
    h = PgHistory(pg_db, seed=30, index=LeakyIndex)
    h.write(80)
    with pytest.raises(AssertionError):
        for _ in range(4):
            h.check()


def test_no_acl_means_no_view_and_the_statement_of_today(pg_db) -> None:
    h = PgHistory(pg_db, seed=31)
    h.store.replace_many([DocumentChunks(f"o{i}", h.doc(f"o{i}")) for i in range(30)])
    assert all(h.index.view(v) is None for v in VIEWERS)  # every search runs the statement it ran before ACLs
    h.store.set_acls({"o1": ACL.parse("group:hr")}, by="test")
    assert h.index.view(Viewer(Principal.of("u1", ["hr"]))) is None  # hides nothing from a member
    assert h.index.view(ANONYMOUS) is not None and h.index.view(ANONYMOUS).hidden == ('{"allow":["group:hr"],"deny":[]}',)
    assert h.index.view(EVERYTHING) is None and h.index.view(None) is None


def test_the_view_statements_plan_no_large_join_after_a_bulk_load(pg_db) -> None:
    """A view's statements on statistics that predate the library and its ACLs (asserted on
    ``EXPLAIN``, as ``test_plans.py`` does): postings by (library_id, token), a hidden document's
    chunks by (library_id, doc_id), and the hidden chunks taken out by an aggregate — no
    anti-join, no nested loop over two large sets, nothing filtered per row."""
    from ragspine.stores.postgres.lexical import _HIDDEN_BY_ACL, _VISIBLE_CANDIDATES, search_sql
    from tests.unit.stores.postgres.test_plans import _load_after_a_small_library

    _load_after_a_small_library(pg_db)
    big = pg_db.chunk_store("big")
    big.set_acls({f"b{d:05d}": ACL.parse("group:hr" if d % 3 else "group:board") for d in range(0, 3000, 2)}, by="test")
    hidden = {"library_id": "big", "hidden": ['{"allow":["group:hr"],"deny":[]}']}
    scored = {**hidden, "tokens": ["w1", "w2", "w3"], "k1": 1.5, "b": 0.75, "k": 10, "margin": 0.999999999}
    with pg_db.engine.connect() as conn:
        raw = conn.connection.driver_connection
        lines = [r[0] for r in raw.execute("EXPLAIN " + search_sql(None, 10, "acl"), scored)]
        lines += [r[0] for r in raw.execute("EXPLAIN " + _VISIBLE_CANDIDATES.format(hidden=_HIDDEN_BY_ACL, where=""), hidden)]
    plan = "\n".join(lines)
    assert "ragspine_lex_posting_pkey" in plan and "ragspine_lex_posting_chunk" not in plan, plan
    assert "Anti Join" not in plan and "Filter: (token = " not in plan, plan
    assert "Filter: (doc_id = " not in plan and "Filter: (chunk_id = " not in plan, plan
    assert "ragspine_chunk_active_doc" in plan or "ragspine_chunk_doc" in plan, plan
