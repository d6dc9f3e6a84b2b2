"""The lexical index seam and its in-process implementation.

``LexicalIndex`` answers BM25 queries over one library's *active* chunks without
re-tokenizing them per query. It follows its :class:`ChunkStore` through the store's change
log (``change_seq`` / ``changes_since``): a new version is searchable after the next
``refresh()``, a retired chunk is gone after it.

Statistics (``N``, ``avgdl``, ``df``) are those of the library's active chunks; metadata
filters are masks applied to the scored rows, so a filter narrows the result without
changing any chunk's score — the ranking equals ``bm25_scores`` over the whole library,
restricted to the rows that pass the filter.

:class:`InMemoryLexicalIndex` keeps a log-structured inverted index: a bulk-built *base*
segment in CSC form (numpy: ``indptr`` per token id, posting rows, term frequencies) plus a
small *delta* of postings added since, and an ``active`` mask. Scoring one token is a slice
of the base plus a few delta postings; retiring a chunk flips its mask bit. When the delta or
the dead rows grow past a fraction of the base, the segments are merged (no re-tokenizing).
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from typing import (
    Any,
    Callable,
    Iterable,
    Mapping,
    Protocol,
    Sequence,
    runtime_checkable,
)

import numpy as np

from ragspine.retrieval.chunking.chunk_store import ChunkStore, StoredChunk
from ragspine.retrieval.filtering.filters import MetadataFilter
from ragspine.retrieval.lexical.bm25 import DEFAULT_BM25_B, DEFAULT_BM25_K1
from ragspine.retrieval.lexical.tokenizer import tokenize


@dataclass(frozen=True)
class LexicalHit:
    chunk_id: str
    score: float
    version: int


@runtime_checkable
class LexicalIndex(Protocol):
    """BM25 over one library's active chunks (see the module docstring)."""

    def refresh(self) -> None: ...

    def search(
        self,
        query_tokens: Sequence[str],
        *,
        metadata_filter: MetadataFilter | None = None,
        top_k: int | None = None,
    ) -> list[LexicalHit]: ...

    def candidates(self, metadata_filter: MetadataFilter | None = None) -> list[tuple[str, int]]: ...

    def __len__(self) -> int: ...


def default_index_text(chunk: StoredChunk) -> str:
    return chunk.text


class InMemoryLexicalIndex:
    """In-process BM25 index following a :class:`ChunkStore` (see the module docstring)."""

    def __init__(
        self,
        store: ChunkStore,
        *,
        k1: float = DEFAULT_BM25_K1,
        b: float = DEFAULT_BM25_B,
        tokenizer: Callable[[str], list[str]] = tokenize,
        index_text: Callable[[StoredChunk], str] = default_index_text,
        merge_fraction: float = 0.25,
    ) -> None:
        self.store = store
        self.k1 = k1
        self.b = b
        self._tokenize = tokenizer
        self._index_text = index_text
        self._merge_fraction = merge_fraction
        self._lock = threading.RLock()
        self._seq: int | None = None
        self._reset()

    def _reset(self) -> None:
        self._vocab: dict[str, int] = {}
        self._chunk_ids: list[str] = []
        self._versions: list[int] = []
        self._docs: list[str] = []
        self._meta: list[Mapping[str, Any]] = []
        self._lengths = np.zeros(0, dtype=np.float64)
        self._active = np.zeros(0, dtype=bool)
        self._rows_by_doc: dict[str, list[int]] = {}
        self._row_of: dict[str, int] = {}  # active chunk_id -> row
        self._n_active = 0
        self._total_len = 0.0
        # base segment (CSC over token ids) and delta postings
        self._base_indptr = np.zeros(1, dtype=np.int64)
        self._base_rows = np.zeros(0, dtype=np.int32)
        self._base_tf = np.zeros(0, dtype=np.float32)
        self._delta: dict[int, tuple[list[int], list[float]]] = {}
        self._delta_rows = 0
        self._dead_rows = 0

    # -- following the store --------------------------------------------------------------
    def refresh(self) -> None:
        with self._lock:
            seq = self.store.change_seq()
            if self._seq is None:
                self._rebuild_from_store(seq)
                return
            if seq == self._seq:
                return
            new_seq, docs = self.store.changes_since(self._seq)
            if "" in docs:  # the whole library was dropped
                self._rebuild_from_store(seq)
                return
            for doc_id in docs:
                self._retire_doc(doc_id)
                self._add_rows(self.store.iter_chunks(doc_id=doc_id))
            self._seq = new_seq
            self._maybe_merge()

    def _rebuild_from_store(self, seq: int) -> None:
        self._reset()
        source = getattr(self.store, "iter_active", None)
        chunks: Iterable[StoredChunk] = source() if source else self.store.iter_chunks()
        self._add_rows(chunks)
        self._merge()
        self._seq = seq

    def _retire_doc(self, doc_id: str) -> None:
        for row in self._rows_by_doc.pop(doc_id, ()):
            if self._active[row]:
                self._row_of.pop(self._chunk_ids[row], None)
                self._active[row] = False
                self._n_active -= 1
                self._total_len -= self._lengths[row]
                self._dead_rows += 1

    def _add_rows(self, chunks: Iterable[StoredChunk]) -> None:
        start = len(self._chunk_ids)
        lengths: list[float] = []
        for chunk in chunks:
            if not chunk.active:
                continue
            row = len(self._chunk_ids)
            tokens = self._tokenize(self._index_text(chunk))
            counts: dict[int, int] = {}
            for token in tokens:
                tid = self._vocab.setdefault(token, len(self._vocab))
                counts[tid] = counts.get(tid, 0) + 1
            for tid, tf in counts.items():
                rows, tfs = self._delta.setdefault(tid, ([], []))
                rows.append(row)
                tfs.append(float(tf))
            self._chunk_ids.append(chunk.chunk_id)
            self._versions.append(chunk.version)
            self._docs.append(chunk.doc_id)
            self._meta.append(chunk.metadata)
            self._rows_by_doc.setdefault(chunk.doc_id, []).append(row)
            self._row_of[chunk.chunk_id] = row
            lengths.append(float(len(tokens)))
        added = len(lengths)
        if not added:
            return
        self._lengths = np.concatenate([self._lengths, np.asarray(lengths, dtype=np.float64)])
        self._active = np.concatenate([self._active, np.ones(added, dtype=bool)])
        self._n_active += added
        self._total_len += float(sum(lengths))
        self._delta_rows += added
        assert len(self._chunk_ids) == start + added

    def _maybe_merge(self) -> None:
        base = max(len(self._chunk_ids) - self._delta_rows, 1)
        if self._delta_rows > max(1000, self._merge_fraction * base) or (
            self._dead_rows > max(1000, self._merge_fraction * base)
        ):
            self._merge()

    def _merge(self) -> None:
        """Fold the delta into a new base, dropping dead rows and renumbering (no re-tokenizing)."""
        n_tokens = len(self._vocab)
        base_counts = np.diff(self._base_indptr)
        base_tids = np.repeat(np.arange(len(base_counts), dtype=np.int32), base_counts)
        d_tids, d_rows, d_tf = [], [], []
        for tid, (rows, tfs) in self._delta.items():
            d_tids.append(np.full(len(rows), tid, dtype=np.int32))
            d_rows.append(np.asarray(rows, dtype=np.int32))
            d_tf.append(np.asarray(tfs, dtype=np.float32))
        tids = np.concatenate([base_tids, *d_tids])
        rows = np.concatenate([self._base_rows, *d_rows])
        tfs = np.concatenate([self._base_tf, *d_tf])
        keep_rows = np.flatnonzero(self._active)
        renumber = np.full(len(self._active), -1, dtype=np.int64)
        renumber[keep_rows] = np.arange(len(keep_rows))
        live = self._active[rows] if len(rows) else np.zeros(0, dtype=bool)
        tids, rows, tfs = tids[live], renumber[rows[live]].astype(np.int32), tfs[live]
        order = np.lexsort((rows, tids))
        tids, rows, tfs = tids[order], rows[order], tfs[order]
        indptr = np.zeros(n_tokens + 1, dtype=np.int64)
        np.cumsum(np.bincount(tids, minlength=n_tokens), out=indptr[1:])
        keep = keep_rows.tolist()
        self._chunk_ids = [self._chunk_ids[i] for i in keep]
        self._versions = [self._versions[i] for i in keep]
        self._docs = [self._docs[i] for i in keep]
        self._meta = [self._meta[i] for i in keep]
        self._lengths = self._lengths[keep_rows]
        self._active = np.ones(len(keep), dtype=bool)
        self._rows_by_doc = {}
        for row, doc in enumerate(self._docs):
            self._rows_by_doc.setdefault(doc, []).append(row)
        self._row_of = {cid: row for row, cid in enumerate(self._chunk_ids)}
        self._base_indptr, self._base_rows, self._base_tf = indptr, rows, tfs
        self._delta, self._delta_rows, self._dead_rows = {}, 0, 0

    # -- queries --------------------------------------------------------------------------
    def __len__(self) -> int:
        return self._n_active

    @property
    def seq(self) -> int | None:
        """The store change sequence this index reflects (``None`` before the first refresh)."""
        return self._seq

    def _postings(self, tid: int) -> tuple[np.ndarray, np.ndarray]:
        rows = np.zeros(0, dtype=np.int32)
        tfs = np.zeros(0, dtype=np.float32)
        if tid < len(self._base_indptr) - 1:
            lo, hi = self._base_indptr[tid], self._base_indptr[tid + 1]
            rows, tfs = self._base_rows[lo:hi], self._base_tf[lo:hi]
        extra = self._delta.get(tid)
        if extra:
            rows = np.concatenate([rows, np.asarray(extra[0], dtype=np.int32)])
            tfs = np.concatenate([tfs, np.asarray(extra[1], dtype=np.float32)])
        return rows, tfs

    def score_rows(self, query_tokens: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """``(rows, scores)`` of every active row with a positive BM25 score."""
        n = self._n_active
        if n == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        avgdl = self._total_len / n or 1.0
        scores = np.zeros(len(self._chunk_ids), dtype=np.float64)
        k1, b = self.k1, self.b
        for token in query_tokens:
            tid = self._vocab.get(token)
            if tid is None:
                continue
            rows, tfs = self._postings(tid)
            live = self._active[rows]
            rows, tf = rows[live], tfs[live].astype(np.float64)
            df = len(rows)
            if not df:
                continue
            idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
            norm = k1 * (1.0 - b + b * self._lengths[rows] / avgdl)
            scores[rows] += idf * (tf / (tf + norm))
        hit = np.flatnonzero(scores)
        return hit, scores[hit]

    def search(
        self,
        query_tokens: Sequence[str],
        *,
        metadata_filter: MetadataFilter | None = None,
        top_k: int | None = None,
    ) -> list[LexicalHit]:
        with self._lock:
            if top_k is not None and top_k <= 0:
                return []
            rows, scores = self.score_rows(query_tokens)
            if metadata_filter:
                keep = [i for i, r in enumerate(rows.tolist()) if metadata_filter.matches(self._meta[r])]
                rows, scores = rows[keep], scores[keep]
            if top_k is not None and len(rows) > top_k:
                # keep every row tied with the k-th score, then order exactly
                kth = np.partition(scores, len(scores) - top_k)[len(scores) - top_k]
                sel = scores >= kth
                rows, scores = rows[sel], scores[sel]
            ranked = sorted(
                zip(scores.tolist(), rows.tolist()),
                key=lambda sr: (-sr[0], self._chunk_ids[sr[1]]),
            )
            if top_k is not None:
                ranked = ranked[:top_k]
            return [LexicalHit(self._chunk_ids[r], s, self._versions[r]) for s, r in ranked]

    def candidates(self, metadata_filter: MetadataFilter | None = None) -> list[tuple[str, int]]:
        """``(chunk_id, version)`` of every active chunk passing ``metadata_filter``."""
        with self._lock:
            rows = np.flatnonzero(self._active).tolist()
            if metadata_filter:
                rows = [r for r in rows if metadata_filter.matches(self._meta[r])]
            return [(self._chunk_ids[r], self._versions[r]) for r in rows]

    def version_of(self, chunk_id: str) -> int | None:
        """The active version of ``chunk_id``, or ``None`` when it is not active."""
        with self._lock:
            row = self._row_of.get(chunk_id)
            return None if row is None else self._versions[row]
