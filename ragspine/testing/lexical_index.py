"""``LexicalIndexConformance``: a LexicalIndex ranks exactly like the reference BM25.

Fixtures needed:

* ``chunk_store_factory`` — ``factory(library_id) -> ChunkStore``, every store in one fresh
  namespace (as for :class:`~ragspine.testing.ChunkStoreConformance`);
* ``lexical_index_factory`` — ``factory(chunk_store) -> LexicalIndex`` over that store;
* ``lexical_corpus`` — a few hundred ``(doc_id, text)`` pairs of real prose (RAGSpine uses
  the standard library's docstrings, ``tests/corpora.py``).

The reference is :func:`~ragspine.retrieval.lexical.bm25.bm25_scores` over the tokens of the
library's active chunks, as the store lists them; with a filter, the same scores restricted to
the chunks that :meth:`MetadataFilter.matches` (a filter is a mask, never a change of
statistics). Scores must agree within ``1e-9`` relative, and the order exactly — chunks may
trade places only inside a group of scores equal within that tolerance. The index is
``refresh()``-ed after writes, as the LexicalIndex contract allows.
"""

from __future__ import annotations

import random
import re
from typing import Any, Callable, Sequence

from ragspine.retrieval.chunking.chunk_store import ChunkStore, DocumentChunks
from ragspine.retrieval.chunking.chunking import Chunk, chunk_document
from ragspine.retrieval.filtering.filters import FilterCondition, MetadataFilter
from ragspine.retrieval.lexical.base import VersionedIndex, default_index_text
from ragspine.retrieval.lexical.bm25 import bm25_scores
from ragspine.retrieval.lexical.index import LexicalHit, LexicalIndex
from ragspine.retrieval.lexical.tokenizer import tokenize
from ragspine.testing.chunk_store import FullChunkStore
from ragspine.testing.random_filters import random_filter, random_metadata

StoreFactory = Callable[[str], FullChunkStore]
IndexFactory = Callable[[ChunkStore], LexicalIndex]
REL_TOL = 1e-9
N_QUERIES = 24
N_FILTERS = 12
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]+")


def chunks_of(doc_id: str, text: str, rng: random.Random) -> list[Chunk]:
    """The document's chunks, with a module name, a length and random adversarial metadata."""
    metadata: dict[str, Any] = {**random_metadata(rng), "module": doc_id.split(".")[0], "n": len(text)}
    return chunk_document(text, doc_id, title=doc_id, metadata=metadata, max_chars=240, overlap_chars=40)


def ingest(store: FullChunkStore, docs: Sequence[tuple[str, str]], seed: int = 0) -> None:
    rng = random.Random(seed)
    store.replace_many([DocumentChunks(doc_id, chunks_of(doc_id, text, rng)) for doc_id, text in docs])


def queries(corpus: Sequence[tuple[str, str]], n: int = N_QUERIES) -> list[list[str]]:
    """Query token lists: opening words, keyword pairs, two documents' words mixed, a repeated
    token (it counts once per occurrence), an unknown token, and CJK."""
    words = [_WORD.findall(text) for _, text in corpus]
    step = max(1, len(corpus) // n)
    out = []
    for i in range(n):
        first, second = words[(i * step) % len(words)], words[(i * step * 7 + 13) % len(words)]
        text = [" ".join(first[:4]), " ".join(first[2:4]), " ".join(first[1:3] + second[2:5])][i % 3]
        out.append(tokenize(text))
    out += [tokenize("the the value of the"), tokenize("zzzunknownzzz return"), tokenize("营收 下滑")]
    return [q for q in out if q]


def reference(
    store: ChunkStore, query: Sequence[str], where: MetadataFilter | None = None, index_text: Callable[[Any], str] = default_index_text,
) -> dict[str, tuple[float, int]]:
    """``{chunk_id: (score, version)}`` of the chunks the reference scores above zero (over
    ``index_text`` of each chunk: its text, or e.g. the contextual header + text)."""
    chunks = store.iter_chunks()
    scores = bm25_scores(query, [tokenize(index_text(c)) for c in chunks])
    return {
        c.chunk_id: (s, c.version)
        for c, s in zip(chunks, scores, strict=True)
        if s > 0 and (where is None or where.matches(c.metadata))
    }


def close(a: float, b: float) -> bool:
    return abs(a - b) <= REL_TOL * max(abs(a), abs(b), 1e-300)


def assert_ranks_like_reference(got: list[LexicalHit], want: dict[str, tuple[float, int]], top_k: int | None) -> None:
    expected = sorted(want.items(), key=lambda item: (-item[1][0], item[0]))
    expected = expected if top_k is None else expected[:top_k]
    assert len(got) == len(expected), f"{len(got)} hits, the reference has {len(expected)}"
    for i, (hit, (cid, (score, _))) in enumerate(zip(got, expected, strict=True)):
        assert hit.chunk_id in want, f"#{i} {hit.chunk_id!r} is not scored by the reference (filtered, retired or absent)"
        ref_score, ref_version = want[hit.chunk_id]
        assert close(hit.score, ref_score), f"#{i} {hit.chunk_id!r}: score {hit.score!r}, reference {ref_score!r}"
        assert hit.version == ref_version, f"#{i} {hit.chunk_id!r}: version {hit.version}, active {ref_version}"
        assert hit.chunk_id == cid or close(ref_score, score), f"#{i}: {hit.chunk_id!r} where the reference ranks {cid!r}"


def check_against_reference(
    index: LexicalIndex, store: ChunkStore, corpus: Sequence[tuple[str, str]], seed: int,
    index_text: Callable[[Any], str] = default_index_text,
) -> None:
    rng = random.Random(seed)
    for query in queries(corpus):
        want = reference(store, query, index_text=index_text)
        for top_k in (10, 1, None):
            assert_ranks_like_reference(index.search(query, top_k=top_k), want, top_k)
    filters: list[MetadataFilter | None] = [random_filter(rng) for _ in range(N_FILTERS)]
    modules = sorted({doc_id.split(".")[0] for doc_id, _ in corpus})
    filters += [
        MetadataFilter((FilterCondition("module", "eq", modules[0]),)),
        MetadataFilter((FilterCondition("module", "in", modules[1:4]), FilterCondition("n", "gte", 300))),
        MetadataFilter((FilterCondition("module", "eq", "no such module"),)),
    ]
    for i, where in enumerate(filters):
        query = queries(corpus)[i % N_QUERIES]
        want = reference(store, query, where, index_text)
        got = index.search(query, metadata_filter=where, top_k=10)
        assert_ranks_like_reference(got, want, 10)
    for where in filters[-3:] + [None]:
        expected = sorted((c.chunk_id, c.version) for c in store.iter_chunks() if where is None or where.matches(c.metadata))
        assert sorted(index.candidates(where)) == expected


def churn(store: FullChunkStore, corpus: Sequence[tuple[str, str]], seed: int) -> None:
    """Random replaces (new text, other chunk counts), retirements, returns and new documents,
    singly and in batches."""
    rng = random.Random(seed)
    doc_ids = [d for d, _ in corpus]
    texts = [t for _, t in corpus]
    for doc_id in rng.sample(doc_ids, 30):
        store.replace_doc_chunks(doc_id, chunks_of(doc_id, rng.choice(texts) + "\n\n" + rng.choice(texts), rng))
    retired = rng.sample(doc_ids, 25)
    store.replace_many([DocumentChunks(d, []) for d in retired])
    back = retired[:5]
    batch = [DocumentChunks(d, chunks_of(d, rng.choice(texts), rng)) for d in back]
    batch += [DocumentChunks(f"new.doc{i}", chunks_of(f"new.doc{i}", rng.choice(texts), rng)) for i in range(10)]
    store.replace_many(batch)


class LexicalIndexRankingTests:
    def test_search_ranks_like_the_reference(
        self, chunk_store_factory: StoreFactory, lexical_index_factory: IndexFactory, lexical_corpus: list[tuple[str, str]]
    ) -> None:
        store = chunk_store_factory("lex-lib")
        ingest(store, lexical_corpus)
        index = lexical_index_factory(store)
        index.refresh()
        assert len(index) == store.count()
        check_against_reference(index, store, lexical_corpus, seed=1)

    def test_search_ranks_like_the_reference_after_replaces_and_retirements(
        self, chunk_store_factory: StoreFactory, lexical_index_factory: IndexFactory, lexical_corpus: list[tuple[str, str]]
    ) -> None:
        store = chunk_store_factory("lex-lib")
        ingest(store, lexical_corpus)
        index = lexical_index_factory(store)
        index.refresh()
        churn(store, lexical_corpus, seed=2)
        index.refresh()
        assert len(index) == store.count()
        check_against_reference(index, store, lexical_corpus, seed=3)
        if isinstance(index, VersionedIndex):
            for chunk in store.iter_chunks()[::37]:
                assert index.version_of(chunk.chunk_id) == chunk.version
            assert index.version_of("no such chunk") is None
            expected = {c.chunk_id: c.version for c in store.iter_chunks()}
            ids = list(expected)
            assert index.versions(ids[::-1] + ids[:5] + ["no such chunk"]) == expected
            assert index.versions([]) == {}


class LexicalIndexIsolationTests:
    def test_another_library_changes_neither_results_nor_statistics(
        self, chunk_store_factory: StoreFactory, lexical_index_factory: IndexFactory, lexical_corpus: list[tuple[str, str]]
    ) -> None:
        half = len(lexical_corpus) // 2
        mine, other = chunk_store_factory("lex-mine"), chunk_store_factory("lex-other")
        ingest(mine, lexical_corpus[:half])
        ingest(other, lexical_corpus, seed=5)  # the same doc ids and more: chunk ids collide
        index = lexical_index_factory(mine)
        index.refresh()
        for query in queries(lexical_corpus[:half])[:8]:
            assert_ranks_like_reference(index.search(query, top_k=20), reference(mine, query), 20)
        other.replace_many([DocumentChunks(d, []) for d, _ in lexical_corpus[: half // 2]])
        index.refresh()
        assert len(index) == mine.count()
        for query in queries(lexical_corpus[:half])[:8]:
            assert_ranks_like_reference(index.search(query, top_k=20), reference(mine, query), 20)


class LexicalIndexConformance(LexicalIndexRankingTests, LexicalIndexIsolationTests):
    """Every LexicalIndex capability; needs ``chunk_store_factory``, ``lexical_index_factory``
    and ``lexical_corpus``."""


__all__ = ["LexicalIndexConformance", "assert_ranks_like_reference", "reference"]

