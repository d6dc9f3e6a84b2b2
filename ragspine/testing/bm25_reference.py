"""``IncrementalReference``: the reference BM25 over one store's active chunks, kept up to date.

:func:`~ragspine.retrieval.lexical.bm25.bm25_scores` is the reference every lexical index is
tested against, but it tokenizes and counts the whole library on every call: at 100,000
chunks one query costs seconds. This class performs the *same arithmetic*, operation for
operation — ``N`` and ``avgdl = sum(lengths) / N or 1.0`` over the active, non-RESTRICTED
chunks, ``idf = bm25_idf(df, N)``, and per chunk the query's tokens added in query order
from ``0.0`` with :func:`~ragspine.retrieval.lexical.bm25.bm25_term` — over token counts it
keeps per chunk and updates from the store after every change, so its scores equal
``bm25_scores``' bit for bit (``check_against_bm25_scores`` proves it on the live store).

It reads what it scores from the store (never from what a test meant to write), so it is
the store's truth that an index is compared with.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ragspine.retrieval.chunking.chunk_store import ChunkStore, StoredChunk, StreamingReads
from ragspine.retrieval.filtering.filters import MetadataFilter
from ragspine.retrieval.lexical.base import default_index_text
from ragspine.retrieval.lexical.bm25 import DEFAULT_BM25_B, DEFAULT_BM25_K1, bm25_idf, bm25_scores, bm25_term
from ragspine.retrieval.lexical.tokenizer import tokenize
from ragspine.retrieval.sensitivity import is_restricted

#: ``(chunk_id, score, version)``, best first, ties by chunk id.
Ranking = list[tuple[str, float, int]]


def _order(hit: tuple[str, float, int]) -> tuple[float, str]:
    return -hit[1], hit[0]


class IncrementalReference:
    """The reference BM25 over a store's active, non-RESTRICTED chunks (module docstring)."""

    def __init__(
        self,
        *,
        tokenizer: Callable[[str], list[str]] = tokenize,
        index_text: Callable[[StoredChunk], str] = default_index_text,
        k1: float = DEFAULT_BM25_K1,
        b: float = DEFAULT_BM25_B,
    ) -> None:
        self._tokenize = tokenizer
        self._index_text = index_text
        self.k1, self.b = k1, b
        self.clear()

    def clear(self) -> None:
        self.counts: dict[str, Counter[str]] = {}
        self.lengths: dict[str, int] = {}
        self.versions: dict[str, int] = {}
        self.metadata: dict[str, Any] = {}
        self.by_doc: dict[str, list[str]] = {}
        self.postings: dict[str, dict[str, int]] = {}
        self.total = 0

    def __len__(self) -> int:
        return len(self.counts)

    # -- following the store ---------------------------------------------------------------
    def reload(self, store: ChunkStore) -> None:
        """Forget everything and read every active chunk of ``store``."""
        self.clear()
        chunks: Iterable[StoredChunk] = store.iter_active() if isinstance(store, StreamingReads) else store.iter_chunks()
        for chunk in chunks:
            self._add(chunk)

    def update(self, store: ChunkStore, doc_ids: Iterable[str]) -> None:
        """Re-read the active chunks of ``doc_ids`` from ``store`` (after they were written)."""
        docs = list(dict.fromkeys(doc_ids))
        for doc_id in docs:
            for cid in self.by_doc.pop(doc_id, []):
                self._remove(cid)
        if not docs:
            return
        chunks: Iterable[StoredChunk]
        if isinstance(store, StreamingReads):
            chunks = store.iter_active_docs(docs)
        else:
            chunks = [c for d in docs for c in store.iter_chunks(doc_id=d)]
        for chunk in chunks:
            self._add(chunk)

    def _add(self, chunk: StoredChunk) -> None:
        if not chunk.active or is_restricted(chunk.sensitivity):
            return
        cid = chunk.chunk_id
        if cid in self.counts:
            raise AssertionError(f"the store lists chunk {cid!r} as active twice")
        counts = Counter(self._tokenize(self._index_text(chunk)))
        self.counts[cid] = counts
        self.lengths[cid] = counts.total()
        self.versions[cid] = chunk.version
        self.metadata[cid] = chunk.metadata
        self.by_doc.setdefault(chunk.doc_id, []).append(cid)
        self.total += counts.total()
        for token, tf in counts.items():
            self.postings.setdefault(token, {})[cid] = tf

    def _remove(self, cid: str) -> None:
        counts = self.counts.pop(cid)
        self.total -= self.lengths.pop(cid)
        del self.versions[cid], self.metadata[cid]
        for token in counts:
            holders = self.postings[token]
            del holders[cid]
            if not holders:
                del self.postings[token]

    # -- scoring ---------------------------------------------------------------------------
    def scores(self, query_tokens: Sequence[str]) -> dict[str, float]:
        """``{chunk_id: score}`` of every chunk scoring above zero, computed as ``bm25_scores``."""
        n = len(self.counts)
        if not n:
            return {}
        avgdl = self.total / n or 1.0
        out: dict[str, float] = {}
        for token in query_tokens:
            holders = self.postings.get(token)
            if not holders:
                continue
            idf = bm25_idf(len(holders), n)
            for cid, tf in holders.items():
                out[cid] = out.get(cid, 0.0) + bm25_term(tf, self.lengths[cid], avgdl, idf, self.k1, self.b)
        return out

    def ranking(self, query_tokens: Sequence[str], where: MetadataFilter | None = None, top_k: int | None = None) -> Ranking:
        """What a lexical index must answer: chunks scoring above zero that pass ``where``,
        by ``(-score, chunk_id)``, the first ``top_k``."""
        passing = ((cid, s, self.versions[cid]) for cid, s in self.scores(query_tokens).items()
                   if s > 0 and (where is None or where.matches(self.metadata[cid])))
        if top_k is None:
            return sorted(passing, key=_order)
        return heapq.nsmallest(top_k, passing, key=_order)  # equals sorted(...)[:top_k]

    # -- proving the reference itself ------------------------------------------------------
    def check_against_store(self, store: ChunkStore) -> None:
        """Raise ``AssertionError`` unless this holds exactly the store's active,
        non-RESTRICTED chunk versions."""
        chunks = store.iter_active() if isinstance(store, StreamingReads) else store.iter_chunks()
        stored = {c.chunk_id: c.version for c in chunks if not is_restricted(c.sensitivity)}
        if stored != self.versions:
            missing = sorted(set(stored) - set(self.versions))[:3]
            extra = sorted(set(self.versions) - set(stored))[:3]
            raise AssertionError(f"the reference drifted from the store: missing {missing}, extra {extra}")

    def check_against_bm25_scores(self, store: ChunkStore, queries: Sequence[Sequence[str]]) -> None:
        """Raise ``AssertionError`` unless :meth:`scores` equals :func:`bm25_scores` over the
        store's active, non-RESTRICTED chunks, bit for bit, for every query."""
        chunks = [c for c in store.iter_chunks() if not is_restricted(c.sensitivity)]
        docs = [self._tokenize(self._index_text(c)) for c in chunks]
        for query in queries:
            want = {c.chunk_id: s for c, s in zip(chunks, bm25_scores(query, docs, self.k1, self.b), strict=True) if s > 0}
            got = self.scores(query)
            if got != want:
                bad = next((cid for cid in sorted(set(got) | set(want)) if got.get(cid) != want.get(cid)), None)
                raise AssertionError(f"the incremental reference differs from bm25_scores for {list(query)!r} at {bad!r}")


__all__ = ["IncrementalReference", "Ranking"]
