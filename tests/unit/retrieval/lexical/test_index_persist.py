"""The in-process lexical index on disk: saved next to a SQLite file, memory-mapped by the next
process, replayed forward, never applied to another database's history; metadata masks from
the saved columns equal the reference filter."""

from __future__ import annotations

import os
import random
import shutil

import numpy as np
import pytest

from ragspine.retrieval.filtering.filters import parse_filter
from ragspine.retrieval.lexical import segments
from ragspine.retrieval.lexical.index import InMemoryLexicalIndex
from ragspine.retrieval.lexical.tokenizer import tokenize
from ragspine.stores.sqlite import SQLiteDatabase
from ragspine.testing.random_filters import random_filter
from tests.unit.retrieval.lexical.test_index import _assert_matches_reference, _Oracle, _queries, _random_doc


def _fill(store, rng: random.Random, n_docs: int, prefix: str = "doc") -> None:
    store.replace_many([(f"{prefix}-{d:03d}", _random_doc(rng, f"{prefix}-{d:03d}", 12)) for d in range(n_docs)])


def _no_rebuild(index: InMemoryLexicalIndex) -> None:
    def refuse(seq: int) -> None:
        raise AssertionError("the index was rebuilt from the store instead of loaded")

    index._rebuild_from_store = refuse  # type: ignore[method-assign]


@pytest.fixture
def db_path(tmp_path):
    return tmp_path / "chunks.db"


def test_saved_on_build_loaded_memory_mapped_and_replayed_forward(db_path) -> None:
    rng = random.Random(7)
    db = SQLiteDatabase(db_path)
    store = db.chunk_store("lib")
    _fill(store, rng, 60)
    first = InMemoryLexicalIndex(store)
    first.refresh()
    where = store.persist_dir("lexical")
    assert where and os.path.exists(os.path.join(where, "CURRENT"))
    built = first._base.postings.rows  # the builder too serves the saved file's pages, not its own arrays
    assert not built.flags.owndata and isinstance(built.base, np.memmap)
    queries = _queries(rng, 20)
    expected = {tuple(q): first.search(q) for q in queries}
    db.close()

    db = SQLiteDatabase(db_path)  # "the next process"
    store = db.chunk_store("lib")
    loaded = InMemoryLexicalIndex(store)
    _no_rebuild(loaded)
    loaded.refresh()
    rows = loaded._base.postings.rows  # mapped, not read into memory
    assert not rows.flags.owndata and isinstance(rows.base, np.memmap)
    assert loaded.seq == store.change_seq() and len(loaded) == store.count()
    for q in queries:
        assert loaded.search(q) == expected[tuple(q)]

    # changes after the save: replayed on load (not saved yet: below the merge threshold)
    store.replace_doc_chunks("doc-001", _random_doc(rng, "doc-001", 5))
    store.replace_doc_chunks("doc-002", [])
    store.replace_doc_chunks("new-doc", _random_doc(rng, "new-doc", 5))
    again = InMemoryLexicalIndex(store)
    _no_rebuild(again)
    again.refresh()
    oracle = _Oracle(store)
    for q in queries:
        _assert_matches_reference(again, store, q, oracle)
    assert again.version_of("doc-001#0") == 2 and again.version_of("doc-002#0") is None
    db.close()


def test_a_saved_index_of_another_database_is_never_used(tmp_path) -> None:
    rng = random.Random(11)
    a = SQLiteDatabase(tmp_path / "a.db")
    _fill(a.chunk_store("lib"), rng, 30)
    InMemoryLexicalIndex(a.chunk_store("lib")).refresh()
    b = SQLiteDatabase(tmp_path / "b.db")
    store_b = b.chunk_store("lib")
    _fill(store_b, rng, 30, prefix="other")  # same library name, same change count, other history
    assert store_b.change_seq() == a.chunk_store("lib").change_seq()
    shutil.copytree(str(tmp_path / "a.db") + ".lexical", str(tmp_path / "b.db") + ".lexical")
    index = InMemoryLexicalIndex(store_b)
    index.refresh()
    oracle = _Oracle(store_b)
    for q in _queries(rng, 15):
        _assert_matches_reference(index, store_b, q, oracle)
    assert all(h.chunk_id.startswith("other-") for h in index.search(tokenize("revenue margin")))
    a.close()
    b.close()


def test_unreadable_or_old_format_files_are_rebuilt(db_path, monkeypatch) -> None:
    rng = random.Random(3)
    db = SQLiteDatabase(db_path)
    store = db.chunk_store("lib")
    _fill(store, rng, 20)
    InMemoryLexicalIndex(store).refresh()
    where = store.persist_dir("lexical")
    with open(os.path.join(where, "CURRENT"), encoding="utf-8") as fh:
        current = os.path.join(where, fh.read().strip())
    os.remove(os.path.join(current, "rows.npy"))
    index = InMemoryLexicalIndex(store)
    index.refresh()  # rebuilt (and saved again)
    _assert_matches_reference(index, store, ["revenue"])
    monkeypatch.setattr(segments, "FORMAT", "ragspine-lexical/999")
    assert segments.load_segment(where) is None  # a newer/older layout is not read
    db.close()


def test_no_files_for_memory_databases_custom_tokenizers_or_persist_false(tmp_path) -> None:
    mem = SQLiteDatabase(":memory:")
    store = mem.chunk_store("lib")
    _fill(store, random.Random(1), 5)
    index = InMemoryLexicalIndex(store)
    index.refresh()
    assert index._persist_dir is None
    db = SQLiteDatabase(tmp_path / "x.db")
    store = db.chunk_store("lib")
    _fill(store, random.Random(1), 5)
    InMemoryLexicalIndex(store, tokenizer=lambda t: t.split()).refresh()
    InMemoryLexicalIndex(store, persist=False).refresh()
    assert not os.path.exists(str(tmp_path / "x.db") + ".lexical")
    mem.close()
    db.close()


def test_filter_masks_over_saved_columns_and_added_rows_equal_the_reference(db_path) -> None:
    rng = random.Random(5)
    db = SQLiteDatabase(db_path)
    store = db.chunk_store("lib")
    _fill(store, rng, 50)
    InMemoryLexicalIndex(store).refresh()
    for d in range(10):  # rows added after the save: evaluated from their metadata
        store.replace_doc_chunks(f"late-{d}", _random_doc(rng, f"late-{d}", 6))
    index = InMemoryLexicalIndex(store)
    _no_rebuild(index)
    index.refresh()
    assert len(index._d_meta) > 0 and index._base.n_rows > 0
    active = store.iter_chunks()
    filters = [parse_filter({"topic": "sales"}), parse_filter([["year", "gte", 2023], ["flag", "eq", True]])]
    filters += [random_filter(rng, ("topic", "year", "flag", "missing")) for _ in range(25)]
    for f in filters:
        expected = sorted((c.chunk_id, c.version) for c in active if f.matches(c.metadata))
        assert sorted(index.candidates(f)) == expected, f
        q = tokenize("revenue margin 营收")
        allowed = {cid for cid, _ in expected}
        assert [h.chunk_id for h in index.search(q, metadata_filter=f)] == [
            h.chunk_id for h in index.search(q) if h.chunk_id in allowed
        ]
    db.close()


def test_many_small_refreshes_keep_few_segments(db_path) -> None:
    rng = random.Random(9)
    db = SQLiteDatabase(db_path)
    store = db.chunk_store("lib")
    _fill(store, rng, 400)
    index = InMemoryLexicalIndex(store)
    index.refresh()
    for d in range(40):  # one small change per refresh, below the merge threshold
        store.replace_doc_chunks(f"doc-{d:03d}", _random_doc(rng, f"doc-{d:03d}", 3))
        index.refresh()
        assert len(index._segments) <= 17
    oracle = _Oracle(store)
    for q in _queries(rng, 12):
        _assert_matches_reference(index, store, q, oracle)
    db.close()


@pytest.mark.parametrize("kernel", ["numpy", pytest.param("numba", marks=pytest.mark.skipif(
    not __import__("ragspine.retrieval.lexical.kernel", fromlist=["available"]).available(), reason="numba is not installed"))])
def test_pruned_top_k_equals_full_scoring_bit_for_bit(tmp_path, kernel) -> None:
    """MaxScore top-k — numpy (rare tokens essential, common ones bounded by their idf) and the
    compiled block-max kernel — returns exactly the full ranking's first k, ties included, with
    or without filters and retired rows."""
    rng = random.Random(17)
    np_rng = np.random.default_rng(17)
    words = [f"w{i}" for i in range(400)]
    weights = 1.0 / np.arange(1, 401) ** 1.2
    weights /= weights.sum()
    db = SQLiteDatabase(tmp_path / "zipf.db")
    store = db.chunk_store("lib")

    def doc(doc_id: str) -> list:
        from tests.helpers import make_chunk

        return [
            make_chunk(doc_id, i, " ".join(np_rng.choice(words, size=rng.randint(3, 40), p=weights)),
                       metadata={"topic": rng.choice(["a", "b", "c"]), "n": rng.randint(0, 9)})
            for i in range(rng.randint(1, 4))
        ]

    store.replace_many([(f"d{i:04d}", doc(f"d{i:04d}")) for i in range(1500)])
    index = InMemoryLexicalIndex(store, kernel=kernel)
    index.prune_from = 0  # this library is small: prune anyway
    index.refresh()
    pruned_used = 0
    real = index._kernel_top_k if kernel == "numba" else index._pruned_top_k

    def spy(*a, **kw):
        nonlocal pruned_used
        out = real(*a, **kw)
        pruned_used += out is not None
        return out

    if kernel == "numba":
        index._kernel_top_k = spy  # type: ignore[method-assign]
    else:
        index._pruned_top_k = spy  # type: ignore[method-assign]
    filters = [None, parse_filter({"topic": "a"}), parse_filter([["n", "lt", 3]])]
    for _ in range(2):
        for qi in range(60):
            q = list(np_rng.choice(words, size=rng.randint(1, 6), p=weights)) + ([words[rng.randrange(400)]] if qi % 2 else [])
            for f in filters:
                full = index.search(q, metadata_filter=f)
                for k in (1, 3, 10, 50, 2000):
                    assert index.search(q, metadata_filter=f, top_k=k) == full[:k], (q, f, k)
        for i in range(0, 1500, 7):  # retired and replaced rows (dead rows until the next merge)
            store.replace_doc_chunks(f"d{i:04d}", [] if i % 2 else doc(f"d{i:04d}"))
        index.refresh()
    assert pruned_used > 100  # the pruned path was actually taken
    db.close()


@pytest.mark.skipif(not __import__("ragspine.retrieval.lexical.kernel", fromlist=["available"]).available(), reason="numba is not installed")
def test_the_kernel_keeps_every_tie_and_orders_them_by_chunk_id(tmp_path) -> None:
    """Hundreds of rows with one score: top-k is the k smallest chunk ids of the tie, whatever
    the row order; a filter, a repeated token and an unknown token change nothing else."""
    from tests.helpers import make_chunk

    db = SQLiteDatabase(tmp_path / "ties.db")
    store = db.chunk_store("lib")
    rng = random.Random(3)
    fast, slow = InMemoryLexicalIndex(store, kernel="numba"), InMemoryLexicalIndex(store, kernel="numpy")
    fast.prune_from = 0  # a small library: take the kernel anyway
    for start in range(500, -1, -100):  # later rows hold smaller chunk ids: row order is not id order
        ids = [f"d{i:04d}" for i in range(start, start + 100)]
        rng.shuffle(ids)
        store.replace_many([(d, [make_chunk(d, 0, "alpha beta gamma" if int(d[1:]) % 3 else "alpha beta delta",
                                            metadata={"odd": int(d[1:]) % 2})]) for d in ids])
        fast.refresh()
        slow.refresh()
    assert fast.chunk_id(0) == "d0500#0"
    for q in (["alpha"], ["alpha", "gamma"], ["delta", "alpha", "delta"], ["nothing", "beta"], ["nothing"]):
        for f in (None, parse_filter({"odd": 1})):
            full = slow.search(q, metadata_filter=f)
            for k in (1, 5, 64, 599, 600, 601):
                assert fast.search(q, metadata_filter=f, top_k=k) == full[:k], (q, f, k)
    db.close()


def test_merges_keep_ids_and_metadata_columns_right(db_path) -> None:
    """Merges copy the kept rows' ids and metadata codes in numpy and append the new rows:
    after many merges (and a reload), lookups and filters still equal the store."""
    rng = random.Random(23)
    db = SQLiteDatabase(db_path)
    store = db.chunk_store("lib")
    _fill(store, rng, 80)
    index = InMemoryLexicalIndex(store, merge_fraction=0.05)
    index.merge_min_rows = 0
    index.refresh()
    merges = 0
    for step in range(12):
        for _ in range(rng.randint(5, 15)):
            d = rng.randrange(120)
            chunks = [] if rng.random() < 0.25 else _random_doc(rng, f"doc-{d:03d}", 6)
            for c in chunks:  # new fields and values appear over time
                c.metadata[f"f{step % 3}"] = rng.choice([1, 1.0, True, "1", None])
            store.replace_doc_chunks(f"doc-{d:03d}", chunks)
        before = index._base
        index.refresh()
        merges += index._base is not before
    assert merges >= 3
    for current in (index, InMemoryLexicalIndex(store)):  # the live one and a reload
        current.refresh()
        active = store.iter_chunks()
        assert sorted(current.candidates()) == sorted((c.chunk_id, c.version) for c in active)
        assert all(current.version_of(c.chunk_id) == c.version for c in active)
        for f in [parse_filter({"f0": 1}), parse_filter({"f1": True}), parse_filter({"f2": "1"}),
                  parse_filter([["f0", "eq", 1.0]])] + [random_filter(rng, ("topic", "year", "flag", "f0")) for _ in range(15)]:
            assert sorted(current.candidates(f)) == sorted((c.chunk_id, c.version) for c in active if f.matches(c.metadata)), f
    db.close()


def test_deleting_a_library_removes_its_saved_index(db_path) -> None:
    db = SQLiteDatabase(db_path)
    for lib in ("keep", "drop"):
        store = db.chunk_store(lib)
        _fill(store, random.Random(2), 5)
        InMemoryLexicalIndex(store).refresh()
    keep, drop = db.chunk_store("keep").persist_dir("lexical"), db.chunk_store("drop").persist_dir("lexical")
    assert os.path.exists(keep) and os.path.exists(drop)
    assert db.delete_library("drop")
    assert not os.path.exists(drop) and os.path.exists(keep)
    db.close()


def test_searches_go_on_while_a_merge_builds(db_path) -> None:
    """A merge builds the new base holding only the writers' lock: a search (and a refresh with
    nothing new) answers meanwhile, from the state before the merge; afterwards the merged
    index answers the same."""
    import threading

    rng = random.Random(31)
    db = SQLiteDatabase(db_path)
    store = db.chunk_store("lib")
    _fill(store, rng, 60)
    index = InMemoryLexicalIndex(store)
    index.refresh()
    for d in range(20):
        store.replace_doc_chunks(f"doc-{d:03d}", _random_doc(rng, f"doc-{d:03d}", 4))
    index.refresh()  # below the merge threshold: rows added as a delta
    query = tokenize("revenue margin supply")
    before = index.search(query, top_k=10)
    building, release = threading.Event(), threading.Event()
    real = index._merged_segment

    def slow_merge():
        building.set()
        assert release.wait(10)
        return real()

    index._merged_segment = slow_merge  # type: ignore[method-assign]
    merger = threading.Thread(target=index.save)
    merger.start()
    assert building.wait(10)
    answered: list = []
    searcher = threading.Thread(target=lambda: (index.refresh(), answered.append(index.search(query, top_k=10))))
    searcher.start()
    searcher.join(5)
    assert answered == [before]  # answered while the merge was still building
    release.set()
    merger.join(10)
    assert not merger.is_alive() and index._segments == []  # merged
    assert index.search(query, top_k=10) == before
    db.close()


def test_a_save_leaves_what_another_process_is_saving_or_just_saved(tmp_path) -> None:
    """Several processes save one library's index into one directory (the PostgreSQL follower
    on one host): a save removes older segments, but not another's segment still being written
    or just made current; an abandoned one goes once it is old."""
    where = str(tmp_path / "seg")
    os.makedirs(where)
    writing = os.path.join(where, "seg-7-aaaaaaaaaaaa.tmp")  # another process, mid-save
    finished = os.path.join(where, "seg-7-bbbbbbbbbbbb")  # another process's, a moment ago
    stale = os.path.join(where, "seg-3-cccccccccccc")  # long superseded
    for path in (writing, finished, stale):
        os.makedirs(path)
    old = os.stat(stale).st_mtime - 3 * segments._OLD_GRACE_S
    os.utime(stale, (old, old))
    mine = segments.save_segment(segments.Segment.empty(), where)
    assert os.path.isdir(writing) and os.path.isdir(finished) and os.path.isdir(mine)
    assert not os.path.exists(stale)
    for path in (writing, finished):
        very_old = os.stat(path).st_mtime - 2 * segments._TMP_GRACE_S
        os.utime(path, (very_old, very_old))
    again = segments.save_segment(segments.Segment.empty(), where)
    assert sorted(os.listdir(where)) == sorted(["CURRENT", os.path.basename(again), os.path.basename(mine)])
    assert segments.load_segment(where) is not None
