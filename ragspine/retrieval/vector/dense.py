"""``DenseLeg``: the vector half of a hybrid search over one library.

It keeps the library's vectors in step with the lexical index's active chunks — computed
lazily, only for the candidates a search can return, looked up in the embedding cache by
model + ``chunk_id`` + content hash — and answers a query with the nearest current chunks:

* a chunk the dense gate cannot read gets no vector (it stays reachable through BM25);
* ``(chunk_id, version)`` pairs already checked are remembered, so a steady-state query does
  no per-library work; at an index state already checked in full, nothing is checked at all;
* a hit whose vector was computed from an older version is dropped; when such stale vectors
  crowd the top, the store is asked again within the current candidates.

Similarities are compared at 1e-6 (:data:`VECTOR_SCORE_DECIMALS`): stores accumulate
float32 dot products in different orders, so near-ties must not decide a ranking.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Sequence

import numpy as np

from ragspine.deadline import check as check_deadline
from ragspine.retrieval.chunking.chunk_store import ChunkStore, StoredChunk
from ragspine.retrieval.chunking.chunking import Chunk
from ragspine.retrieval.filtering.filters import MetadataFilter
from ragspine.retrieval.lexical.base import LexicalIndex, VersionedIndex
from ragspine.retrieval.vector.embedding import EmbeddingBackend, model_namespace
from ragspine.retrieval.vector.embedding_cache import DeletableCache, EmbeddingCache, embedding_key
from ragspine.retrieval.vector.gate import DenseGate
from ragspine.retrieval.vector.vector_store import ProcessLocal, VectorHit, VectorRecord, VectorStore

DEFAULT_EMBED_BATCH = 64
VECTOR_SCORE_DECIMALS = 6
VECTOR_OVERFETCH = 16


class DenseLeg:
    """See the module docstring."""

    def __init__(
        self,
        store: ChunkStore,
        index: LexicalIndex,
        backend: EmbeddingBackend,
        vector_store: VectorStore,
        cache: EmbeddingCache,
        gate: DenseGate,
        *,
        index_text: Callable[[Any], str],
        embed_batch_size: int = DEFAULT_EMBED_BATCH,
    ) -> None:
        self.store = store
        self.index = index
        self.backend = backend
        self.vector_store = vector_store
        self.cache = cache
        self.gate = gate
        self.namespace = model_namespace(backend)
        self.embed_batch_size = embed_batch_size
        self._index_text = index_text
        self._process_local = isinstance(vector_store, ProcessLocal) and vector_store.process_local
        self._lock = threading.RLock()
        self._unreadable: set[tuple[str, int]] = set()
        self._verified: set[tuple[str, int]] = set()  # (chunk_id, version) known to be in sync
        self._verified_seq: int | None = None  # index sequence at which every chunk was

    # -- keeping the vectors in step ------------------------------------------------------------
    def refresh(self) -> None:
        """Forget checks of chunks no longer active; prune a process-local store's stale ids."""
        if len(self._verified) > 2 * max(len(self.index), 1000):
            self._verified &= set(self.index.candidates())
        if self._process_local and self.vector_store.count() > 2 * max(len(self.index), 1000):
            assert isinstance(self.vector_store, ProcessLocal)
            active = {cid for cid, _ in self.index.candidates()}
            self.vector_store.delete([cid for cid in self.vector_store.ids() if cid not in active])

    def ensure_vectors(self, candidates: Sequence[tuple[str, int]], progress: Callable[[int], None] | None = None) -> int:
        """Give every ``(chunk_id, version)`` a current vector; returns how many were embedded."""
        with self._lock:
            have = self.vector_store.versions([cid for cid, _ in candidates])
            missing = [(cid, ver) for cid, ver in candidates if have.get(cid) != ver and (cid, ver) not in self._unreadable]
            embedded = 0
            step = max(self.embed_batch_size * 16, 256)
            for start in range(0, len(missing), step):
                check_deadline("embedding chunks")
                part = missing[start : start + step]
                embedded += self._fill([cid for cid, _ in part])
                if progress is not None:
                    progress(len(part))
            return embedded

    def warm_cache(self, chunks: Sequence[Chunk]) -> int:
        """Put the vectors of ``chunks`` (not necessarily stored yet) into the embedding cache;
        returns how many were embedded. An ingest calls it *before* its atomic replace, so a
        failing model leaves the previous version active; the replace then finds them cached."""
        return self._vectors_for(list(chunks))[1]

    def forget(self, chunks: Sequence[StoredChunk]) -> int:
        """Delete the cache entries of ``chunks`` (deleting a library) and every vector of the
        library; returns how many cache entries existed."""
        removed = 0
        if isinstance(self.cache, DeletableCache):
            removed = self.cache.delete_many([self._key(c) for c in chunks])
        self.vector_store.clear()
        return removed

    def _key(self, chunk: Chunk) -> str:
        return embedding_key(self.namespace, chunk.chunk_id, self._index_text(chunk))

    def _fill(self, chunk_ids: Sequence[str]) -> int:
        chunks = self.store.get_chunks(chunk_ids)
        vectors, embedded = self._vectors_for(chunks)
        records = []
        for chunk, vec in zip(chunks, vectors):
            if vec is None or vec.size == 0:
                self._unreadable.add((chunk.chunk_id, chunk.version))
                continue
            records.append(VectorRecord(chunk.chunk_id, vec, chunk.doc_id, chunk.version, chunk.sensitivity, dict(chunk.metadata)))
        self.vector_store.upsert(records)
        return embedded

    def _vectors_for(self, chunks: Sequence[Any]) -> tuple[list[np.ndarray | None], int]:
        """Each chunk's vector — from the cache, else embedded (and cached); the empty vector
        for a text the dense gate cannot read — and how many were embedded."""
        texts = [self._index_text(c) for c in chunks]
        keys = [embedding_key(self.namespace, c.chunk_id, t) for c, t in zip(chunks, texts)]
        vectors: list[np.ndarray | None] = list(self.cache.get_many(keys))
        todo = [i for i, v in enumerate(vectors) if v is None]
        readable = self.gate.readable([texts[i] for i in todo])
        to_embed = [i for i, ok in zip(todo, readable) if ok]
        fresh: dict[str, np.ndarray] = {keys[i]: np.zeros(0, dtype=np.float32) for i, ok in zip(todo, readable) if not ok}
        for start in range(0, len(to_embed), self.embed_batch_size):
            batch = to_embed[start : start + self.embed_batch_size]
            out = self.backend.embed_texts([texts[i] for i in batch])
            for i, vec in zip(batch, out):
                array = np.asarray(vec, dtype=np.float32)
                vectors[i] = fresh[keys[i]] = array
        for i in todo:
            if vectors[i] is None:
                vectors[i] = fresh[keys[i]]
        self.cache.set_many(fresh)
        return vectors, len(to_embed)

    # -- searching ----------------------------------------------------------------------------
    def reads(self, query: str) -> bool:
        """Whether the model can read ``query`` (else the search runs without this leg)."""
        return bool(query.strip()) and self.gate.query_readable(query)

    def search(
        self, query: str, metadata_filter: MetadataFilter | None, depth: int, versions: dict[str, int] | None = None
    ) -> list[tuple[str, float]]:
        """The ``depth`` nearest current chunks ``[(chunk_id, similarity)]``; records each
        hit's version in ``versions``."""
        if not self._sync_candidates(metadata_filter):
            return []
        qvec = self.backend.embed_texts([query])[0]
        want = depth + VECTOR_OVERFETCH
        hits = self.vector_store.query(qvec, top_k=want, where=metadata_filter)
        current = self._current(hits)
        if len(current) < min(depth, len(hits)) and len(hits) == want:
            # stale vectors (retired elsewhere) crowded the top: ask again within the candidates
            active = dict(self.index.candidates(metadata_filter))
            hits = self.vector_store.query(qvec, top_k=want, where=metadata_filter, ids=list(active))
            current = self._current(hits)
        ranked = sorted(((h.id, round(h.score, VECTOR_SCORE_DECIMALS)) for h in current), key=lambda hit: (-hit[1], hit[0]))
        if versions is not None:
            versions.update((h.id, h.version) for h in current)
        return ranked[:depth]

    def _sync_candidates(self, metadata_filter: MetadataFilter | None) -> bool:
        """Vectors for the filter-surviving candidates, checked once per (chunk_id, version);
        an unfiltered query at an index sequence already fully checked does nothing.
        False when no chunk survives the filter (then nothing is embedded, not even the query)."""
        seq = self.index.seq if isinstance(self.index, VersionedIndex) else None
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

    def _current(self, hits: Sequence[VectorHit]) -> list[VectorHit]:
        """Hits whose vector was computed from the chunk's active version."""
        index = self.index
        if isinstance(index, VersionedIndex):
            return [h for h in hits if index.version_of(h.id) == h.version]
        active = dict(index.candidates())
        return [h for h in hits if active.get(h.id) == h.version]
