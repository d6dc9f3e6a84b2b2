"""The in-process lexical index following a PostgreSQL library (``RAGSPINE_LEXICAL_INDEX=memory``):
saved on this host under ``RAGSPINE_LEXICAL_DIR``, memory-mapped by the next process and
replayed forward from the change log, never adopted by another library's or database's history,
removed with its library; rankings equal the reference throughout."""

from __future__ import annotations

import os
import random
import shutil

import numpy as np
import pytest

from tests.helpers import needs

needs("sqlalchemy")

from ragspine.retrieval.lexical.index import InMemoryLexicalIndex  # noqa: E402
from ragspine.stores.postgres import PostgresDatabase  # noqa: E402
from tests.unit.retrieval.lexical.test_index import _assert_matches_reference, _Oracle, _queries, _random_doc  # noqa: E402


def _fill(store, rng: random.Random, n_docs: int, prefix: str = "doc") -> None:
    store.replace_many([(f"{prefix}-{d:03d}", _random_doc(rng, f"{prefix}-{d:03d}", 8)) for d in range(n_docs)])


def _no_rebuild(index: InMemoryLexicalIndex) -> None:
    def refuse(seq: int) -> None:
        raise AssertionError("the index was rebuilt from the store instead of loaded")

    index._rebuild_from_store = refuse  # type: ignore[method-assign]


def _rebuilds(index: InMemoryLexicalIndex) -> list[int]:
    calls: list[int] = []
    original = index._rebuild_from_store

    def counted(seq: int) -> None:
        calls.append(seq)
        original(seq)

    index._rebuild_from_store = counted  # type: ignore[method-assign]
    return calls


@pytest.fixture
def follow_db(pg_target, tmp_path):
    url, schema = pg_target
    db = PostgresDatabase(url, schema=schema, pool_size=2, persist_root=str(tmp_path / "lexical"))
    db.init_schema()
    yield db
    db.close()


def test_saved_then_loaded_by_the_next_process_and_replayed_forward(follow_db, pg_target, tmp_path) -> None:
    rng = random.Random(3)
    store = follow_db.chunk_store("lib")
    _fill(store, rng, 40)
    first = InMemoryLexicalIndex(store)
    first.refresh()
    where = store.persist_dir("lexical")
    assert where and where.startswith(str(tmp_path / "lexical")) and os.path.exists(os.path.join(where, "CURRENT"))
    _fill(store, rng, 10, prefix="late")  # written after the save: replayed from the change log
    store.replace_doc_chunks("doc-001", _random_doc(rng, "doc-001", 3))
    store.replace_doc_chunks("doc-002", [])

    url, schema = pg_target
    again = PostgresDatabase(url, schema=schema, pool_size=1, persist_root=str(tmp_path / "lexical"))  # "the next process"
    try:
        reopened = again.chunk_store("lib")
        loaded = InMemoryLexicalIndex(reopened)
        _no_rebuild(loaded)
        loaded.refresh()
        rows = loaded._base.postings.rows
        assert not rows.flags.owndata and isinstance(rows.base, np.memmap)  # mapped, not copied
        assert loaded.seq == reopened.change_seq() and len(loaded) == reopened.count()
        oracle = _Oracle(reopened)
        for q in _queries(rng, 25):
            _assert_matches_reference(loaded, reopened, q, oracle)
    finally:
        again.close()


def test_another_librarys_history_is_never_adopted(follow_db) -> None:
    rng = random.Random(5)
    a, b = follow_db.chunk_store("lib-a"), follow_db.chunk_store("lib-b")
    _fill(a, rng, 20, prefix="a")
    _fill(b, rng, 20, prefix="b")
    InMemoryLexicalIndex(a).refresh()
    a_dir, b_dir = a.persist_dir("lexical"), b.persist_dir("lexical")
    assert a_dir and b_dir and a_dir != b_dir
    shutil.copytree(a_dir, b_dir)  # lib-a's files where lib-b's belong: same seq range, other changes
    index = InMemoryLexicalIndex(b)
    rebuilt = _rebuilds(index)
    index.refresh()
    assert rebuilt, "lib-a's saved segment was adopted for lib-b"
    oracle = _Oracle(b)
    for q in _queries(rng, 15):
        _assert_matches_reference(index, b, q, oracle)


def test_each_database_and_schema_has_its_own_directory(follow_db, pg_target, tmp_path) -> None:
    url, schema = pg_target
    other = PostgresDatabase(url, schema="another_schema", persist_root=str(tmp_path / "lexical"))
    assert other.persist_dir("lib", "lexical") != follow_db.persist_dir("lib", "lexical")
    assert PostgresDatabase(url, schema=schema).persist_dir("lib", "lexical") is None  # no root: nothing saved
    assert PostgresDatabase(url, schema=schema, persist_root=None).chunk_store("lib").persist_dir("lexical") is None


def test_two_processes_saving_one_library_leave_a_loadable_index(follow_db) -> None:
    rng = random.Random(9)
    store = follow_db.chunk_store("lib")
    _fill(store, rng, 30)
    one, two = InMemoryLexicalIndex(store), InMemoryLexicalIndex(store)
    one.refresh()
    two.refresh()
    _fill(store, rng, 5, prefix="more")
    one.refresh()
    two.refresh()
    one.save()
    two.save()  # another process's segment just made current is not removed under it
    third = InMemoryLexicalIndex(store)
    _no_rebuild(third)
    third.refresh()
    oracle = _Oracle(store)
    for q in _queries(rng, 10):
        _assert_matches_reference(third, store, q, oracle)


def test_deleting_the_library_removes_this_hosts_saved_index(follow_db) -> None:
    store = follow_db.chunk_store("gone")
    _fill(store, random.Random(1), 5)
    InMemoryLexicalIndex(store).refresh()
    where = store.persist_dir("lexical")
    assert where and os.path.isdir(where)
    follow_db.delete_library("gone")
    assert not os.path.exists(where)
