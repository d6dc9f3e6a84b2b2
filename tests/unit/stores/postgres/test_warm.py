"""``auto`` on PostgreSQL picks the in-process index, warm from the first query
(``RAGSPINE_LEXICAL_INDEX=warm``): saved files are loaded, else PostgreSQL's postings answer
while the in-process index builds in the background, and the switch never loses a write.
Without a writable RAGSPINE_LEXICAL_DIR, ``auto`` is the postings layout, with a one-line
notice; pinned layouts stay pinned."""

from __future__ import annotations

import logging
import random
import threading
import time

import pytest

from tests.helpers import needs

needs("sqlalchemy")

from ragspine.config import load_settings  # noqa: E402
from ragspine.errors import ConfigError  # noqa: E402
from ragspine.retrieval.lexical.base import make_lexical_index  # noqa: E402
from ragspine.retrieval.lexical.index import InMemoryLexicalIndex  # noqa: E402
from ragspine.retrieval.lexical.warm import WarmingLexicalIndex, writable_dir  # noqa: E402
from ragspine.stack import Stack, describe_stack  # noqa: E402
from ragspine.stores.postgres import PostgresDatabase  # noqa: E402
from ragspine.stores.postgres.lexical import PostgresLexicalIndex  # noqa: E402
from ragspine.testing.bm25_reference import IncrementalReference  # noqa: E402
from tests.unit.retrieval.lexical.test_index import _queries, _random_doc  # noqa: E402


@pytest.fixture
def pg(pg15_schema, tmp_path):
    url, schema = pg15_schema
    db = PostgresDatabase(url, schema=schema, pool_size=3, persist_root=str(tmp_path / "lexical"))
    db.init_schema()
    yield db
    db.close()


def _fill(store, rng: random.Random, n: int, prefix: str = "doc") -> None:
    store.replace_many([(f"{prefix}{d:03d}", _random_doc(rng, f"{prefix}{d:03d}", 6)) for d in range(n)])


def _same_as_reference(index, store) -> None:
    ref = IncrementalReference()
    ref.reload(store)
    index.refresh()
    for q in _queries(random.Random(3), 20):
        for top_k in (None, 5):
            assert [(h.chunk_id, h.score, h.version) for h in index.search(q, top_k=top_k)] == ref.ranking(q, None, top_k), q


def _held_build(index: WarmingLexicalIndex) -> threading.Event:
    """Hold the in-process build until the returned event is set."""
    release = threading.Event()
    real = index.follower.refresh

    def held() -> None:
        release.wait(30)
        real()

    index.follower.refresh = held  # type: ignore[method-assign]
    return release


def test_a_new_host_answers_from_the_postings_while_the_index_builds_then_switches(pg) -> None:
    store = pg.chunk_store("lib")
    _fill(store, random.Random(1), 40)
    index = WarmingLexicalIndex(InMemoryLexicalIndex(store), PostgresLexicalIndex(store))
    release = _held_build(index)
    _same_as_reference(index, store)  # the first refresh returns at once: the postings answer
    assert index.serving is index.fallback and "background" in index.state
    _fill(store, random.Random(2), 5, prefix="during")  # written while it builds: the postings show it
    _same_as_reference(index, store)
    release.set()
    assert index.wait_ready(30)
    _fill(store, random.Random(3), 5, prefix="after")  # written after the build, before the switch
    _same_as_reference(index, store)  # the switch catches up first: nothing goes back in time
    assert index.serving is index.follower and index.state == "ready"
    assert index.follower.origin == "built" and index.resident_rows == len(index.follower)


def test_a_host_with_saved_files_loads_them_before_its_first_answer(pg) -> None:
    store = pg.chunk_store("lib")
    _fill(store, random.Random(4), 30)
    InMemoryLexicalIndex(store).refresh()  # an earlier process saved it
    _fill(store, random.Random(5), 3, prefix="late")
    index = WarmingLexicalIndex(InMemoryLexicalIndex(store), PostgresLexicalIndex(store))
    index.refresh()
    assert index.serving is index.follower and index.follower.origin == "loaded"
    _same_as_reference(index, store)


def test_a_library_without_complete_postings_waits_for_the_in_process_index(pg15_schema, tmp_path) -> None:
    url, schema = pg15_schema
    db = PostgresDatabase(url, schema=schema, persist_root=str(tmp_path / "lexical"), postings=False)
    try:
        store = db.chunk_store("lib")
        _fill(store, random.Random(6), 20)  # written with RAGSPINE_PG_POSTINGS=off
        index = WarmingLexicalIndex(InMemoryLexicalIndex(store), PostgresLexicalIndex(store))
        _same_as_reference(index, store)
        assert index.serving is index.follower
    finally:
        db.close()


def test_a_failed_build_is_logged_and_the_postings_answer(pg, caplog) -> None:
    store = pg.chunk_store("lib")
    _fill(store, random.Random(7), 20)
    index = WarmingLexicalIndex(InMemoryLexicalIndex(store), PostgresLexicalIndex(store))

    def broken() -> None:
        raise OSError("disk full")

    index.follower.refresh = broken  # type: ignore[method-assign]
    with caplog.at_level(logging.WARNING, logger="ragspine.retrieval.lexical.warm"):
        index.refresh()
        deadline = time.monotonic() + 10
        while not index.state.startswith("failed") and time.monotonic() < deadline:
            time.sleep(0.01)
    assert "disk full" in caplog.text and index.state.startswith("failed")
    _same_as_reference(index, store)
    assert index.serving is index.fallback


def test_auto_is_warm_with_a_writable_directory_else_postgres_with_one_notice(pg15_schema, tmp_path, caplog) -> None:
    url, schema = pg15_schema
    base = {"RAGSPINE_CHUNK_STORE": url, "RAGSPINE_PG_SCHEMA": schema, "RAGSPINE_RETRIEVAL_MODE": "economy"}
    settings = load_settings({**base, "RAGSPINE_LEXICAL_DIR": str(tmp_path / "lex")})
    assert PostgresDatabase.auto_lexical_index(settings)[0] == "warm"
    assert dict(describe_stack(settings))["lexical index"].startswith("auto (warm: in-process, saved under")
    stack = Stack(settings)
    try:
        pipeline = stack.pipeline("lib")
        assert isinstance(pipeline.retriever.index, WarmingLexicalIndex)
    finally:
        stack.close()

    read_only = tmp_path / "ro"
    read_only.mkdir()
    read_only.chmod(0o500)
    for value, why in (("none", "RAGSPINE_LEXICAL_DIR is none"), (str(read_only / "lex"), "is not writable")):
        settings = load_settings({**base, "RAGSPINE_LEXICAL_DIR": value})
        name, reason = PostgresDatabase.auto_lexical_index(settings)
        if why == "is not writable" and writable_dir(str(read_only / "lex")):
            continue  # root ignores permissions: nothing to check
        assert name == "postgres" and why in reason
        assert f"auto (postgres: {reason})" == dict(describe_stack(settings))["lexical index"]
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="ragspine.stack"):
            for _ in range(2):
                stack = Stack(settings)
                try:
                    assert isinstance(stack.pipeline("lib").retriever.index, PostgresLexicalIndex)
                finally:
                    stack.close()
        assert len([r for r in caplog.records if why in r.getMessage()]) <= 1  # once per process


def test_pinned_layouts_stay_pinned_and_a_header_keeps_warm_off_the_postings(pg, tmp_path) -> None:
    store = pg.chunk_store("lib")
    settings = load_settings({"RAGSPINE_CHUNK_STORE": pg.url, "RAGSPINE_LEXICAL_DIR": str(tmp_path / "lex")})
    assert isinstance(make_lexical_index("postgres", store, settings=settings, auto="warm"), PostgresLexicalIndex)
    assert type(make_lexical_index("memory", store, settings=settings, auto="warm")) is InMemoryLexicalIndex
    assert isinstance(make_lexical_index("auto", store, settings=settings, auto="warm"), WarmingLexicalIndex)

    def header(chunk) -> str:
        return f"{chunk.title} {chunk.text}"

    header.persist_key = "header"  # type: ignore[attr-defined]
    assert type(make_lexical_index("auto", store, settings=settings, auto="warm", index_text=header)) is InMemoryLexicalIndex
    with pytest.raises(ConfigError, match="RAGSPINE_LEXICAL_INDEX=warm"):
        make_lexical_index("warm", store, settings=settings, auto="warm", index_text=header)


def test_warm_needs_postgresql_and_a_directory(sqlite_db, pg15_schema) -> None:
    with pytest.raises(ConfigError, match="PostgreSQL chunk store"):
        WarmingLexicalIndex.from_config(sqlite_db.chunk_store("lib"))
    url, schema = pg15_schema
    db = PostgresDatabase(url, schema=schema, persist_root=None)
    with pytest.raises(ConfigError, match="RAGSPINE_LEXICAL_DIR"):
        WarmingLexicalIndex.from_config(db.chunk_store("lib"))
