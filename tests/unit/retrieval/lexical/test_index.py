"""InMemoryLexicalIndex follows its ChunkStore and always equals the bm25_scores oracle."""

from __future__ import annotations

import random

import pytest

from ragspine.retrieval.chunking.chunking import Chunk
from ragspine.retrieval.filtering.filters import FilterCondition, MetadataFilter
from ragspine.retrieval.lexical.bm25 import bm25_scores
from ragspine.retrieval.lexical.index import (
    InMemoryLexicalIndex,
    LexicalHit,
    LexicalIndex,
)
from ragspine.retrieval.lexical.tokenizer import tokenize
from ragspine.stores.sqlite import SQLiteChunkStore, SQLiteDatabase
from tests.helpers import make_chunk

VOCAB = (
    "revenue sales margin supply chain china europe warranty policy board memo quarter "
    "fell rose because shortage demand price cost 营收 下滑 供应 链 売上 減少"
).split()


class _Oracle:
    """``bm25_scores`` over a snapshot of the store's active chunks, ordered by (-score, chunk_id)."""

    def __init__(self, store: SQLiteChunkStore) -> None:
        self.active = store.iter_chunks()
        self.tokens = [tokenize(c.text) for c in self.active]

    def ranking(self, query_tokens: list[str]) -> list[tuple[str, float, int]]:
        scores = bm25_scores(query_tokens, self.tokens)
        return sorted(
            ((c.chunk_id, s, c.version) for c, s in zip(self.active, scores, strict=False) if s > 0),
            key=lambda t: (-t[1], t[0]),
        )


def _assert_matches_reference(
    index: InMemoryLexicalIndex, store: SQLiteChunkStore, query_tokens: list[str], oracle: _Oracle | None = None
) -> None:
    expected = (oracle or _Oracle(store)).ranking(query_tokens)
    got = index.search(query_tokens)
    assert [h.chunk_id for h in got] == [e[0] for e in expected], query_tokens
    worst = max((abs(h.score - e[1]) for h, e in zip(got, expected, strict=True)), default=0.0)
    assert worst <= 1e-9, (query_tokens, worst)
    assert [h.version for h in got] == [e[2] for e in expected]


def _random_text(rng: random.Random) -> str:
    return " ".join(rng.choice(VOCAB) for _ in range(rng.randint(1, 12)))


def _random_doc(rng: random.Random, doc_id: str, max_chunks: int) -> list[Chunk]:
    return [
        make_chunk(
            doc_id,
            i,
            _random_text(rng),
            metadata={"topic": rng.choice(["sales", "supply", "legal"]), "year": rng.randint(2020, 2025), "flag": rng.random() < 0.5},
        )
        for i in range(rng.randint(1, max_chunks))
    ]


def _queries(rng: random.Random, n: int) -> list[list[str]]:
    out = [["revenue"], ["营收", "下滑"], ["nothing-matches"], [], ["revenue", "revenue", "margin"]]
    while len(out) < n:
        out.append(tokenize(_random_text(rng)))
    return out


@pytest.fixture
def mem_store():
    db = SQLiteDatabase(":memory:")
    db.init_schema()
    yield db.chunk_store("lib")
    db.close()


def test_protocol(mem_store: SQLiteChunkStore) -> None:
    assert isinstance(InMemoryLexicalIndex(mem_store), LexicalIndex)


def test_random_replaces_and_retirements_keep_the_index_equal_to_the_oracle(mem_store: SQLiteChunkStore) -> None:
    rng = random.Random(20240930)
    index = InMemoryLexicalIndex(mem_store, merge_fraction=0.1)
    merges = 0
    real_merge = index._merge

    def counting_merge() -> None:
        nonlocal merges
        merges += 1
        real_merge()

    index._merge = counting_merge  # type: ignore[method-assign]
    n_docs = 40
    for d in range(n_docs):  # an initial library, built in one go on the first refresh
        mem_store.replace_doc_chunks(f"doc-{d:03d}", _random_doc(rng, f"doc-{d:03d}", 20))
    index.refresh()
    assert len(index) == mem_store.count()
    queries = _queries(rng, 25)
    oracle = _Oracle(mem_store)
    for q in queries[:8]:
        _assert_matches_reference(index, mem_store, q, oracle)

    for _ in range(30):
        for _ in range(rng.randint(1, 8)):
            doc_id = f"doc-{rng.randrange(n_docs + 20):03d}"  # new docs appear too
            if rng.random() < 0.2:
                mem_store.replace_doc_chunks(doc_id, [])  # retire (or a no-op retire)
            else:
                mem_store.replace_doc_chunks(doc_id, _random_doc(rng, doc_id, 40))
        index.refresh()
        assert len(index) == mem_store.count()
        oracle = _Oracle(mem_store)
        for q in rng.sample(queries, 2):
            _assert_matches_reference(index, mem_store, q, oracle)
    assert merges >= 3, "the scenario should exercise delta merges (the first build is one)"
    oracle = _Oracle(mem_store)
    for q in queries:
        _assert_matches_reference(index, mem_store, q, oracle)

    # a fresh index built from scratch gives the same answers
    fresh = InMemoryLexicalIndex(mem_store)
    fresh.refresh()
    for q in queries:
        assert fresh.search(q) == index.search(q)


def test_retired_and_replaced_chunks_are_never_returned(mem_store: SQLiteChunkStore) -> None:
    index = InMemoryLexicalIndex(mem_store)
    mem_store.replace_doc_chunks("a", [make_chunk("a", 0, "supply shortage"), make_chunk("a", 1, "supply chain")])
    mem_store.replace_doc_chunks("b", [make_chunk("b", 0, "supply")])
    index.refresh()
    assert {h.chunk_id for h in index.search(["supply"])} == {"a#0", "a#1", "b#0"}
    mem_store.replace_doc_chunks("a", [make_chunk("a", 0, "demand fell")])
    mem_store.replace_doc_chunks("b", [])
    index.refresh()
    assert index.search(["supply"]) == []
    assert [h.chunk_id for h in index.search(["demand"])] == ["a#0"]
    assert index.search(["demand"])[0].version == 2
    assert len(index) == 1
    assert index.version_of("a#0") == 2
    assert index.version_of("a#1") is None
    assert index.version_of("b#0") is None
    assert index.version_of("never") is None
    assert index.candidates() == [("a#0", 2)]


def test_changes_are_seen_after_refresh(mem_store: SQLiteChunkStore) -> None:
    index = InMemoryLexicalIndex(mem_store)
    index.refresh()
    assert len(index) == 0 and index.search(["x"]) == []
    mem_store.replace_doc_chunks("a", [make_chunk("a", 0, "alpha")])
    assert index.search(["alpha"]) == []  # not yet refreshed
    index.refresh()
    assert [h.chunk_id for h in index.search(["alpha"])] == ["a#0"]
    index.refresh()  # nothing changed: a no-op
    assert [h.chunk_id for h in index.search(["alpha"])] == ["a#0"]


def test_other_libraries_and_library_deletion(tmp_path) -> None:
    db = SQLiteDatabase(tmp_path / "libs.db")
    a, b = db.chunk_store("a"), db.chunk_store("b")
    a.replace_doc_chunks("d", [make_chunk("d", 0, "shared words here")])
    b.replace_doc_chunks("d", [make_chunk("d", 0, "shared words there"), make_chunk("d", 1, "more")])
    index = InMemoryLexicalIndex(a)
    index.refresh()
    b.replace_doc_chunks("e", [make_chunk("e", 0, "shared")])
    index.refresh()
    assert len(index) == 1
    hits = index.search(["shared"])
    assert [h.chunk_id for h in hits] == ["d#0"]
    _assert_matches_reference(index, a, ["shared", "words"])  # statistics are library-local
    db.delete_library("a")
    index.refresh()
    assert len(index) == 0 and index.search(["shared"]) == []
    a.replace_doc_chunks("z", [make_chunk("z", 0, "shared again")])
    index.refresh()
    assert [h.chunk_id for h in index.search(["shared"])] == ["z#0"]
    db.close()


def _tied_store(store: SQLiteChunkStore) -> None:
    # five identical chunks tie exactly; ids are not in insertion order
    for doc_id in ("e", "c", "a", "d", "b"):
        store.replace_doc_chunks(doc_id, [make_chunk(doc_id, 0, "margin fell", metadata={"rank": ord(doc_id)})])
    store.replace_doc_chunks("top", [make_chunk("top", 0, "margin margin fell", metadata={"rank": 0})])
    store.replace_doc_chunks("none", [make_chunk("none", 0, "unrelated", metadata={"rank": 1})])


def test_top_k_keeps_ties_deterministic(mem_store: SQLiteChunkStore) -> None:
    _tied_store(mem_store)
    index = InMemoryLexicalIndex(mem_store)
    index.refresh()
    full = index.search(["margin"])
    assert [h.chunk_id for h in full] == ["top#0", "a#0", "b#0", "c#0", "d#0", "e#0"]
    assert len({h.score for h in full[1:]}) == 1
    for k in range(1, 8):
        assert index.search(["margin"], top_k=k) == full[:k]
    assert index.search(["margin"], top_k=0) == []


def test_metadata_filter_masks_rows_without_changing_scores(mem_store: SQLiteChunkStore) -> None:
    rng = random.Random(7)
    for d in range(30):
        mem_store.replace_doc_chunks(f"d{d}", _random_doc(rng, f"d{d}", 6))
    index = InMemoryLexicalIndex(mem_store)
    index.refresh()
    meta = {c.chunk_id: c.metadata for c in mem_store.iter_chunks()}
    filters = [
        MetadataFilter((FilterCondition("topic", "eq", "sales"),)),
        MetadataFilter((FilterCondition("year", "between", [2021, 2023]), FilterCondition("flag", "eq", True))),
        MetadataFilter((FilterCondition("topic", "nin", ["legal"]),)),
        MetadataFilter((FilterCondition("missing", "ne", "x"),)),  # matches nothing
    ]
    for q in _queries(rng, 12):
        unfiltered = index.search(q)
        for f in filters:
            got = index.search(q, metadata_filter=f)
            assert got == [h for h in unfiltered if f.matches(meta[h.chunk_id])]
            assert index.search(q, metadata_filter=f, top_k=3) == got[:3]
        assert index.search(q, metadata_filter=MetadataFilter()) == unfiltered
    f = filters[0]
    assert sorted(index.candidates(f)) == sorted(
        (c.chunk_id, c.version) for c in mem_store.iter_chunks() if f.matches(c.metadata)
    )
    assert sorted(index.candidates()) == sorted((c.chunk_id, c.version) for c in mem_store.iter_chunks())
    assert index.candidates(filters[3]) == []


def test_hits_are_lexical_hits_with_positive_scores(mem_store: SQLiteChunkStore) -> None:
    _tied_store(mem_store)
    index = InMemoryLexicalIndex(mem_store)
    index.refresh()
    hits = index.search(tokenize("Margin FELL"))
    assert all(isinstance(h, LexicalHit) and h.score > 0 for h in hits)
    assert "none#0" not in {h.chunk_id for h in hits}
    assert index.search([]) == []


def test_custom_index_text_and_parameters(mem_store: SQLiteChunkStore) -> None:
    mem_store.replace_doc_chunks("a", [make_chunk("a", 0, "body words", title="Quarterly Revenue")])
    mem_store.replace_doc_chunks("b", [make_chunk("b", 0, "revenue body words body words")])
    titled = InMemoryLexicalIndex(mem_store, index_text=lambda c: f"{c.title} {c.text}", k1=1.2, b=0.5)
    titled.refresh()
    assert [h.chunk_id for h in titled.search(["quarterly"])] == ["a#0"]
    docs = [tokenize("Quarterly Revenue body words"), tokenize("revenue body words body words")]
    expected = bm25_scores(["revenue"], docs, k1=1.2, b=0.5)
    got = {h.chunk_id: h.score for h in titled.search(["revenue"])}
    assert got["a#0"] == pytest.approx(expected[0], abs=1e-12)
    assert got["b#0"] == pytest.approx(expected[1], abs=1e-12)
