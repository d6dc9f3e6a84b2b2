"""Closing a warm lexical index stops its background build and waits for it, and a Stack closes
its lexical indexes before its database: a build still reading through the connection pool
when the pool is disposed would leave connections open that nothing closes (psycopg's
"deleted while still open" ResourceWarning, once collected)."""

from __future__ import annotations

import random
import threading
import time

import pytest

from tests.helpers import needs

needs("sqlalchemy")

from ragspine.config import load_settings  # noqa: E402
from ragspine.retrieval.lexical import index as index_module  # noqa: E402
from ragspine.retrieval.lexical.index import InMemoryLexicalIndex  # noqa: E402
from ragspine.retrieval.lexical.warm import WarmingLexicalIndex  # noqa: E402
from ragspine.stack import Stack  # noqa: E402
from ragspine.stores.postgres import PostgresDatabase  # noqa: E402
from ragspine.stores.postgres.lexical import PostgresLexicalIndex  # noqa: E402
from tests.unit.retrieval.lexical.test_index import _random_doc  # noqa: E402

BUILD_THREAD = "ragspine-lexical-warm"


@pytest.fixture
def slow_build(monkeypatch) -> threading.Event:
    """The background build tokenizes 5 chunks per batch and waits at each batch until the test
    has seen it start (the returned event is set at its first batch): it is still under way when
    the test closes."""
    started = threading.Event()
    original = InMemoryLexicalIndex._add_rows

    def add_rows(self, *args, **kwargs):
        if threading.current_thread().name == BUILD_THREAD:
            started.set()
            time.sleep(0.05)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(index_module, "_ADD_BATCH", 5)
    monkeypatch.setattr(InMemoryLexicalIndex, "_add_rows", add_rows)
    return started


def _fill(store, n: int = 40) -> None:
    rng = random.Random(11)
    store.replace_many([(f"doc{d:03d}", _random_doc(rng, f"doc{d:03d}", 6)) for d in range(n)])


def _builds() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == BUILD_THREAD]


def test_close_stops_the_background_build_and_returns_its_connections(pg15_schema, tmp_path, slow_build) -> None:
    url, schema = pg15_schema
    db = PostgresDatabase(url, schema=schema, pool_size=2, persist_root=str(tmp_path / "lexical"))
    try:
        store = db.chunk_store("lib")
        _fill(store)
        index = WarmingLexicalIndex(InMemoryLexicalIndex(store), PostgresLexicalIndex(store))
        index.refresh()  # the postings answer; the build starts in the background
        assert slow_build.wait(10)
        index.close()
        assert not _builds() and index.state == "closed"
        assert index.follower.seq is None  # given up: nothing half-built is served
        assert db.engine.pool.checkedout() == 0
        index.refresh()  # after close: no build starts again, the postings answer
        assert not _builds() and index.serving is index.fallback
        index.close()  # once more: nothing to do
    finally:
        db.close()


def test_closing_a_stack_stops_a_warm_build_before_its_database(pg15_schema, tmp_path, slow_build, monkeypatch) -> None:
    url, schema = pg15_schema
    settings = load_settings({
        "RAGSPINE_CHUNK_STORE": url, "RAGSPINE_PG_SCHEMA": schema, "RAGSPINE_RETRIEVAL_MODE": "economy",
        "RAGSPINE_LEXICAL_INDEX": "warm", "RAGSPINE_LEXICAL_DIR": str(tmp_path / "lex"),
    })
    at_close: list[tuple[int, int]] = []  # (builds alive, connections checked out) when the database closes
    original = PostgresDatabase.close

    def close(self) -> None:
        at_close.append((len(_builds()), self._engine.pool.checkedout() if self._engine is not None else 0))
        original(self)

    monkeypatch.setattr(PostgresDatabase, "close", close)
    stack = Stack(settings)
    try:
        _fill(stack.db.chunk_store("lib"))
        lexical = stack.pipeline("lib").retriever.index
        assert isinstance(lexical, WarmingLexicalIndex)
        lexical.refresh()
        assert slow_build.wait(10)
    finally:
        stack.close()
    assert at_close == [(0, 0)]
    assert lexical.state == "closed"
