"""Concurrent replaces of one document against a real server: they serialize, every replace
gets its own version, exactly one version stays active, and a reader never sees zero or
mixed versions."""

from __future__ import annotations

import threading
from collections import defaultdict

from ragspine.stores.postgres import PostgresDatabase
from tests.helpers import make_chunk

ROUNDS = 30
SIZES = {"w1": (1, 2, 3), "w2": (4, 5, 6, 7), "s1": (8,), "s2": (9, 10)}  # chunk counts tell writers apart


def test_concurrent_replaces_leave_one_active_version_and_readers_see_whole_versions(pg_target) -> None:
    url, schema = pg_target
    setup = PostgresDatabase(url, schema=schema)
    store = setup.chunk_store("lib")
    store.replace_doc_chunks("doc", [make_chunk("doc", 0, "seed 0 0")])  # version 1: readers never see zero
    errors: list[BaseException] = []
    observed: list[list[tuple[int, str]]] = []
    done = threading.Event()
    shared = PostgresDatabase(url, schema=schema, pool_size=2)  # two writer threads sharing one pool
    owned: list[PostgresDatabase] = []
    go = threading.Barrier(5)

    def writer(tag: str, db: PostgresDatabase | None, rounds: int) -> None:
        if db is None:  # its own pool: locking across connections of separate engines
            db = PostgresDatabase(url, schema=schema, pool_size=1)
            owned.append(db)
        try:
            mine = db.chunk_store("lib")
            go.wait(30)
            sizes = SIZES[tag]
            for i in range(rounds):
                n = sizes[i % len(sizes)]
                mine.replace_doc_chunks("doc", [make_chunk("doc", k, f"{tag} {i} {k}") for k in range(n)])
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def reader() -> None:
        db = PostgresDatabase(url, schema=schema, pool_size=1)
        try:
            mine = db.chunk_store("lib")
            go.wait(30)
            while True:
                finished = done.is_set()  # one last read after the writers are done
                observed.append([(c.version, c.text) for c in mine.iter_chunks(doc_id="doc")])
                if finished:
                    break
        except BaseException as exc:  # pragma: no cover
            errors.append(exc)
        finally:
            db.close()

    read_thread = threading.Thread(target=reader)
    writers = [threading.Thread(target=writer, args=(t, None, ROUNDS)) for t in ("w1", "w2")]
    writers += [threading.Thread(target=writer, args=(t, shared, ROUNDS // 2)) for t in ("s1", "s2")]
    for t in (read_thread, *writers):
        t.start()
    for t in writers:
        t.join(120)
    done.set()
    read_thread.join(120)
    for db in (shared, *owned):
        db.close()
    assert not errors, errors

    # every replace got its own version, and a version is exactly one writer's one round
    rows = store.iter_chunks(doc_id="doc", include_inactive=True)
    by_version: dict[int, list[str]] = defaultdict(list)
    for c in rows:
        by_version[c.version].append(c.text)
    total = 1 + 2 * ROUNDS + 2 * (ROUNDS // 2)
    assert sorted(by_version) == list(range(1, total + 1))
    for version, texts in by_version.items():
        rounds = {t.rsplit(" ", 1)[0] for t in texts}
        assert len(rounds) == 1, (version, texts)
        tag, i = next(iter(rounds)).split()
        assert version == 1 or len(texts) == SIZES[tag][int(i) % len(SIZES[tag])], (version, texts)

    # exactly one active version: the last
    live = store.iter_chunks(doc_id="doc")
    assert {c.version for c in live} == {total}
    assert sorted(c.text for c in live) == sorted(by_version[total])
    assert store.count() == len(by_version[total])
    assert store.changes_since(0)[1] == ["doc"]
    assert sorted(v for (v,) in store.execute_read(
        "SELECT version FROM ragspine_change WHERE library_id = %s", ["lib"])) == list(range(1, total + 1))

    # the reader saw whole versions only: never zero rows, never two versions, never a part
    assert observed and all(observed)
    for seen in observed:
        versions = {v for v, _ in seen}
        assert len(versions) == 1, seen
        (version,) = versions
        assert sorted(t for _, t in seen) == sorted(by_version[version]), (version, seen)
    assert len({seen[0][0] for seen in observed}) > 1  # it really read while the writers wrote
    setup.close()


def test_change_sequence_numbers_of_a_library_follow_commit_order(pg_db: PostgresDatabase) -> None:
    """A follower that has read up to seq N must never later find a change < N committed:
    a replace waits for the library's in-flight change (here: a slow writer holding it)."""
    store = pg_db.chunk_store("lib-a")
    other_lib = pg_db.chunk_store("lib-b")
    done: list[int] = []
    with pg_db.engine.connect() as slow:  # an in-flight replace of lib-a, past its change-row insert
        slow.exec_driver_sql("SELECT pg_advisory_xact_lock(hashtextextended(%s, 2))", ("lib-a",))
        (slow_seq,) = slow.exec_driver_sql(
            "INSERT INTO ragspine_change (library_id, doc_id, version) VALUES ('lib-a', 'slow', 1) RETURNING seq"
        ).one()
        thread = threading.Thread(target=lambda: done.append(store.replace_doc_chunks("fast", [make_chunk("fast")])))
        thread.start()
        thread.join(0.5)
        assert thread.is_alive() and done == []  # waits: it may not take a seq after slow's yet
        assert store.changes_since(0) == (0, [])  # a follower sees nothing yet, so skips nothing
        other_lib.replace_doc_chunks("elsewhere", [make_chunk("elsewhere")])  # other libraries don't wait
        slow.commit()
    thread.join(30)
    assert done == [1]
    last, docs = store.changes_since(0)
    assert docs == ["slow", "fast"] and last > slow_seq
    assert [c.doc_id for c in other_lib.iter_chunks()] == ["elsewhere"]


def test_delete_library_waits_for_running_replaces_of_that_library(pg_db: PostgresDatabase) -> None:
    store = pg_db.chunk_store("lib-a")
    store.replace_doc_chunks("d", [make_chunk("d")])
    deleted: list[bool] = []
    with pg_db.engine.connect() as replacing:  # holds what a running replace holds
        replacing.exec_driver_sql("SELECT pg_advisory_xact_lock_shared(hashtextextended(%s, 1))", ("lib-a",))
        thread = threading.Thread(target=lambda: deleted.append(pg_db.delete_library("lib-a")))
        thread.start()
        thread.join(0.5)
        assert thread.is_alive() and store.count() == 1
        replacing.commit()
    thread.join(30)
    assert deleted == [True] and store.count(include_inactive=True) == 0
