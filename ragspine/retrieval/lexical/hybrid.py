"""``HybridRetriever``: BM25 (+ optional dense) legs over one library, fused by RRF.

Per search:

1. the metadata filter is validated (``FilterError`` before any I/O) and is the candidate
   mask for every leg;
2. the BM25 leg scores the library's active chunks through the :class:`LexicalIndex`;
3. the dense leg (when an embedding backend is injected and the dense gate can read the
   query) first makes sure every surviving candidate has a vector — computed lazily, only
   for candidates, looked up in the embedding cache by ``chunk_id`` + content hash — then
   asks the vector store for the nearest ones;
4. the legs' rankings (each ``candidate_k`` deep, at least ``top_k``) are fused with
   ``rrf_fuse``; ties are broken by ``(-fused_score, chunk_id)``.

Without an embedding backend no vector store, cache or model is touched: pure BM25 + RRF.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from ragspine.retrieval.chunking.chunk_store import ChunkStore, StoredChunk
from ragspine.retrieval.filtering.filters import MetadataFilter, parse_filter
from ragspine.retrieval.lexical.fusion import DEFAULT_RRF_K, rrf_fuse, sort_fused
from ragspine.retrieval.lexical.index import (
    InMemoryLexicalIndex,
    LexicalIndex,
    default_index_text,
)
from ragspine.retrieval.lexical.tokenizer import tokenize
from ragspine.retrieval.metadata import STANDARD_FIELDS
from ragspine.retrieval.types import RetrievalResult
from ragspine.retrieval.vector.base import (
    EmbeddingBackend,
    EmbeddingCache,
    VectorRecord,
    VectorStore,
    embedding_key,
    model_namespace,
)
from ragspine.retrieval.vector.cache import InMemoryEmbeddingCache
from ragspine.retrieval.vector.gate import DenseGate
from ragspine.retrieval.vector.store import InProcessVectorStore

DEFAULT_CANDIDATE_K = 100
DEFAULT_EMBED_BATCH = 64
VECTOR_SCORE_DECIMALS = 6
VECTOR_OVERFETCH = 16

MAX_STALE_RETRIES = 3


class Legs(dict):  # type: ignore[type-arg]
    """``{leg: [(chunk_id, score), ...]}`` plus ``versions``: the chunk version each score
    was computed from (so a fetch can tell a chunk replaced since it was scored)."""

    def __init__(self) -> None:
        super().__init__()
        self.versions: dict[str, int] = {}


class StaleRanking(Exception):
    """A ranked chunk was replaced by a newer version before its text was fetched."""


def combine_filters(
    metadata_filter: Any = None, fields: Mapping[str, Any] | None = None
) -> MetadataFilter | None:
    """The user's filter AND the seed's keyword pre-filters (``topic=``, ``entity=``, ...)."""
    filt = parse_filter(metadata_filter)
    extra = {k: v for k, v in (fields or {}).items() if v is not None}
    unknown = set(extra) - set(STANDARD_FIELDS)
    if unknown:
        raise TypeError(f"unexpected keyword(s) {', '.join(sorted(unknown))}; use metadata_filter=")
    more = parse_filter(extra) if extra else None
    if filt and more:
        return filt.and_(more)
    return filt or more


class HybridRetriever:
    """See the module docstring."""

    def __init__(
        self,
        store: ChunkStore,
        *,
        embedding_backend: EmbeddingBackend | None = None,
        vector_store: VectorStore | None = None,
        embedding_cache: EmbeddingCache | None = None,
        lexical_index: LexicalIndex | None = None,
        legs: Sequence[str] = ("bm25", "vector"),
        rrf_k: int = DEFAULT_RRF_K,
        candidate_k: int = DEFAULT_CANDIDATE_K,
        dense_gate: DenseGate | None = None,
        embed_batch_size: int = DEFAULT_EMBED_BATCH,
        index_text: Callable[[StoredChunk], str] = default_index_text,
    ) -> None:
        self.store = store
        self.library_id = store.library_id
        self.index: LexicalIndex = lexical_index if lexical_index is not None else InMemoryLexicalIndex(store, index_text=index_text)
        self.embedding_backend = embedding_backend
        self.legs = tuple(legs) if embedding_backend is not None else ("bm25",)
        self.rrf_k = rrf_k
        self.candidate_k = candidate_k
        self.embed_batch_size = embed_batch_size
        self._index_text = index_text
        self._lock = threading.RLock()
        self._unreadable: set[tuple[str, int]] = set()
        self._verified: set[tuple[str, int]] = set()  # (chunk_id, version) known to be in sync
        self._verified_seq: int | None = None  # index sequence at which every chunk was
        if embedding_backend is None:
            self.vector_store: VectorStore | None = None
            self.embedding_cache: EmbeddingCache | None = None
            self.dense_gate: DenseGate | None = None
        else:
            self.vector_store = vector_store if vector_store is not None else InProcessVectorStore(library_id=store.library_id)
            self.embedding_cache = embedding_cache if embedding_cache is not None else InMemoryEmbeddingCache()
            self.dense_gate = dense_gate if dense_gate is not None else DenseGate(embedding_backend)
            self.namespace = model_namespace(embedding_backend)

    # -- keeping derived state in step with the store ---------------------------------------
    def refresh(self) -> None:
        self.index.refresh()
        if len(self._verified) > 2 * max(len(self.index), 1000):
            self._verified &= set(self.index.candidates())
        store = self.vector_store
        if store is not None and getattr(store, "process_local", False):
            if store.count() > 2 * max(len(self.index), 1000):
                active = {cid for cid, _ in self.index.candidates()}
                stale = [cid for cid in store.ids() if cid not in active]  # type: ignore[attr-defined]
                store.delete(stale)

    def ensure_vectors(
        self,
        candidates: Sequence[tuple[str, int]],
        progress: Callable[[int], None] | None = None,
    ) -> int:
        """Give every ``(chunk_id, version)`` a current vector; returns how many were embedded."""
        if self.embedding_backend is None or self.vector_store is None:
            return 0
        with self._lock:
            have = self.vector_store.versions([cid for cid, _ in candidates])
            missing = [
                (cid, ver) for cid, ver in candidates
                if have.get(cid) != ver and (cid, ver) not in self._unreadable
            ]
            embedded = 0
            step = max(self.embed_batch_size * 16, 256)
            for start in range(0, len(missing), step):
                part = missing[start : start + step]
                embedded += self._fill([cid for cid, _ in part])
                if progress is not None:
                    progress(len(part))
            return embedded

    def warm_cache(self, chunks: Sequence[Any]) -> int:
        """Put the vectors of ``chunks`` (not necessarily stored yet) into the embedding cache;
        returns how many were embedded. An ingest calls it *before* its atomic replace, so a
        failing model leaves the previous version active; the replace then finds them cached."""
        if self.embedding_backend is None:
            return 0
        return self._vectors_for(list(chunks))[1]

    def _fill(self, chunk_ids: Sequence[str]) -> int:
        assert self.vector_store is not None
        chunks = self.store.get_chunks(chunk_ids)
        vectors, embedded = self._vectors_for(chunks)
        records = []
        for chunk, vec in zip(chunks, vectors):
            if vec is None or vec.size == 0:
                self._unreadable.add((chunk.chunk_id, chunk.version))
                continue
            records.append(
                VectorRecord(chunk.chunk_id, vec, chunk.doc_id, chunk.version, chunk.sensitivity, dict(chunk.metadata))
            )
        self.vector_store.upsert(records)
        return embedded

    def _vectors_for(self, chunks: Sequence[Any]) -> tuple[list[np.ndarray | None], int]:
        """Each chunk's vector — from the cache, else embedded (and cached); the empty vector
        for a text the dense gate cannot read — and how many were embedded."""
        assert self.embedding_backend is not None
        assert self.embedding_cache is not None and self.dense_gate is not None
        texts = [self._index_text(c) for c in chunks]
        keys = [embedding_key(self.namespace, c.chunk_id, t) for c, t in zip(chunks, texts)]
        vectors: list[np.ndarray | None] = list(self.embedding_cache.get_many(keys))
        todo = [i for i, v in enumerate(vectors) if v is None]
        readable = self.dense_gate.readable([texts[i] for i in todo])
        to_embed = [i for i, ok in zip(todo, readable) if ok]
        fresh: dict[str, np.ndarray] = {keys[i]: np.zeros(0, dtype=np.float32) for i, ok in zip(todo, readable) if not ok}
        for start in range(0, len(to_embed), self.embed_batch_size):
            batch = to_embed[start : start + self.embed_batch_size]
            out = self.embedding_backend.embed_texts([texts[i] for i in batch])
            for i, vec in zip(batch, out):
                vectors[i] = np.asarray(vec, dtype=np.float32)
                fresh[keys[i]] = vectors[i]  # type: ignore[assignment]
        for i in todo:
            if vectors[i] is None:
                vectors[i] = fresh[keys[i]]
        self.embedding_cache.set_many(fresh)
        return vectors, len(to_embed)

    # -- searching ---------------------------------------------------------------------------
    def rankings(self, query: str, *, metadata_filter: MetadataFilter | None = None, depth: int) -> Legs:
        """Each leg's ranking ``[(chunk_id, score), ...]``, best first, at most ``depth`` long."""
        legs = Legs()
        for leg in self.legs_for(query):
            if leg == "bm25":
                hits = self.index.search(tokenize(query), metadata_filter=metadata_filter, top_k=depth)
                legs["bm25"] = [(h.chunk_id, h.score) for h in hits]
                legs.versions.update((h.chunk_id, h.version) for h in hits)
            else:
                legs["vector"] = self._dense(query, metadata_filter, depth, legs.versions)
        return legs

    def legs_for(self, query: str) -> tuple[str, ...]:
        """The legs a search for ``query`` runs: the dense leg only when the gate can read the
        query; BM25 when configured, or in its place when the dense leg cannot run."""
        dense_ok = (
            "vector" in self.legs
            and self.dense_gate is not None
            and bool(query.strip())
            and self.dense_gate.query_readable(query)
        )
        return (("bm25",) if "bm25" in self.legs or not dense_ok else ()) + (("vector",) if dense_ok else ())

    def _dense(
        self, query: str, metadata_filter: MetadataFilter | None, depth: int, versions: dict[str, int] | None = None
    ) -> list[tuple[str, float]]:
        assert self.embedding_backend is not None and self.vector_store is not None
        if not self._sync_candidates(metadata_filter):
            return []
        qvec = self.embedding_backend.embed_texts([query])[0]
        want = depth + VECTOR_OVERFETCH
        hits = self.vector_store.query(qvec, top_k=want, where=metadata_filter)
        current = self._current(hits)
        if len(current) < min(depth, len(hits)) and len(hits) == want:
            # stale vectors (retired elsewhere) crowded the top: ask again within the candidates
            active = dict(self.index.candidates(metadata_filter))
            hits = self.vector_store.query(qvec, top_k=want, where=metadata_filter, ids=list(active))
            current = self._current(hits)
        # Similarities are compared at 1e-6: stores accumulate float32 dot products in
        # different orders, so near-ties must not decide the ranking (ties → chunk_id).
        ranked = sorted(
            ((h.id, round(h.score, VECTOR_SCORE_DECIMALS)) for h in current),
            key=lambda hit: (-hit[1], hit[0]),
        )
        if versions is not None:
            versions.update((h.id, h.version) for h in current)
        return ranked[:depth]

    def _sync_candidates(self, metadata_filter: MetadataFilter | None) -> bool:
        """Vectors for the filter-surviving candidates, checked once per (chunk_id, version);
        an unfiltered query at an index sequence already fully checked does nothing.
        False when no chunk survives the filter (then nothing is embedded, not even the query)."""
        seq = getattr(self.index, "seq", None)
        if metadata_filter is None and seq is not None and seq == self._verified_seq:
            return len(self.index) > 0
        candidates = self.index.candidates(metadata_filter)
        unverified = [c for c in candidates if c not in self._verified]
        if unverified:
            self.ensure_vectors(unverified)
            self._verified.update(unverified)
        if metadata_filter is None:
            self._verified_seq = seq
        return bool(candidates)

    def _current(self, hits: Sequence[Any]) -> list[Any]:
        """Hits whose vector was computed from the chunk's active version."""
        version_of = getattr(self.index, "version_of", None)
        if version_of is None:
            active = dict(self.index.candidates())
            return [h for h in hits if active.get(h.id) == h.version]
        return [h for h in hits if version_of(h.id) == h.version]

    def fuse(
        self, legs_per_query: Iterable[Legs], *, top_k: int, stale: str = "skip"
    ) -> list[RetrievalResult]:
        """RRF over every leg of every query; chunks fetched from the store, best first.

        A chunk whose active version is not the one it was scored on (replaced in between)
        is never shown with the old scores: ``stale="raise"`` raises :class:`StaleRanking`
        (the caller re-ranks), ``"skip"`` leaves it out.
        """
        rankings: list[list[str]] = []
        best: dict[str, dict[str, float]] = {}
        scored: dict[str, int] = {}
        for legs in legs_per_query:
            scored.update(getattr(legs, "versions", {}))
            for leg, ranking in legs.items():
                rankings.append([cid for cid, _ in ranking])
                for cid, score in ranking:
                    seen = best.setdefault(cid, {})
                    if leg not in seen or score > seen[leg]:
                        seen[leg] = score
        ordered = sort_fused(rrf_fuse(rankings, k=self.rrf_k))
        results: list[RetrievalResult] = []
        pos = 0
        while len(results) < top_k and pos < len(ordered):
            page = ordered[pos : pos + max(top_k - len(results), 16)]
            pos += len(page)
            chunks = {c.chunk_id: c for c in self.store.get_chunks([cid for cid, _ in page])}
            for cid, fused in page:
                chunk = chunks.get(cid)
                if chunk is None:  # retired since it was scored
                    continue
                if cid in scored and chunk.version != scored[cid]:
                    if stale == "raise":
                        raise StaleRanking(cid)
                    continue
                legs_seen = best.get(cid, {})
                scores = {"bm25": legs_seen.get("bm25", 0.0), "vector": legs_seen.get("vector", 0.0), "fused": fused}
                results.append(RetrievalResult(chunk, scores, self.library_id))
                if len(results) == top_k:
                    break
        return results

    def search(
        self,
        query: str,
        *,
        top_k: int = 10,
        metadata_filter: Any = None,
        **fields: Any,
    ) -> list[RetrievalResult]:
        filt = combine_filters(metadata_filter, fields)
        if top_k <= 0:
            return []
        for attempt in range(MAX_STALE_RETRIES + 1):
            self.refresh()
            legs = self.rankings(query, metadata_filter=filt, depth=max(self.candidate_k, top_k))
            try:
                return self.fuse([legs], top_k=top_k, stale="raise" if attempt < MAX_STALE_RETRIES else "skip")
            except StaleRanking:
                continue
        raise AssertionError("unreachable")
