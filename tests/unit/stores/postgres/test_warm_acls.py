"""Document ACLs in the warm layout (``RAGSPINE_LEXICAL_INDEX=warm``): while the in-process
index builds, PostgreSQL's postings answer a principal's search too (its view, statistics over
the rows it may read, computed in SQL); after the switch the in-process index does; a view
goes back to the index that made it. Every answer is ``bm25_scores`` over L', bit for bit."""

from __future__ import annotations

import pytest

from tests.helpers import needs

needs("sqlalchemy")

from ragspine.retrieval.lexical.index import InMemoryLexicalIndex, RowView  # noqa: E402
from ragspine.retrieval.lexical.warm import WarmingLexicalIndex  # noqa: E402
from ragspine.security.principals import Principal, Viewer  # noqa: E402
from ragspine.stores.postgres import PostgresDatabase  # noqa: E402
from ragspine.stores.postgres.lexical import PgView, PostgresLexicalIndex  # noqa: E402
from tests.unit.stores.postgres.test_acl_postings import PgHistory  # noqa: E402
from tests.unit.stores.postgres.test_warm import _held_build  # noqa: E402

HR = Viewer(Principal.of("u1", ["hr"]))


@pytest.fixture
def pg(pg15_schema, tmp_path):
    url, schema = pg15_schema
    db = PostgresDatabase(url, schema=schema, pool_size=3, persist_root=str(tmp_path / "lexical"))
    db.init_schema()
    yield db
    db.close()


def _warm(store) -> WarmingLexicalIndex:  # type: ignore[no-untyped-def]
    return WarmingLexicalIndex(InMemoryLexicalIndex(store, kernel="numpy"), PostgresLexicalIndex(store))


def test_the_postings_answer_a_principal_while_the_index_builds_then_the_index_does(pg) -> None:
    h = PgHistory(pg, seed=40, index=_warm)
    release = _held_build(h.index)
    h.write(80)
    for _ in range(3):
        h.check()  # the build is held: the fallback answers every viewer, never waiting for it
        h.change_acls(10)
    assert h.index.serving is h.index.fallback and not h.index.wait_ready(0)
    before = h.index.view(HR)
    assert isinstance(before, PgView)
    release.set()
    assert h.index.wait_ready(30)
    h.check()
    h.check()
    assert h.index.serving is h.index.follower and isinstance(h.index.view(HR), RowView)
    chunks = h.visible(HR)
    for query in h.queries(4):  # a view made before the switch goes to the postings that made it
        got = [(x.chunk_id, x.score, x.version) for x in h.index.search(query, top_k=10, view=before)]
        assert got == h.reference(chunks, query, None, 10)
    assert h.compared >= 30
