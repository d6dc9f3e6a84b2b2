"""RAGSPINE_PG_POSTINGS=off: writes skip the PostgreSQL postings (the in-process index
following the library needs none), the library is marked incomplete in the same transaction,
the PostgreSQL index refuses it with the fix instead of answering from part of it, and
``rebuild_postings`` (``ragspine migrate --rebuild-postings``) makes it whole again."""

from __future__ import annotations

import random

import pytest

from tests.helpers import needs

needs("sqlalchemy")

from ragspine.cli import main  # noqa: E402
from ragspine.config import load_settings  # noqa: E402
from ragspine.errors import ConfigError  # noqa: E402
from ragspine.retrieval.lexical.index import InMemoryLexicalIndex  # noqa: E402
from ragspine.stores.postgres import PostgresDatabase  # noqa: E402
from ragspine.stores.postgres.lexical import PostgresLexicalIndex  # noqa: E402
from tests.unit.retrieval.lexical.test_index import _assert_matches_reference, _Oracle, _queries, _random_doc  # noqa: E402


def _db(pg_target, postings: bool) -> PostgresDatabase:
    url, schema = pg_target
    db = PostgresDatabase(url, schema=schema, pool_size=1, postings=postings)
    db.init_schema()
    return db


def _fill(store, rng: random.Random, n: int, prefix: str = "d") -> None:
    store.replace_many([(f"{prefix}{i:03d}", _random_doc(rng, f"{prefix}{i:03d}", 5)) for i in range(n)])


def _postings(db, library: str) -> int:
    return int(db.query("SELECT count(*) FROM ragspine_lex_posting WHERE library_id = %(l)s", {"l": library})[0][0])


def test_writes_without_postings_are_refused_by_the_postgres_index_and_followed_in_process(pg_target) -> None:
    rng = random.Random(4)
    off = _db(pg_target, postings=False)
    try:
        store = off.chunk_store("lib")
        _fill(store, rng, 30)
        assert _postings(off, "lib") == 0 and not off.postings_complete("lib")
        with pytest.raises(ConfigError, match=r"RAGSPINE_PG_POSTINGS=off.*RAGSPINE_LEXICAL_INDEX=memory.*--rebuild-postings lib"):
            PostgresLexicalIndex(store).refresh()
        follower = InMemoryLexicalIndex(store, persist=False)
        follower.refresh()
        oracle = _Oracle(store)
        for q in _queries(rng, 15):
            _assert_matches_reference(follower, store, q, oracle)
        assert off.postings_complete("other")  # a library never written is not incomplete
    finally:
        off.close()


def test_one_write_without_postings_marks_a_complete_library_until_it_is_rebuilt(pg_target) -> None:
    rng = random.Random(8)
    on, off = _db(pg_target, postings=True), _db(pg_target, postings=False)
    try:
        _fill(on.chunk_store("lib"), rng, 20)
        assert on.postings_complete("lib")
        off.chunk_store("lib").replace_doc_chunks("d003", _random_doc(rng, "d003", 3))  # one document, postings skipped
        _fill(on.chunk_store("lib"), rng, 5, prefix="late")  # later writes with postings do not make it whole
        assert not on.postings_complete("lib")
        with pytest.raises(ConfigError, match="incomplete"):
            PostgresLexicalIndex(on.chunk_store("lib")).refresh()
        store = on.chunk_store("lib")
        assert on.rebuild_postings("lib") == store.count()
        assert on.postings_complete("lib")
        index = PostgresLexicalIndex(store)
        index.refresh()
        oracle = _Oracle(store)
        for q in _queries(rng, 20):
            _assert_matches_reference(index, store, q, oracle)
    finally:
        on.close()
        off.close()


def test_the_setting_follows_the_lexical_index_unless_given(pg_target, tmp_path) -> None:
    url, schema = pg_target
    env = {"RAGSPINE_CHUNK_STORE": url, "RAGSPINE_PG_SCHEMA": schema}

    def postings(**more: str) -> bool:
        settings = load_settings({**env, **more})
        return PostgresDatabase.from_config(PostgresDatabase.parse(url, None), settings).postings  # type: ignore[arg-type]

    assert postings() is True  # auto: the PostgreSQL index is the default there
    assert postings(RAGSPINE_LEXICAL_INDEX="memory") is False
    assert postings(RAGSPINE_LEXICAL_INDEX="memory", RAGSPINE_PG_POSTINGS="on") is True
    assert postings(RAGSPINE_PG_POSTINGS="off") is False
    with pytest.raises(ConfigError, match="RAGSPINE_PG_POSTINGS"):
        load_settings({**env, "RAGSPINE_PG_POSTINGS": "sometimes"})


def test_cli_rebuilds_the_named_libraries(pg_target, capsys) -> None:
    url, schema = pg_target
    off = _db(pg_target, postings=False)
    try:
        _fill(off.chunk_store("a"), random.Random(1), 6)
        assert main(["migrate", "--url", url, "--schema", schema, "--rebuild-postings", "a"]) == 0
        assert "a: postings of" in capsys.readouterr().out
        assert off.postings_complete("a") and _postings(off, "a") > 0
    finally:
        off.close()
