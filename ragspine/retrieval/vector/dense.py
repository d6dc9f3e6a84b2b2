"""``DenseLeg``: the vector half of a hybrid search over one library.

Vectors are computed when chunks are written — :meth:`DenseLeg.warm_cache` before an
ingest's replace, :meth:`DenseLeg.ensure_vectors` after it (an ingest, a job, ``ragspine
embed``), looked up in the embedding cache by model + ``chunk_id`` + content hash. **A query
never embeds anything but itself**: it answers from the vectors that exist and says how many
of its candidates have none (the :class:`DenseCoverage` in the search's own
:class:`DenseRanking` — a value of the call, never state on the leg, which requests share):

* **a RESTRICTED chunk gets no vector** — as it has no BM25 postings: it is never embedded,
  never written to any vector store, and a document that turns RESTRICTED loses its vectors
  (``ragspine embed`` also drops those an older release wrote). So an approximate search
  (pgvector's or Qdrant's HNSW) never walks a RESTRICTED vector, and a library answers its
  open queries with the same ids, ranks and scores whether or not it holds RESTRICTED
  documents;
* a chunk the dense gate cannot read gets no vector (it stays reachable through BM25) and is
  not counted missing;
* ``(chunk_id, version)`` pairs already checked are remembered, so a steady-state query does
  no per-library work; at an index state already checked in full, nothing is checked at all;
  missing ones are looked for again at most every :data:`RECHECK_S` seconds (another process
  may be embedding them);
* a process-local vector store (refilled after a restart) takes the missing vectors from the
  embedding cache — a read, never a model call; a persistent store is never written by a query;
* a re-ingested document is never missing from the dense leg: a hit whose vector is of an
  older version than the index's (its new vectors not written yet) is scored again with the
  active version's vector from the embedding cache (the writer cached it before its replace;
  without one it is dropped); a hit of a newer version (committed after the index's refresh)
  is kept at that version, and the fusion then asks again or keeps that newer version. When
  retired vectors (deleted just after their document's replace) crowd the top, the store is
  asked again within the current candidates.

Similarities are compared at 1e-6 (:data:`VECTOR_SCORE_DECIMALS`): stores accumulate
float32 dot products in different orders, so near-ties must not decide a ranking.
"""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from ragspine.deadline import check as check_deadline
from ragspine.retrieval.chunking.chunk_store import ActiveVersions, ChunkStore, StoredChunk
from ragspine.retrieval.chunking.chunking import Chunk
from ragspine.retrieval.filtering.filters import MetadataFilter
from ragspine.retrieval.lexical.base import LexicalIndex, VersionedIndex
from ragspine.retrieval.sensitivity import is_restricted
from ragspine.retrieval.vector.cache import InMemoryEmbeddingCache
from ragspine.retrieval.vector.embedding import EmbeddingBackend, embed_query, model_namespace
from ragspine.retrieval.vector.embedding_cache import DeletableCache, EmbeddingCache, embedding_key
from ragspine.retrieval.vector.gate import DenseGate
from ragspine.retrieval.vector.vector_store import BulkLoads, ProcessLocal, VectorHit, VectorRecord, VectorStore

DEFAULT_EMBED_BATCH = 64
VECTOR_SCORE_DECIMALS = 6
VECTOR_OVERFETCH = 16
RECHECK_S = 5.0  # how often a query looks again for vectors it found missing


@dataclass(frozen=True)
class DenseCoverage:
    """How much of the dense leg a search had: ``missing`` of its ``total`` candidate chunks
    had no current vector (chunks the dense gate cannot read are not counted)."""

    missing: int = 0
    total: int = 0

    @property
    def complete(self) -> bool:
        return self.missing == 0


@dataclass(frozen=True)
class DenseRanking:
    """What one dense search answers: its ranking ``[(chunk_id, similarity)]``, best first,
    and the :class:`DenseCoverage` of its candidates (a value of this search, so two
    searches on one shared leg each read their own)."""

    hits: list[tuple[str, float]]
    coverage: DenseCoverage


def worst_coverage(coverages: Sequence[DenseCoverage]) -> DenseCoverage | None:
    """The coverage of a search that ran the dense leg several times (one per query variant,
    all under one filter): the one with the most missing vectors; ``None`` when none ran."""
    return max(coverages, key=lambda c: (c.missing, c.total), default=None)


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
        #: the dense leg holds what the lexical index holds: RESTRICTED chunks only with an index
        #: built to hold them (``InMemoryLexicalIndex(include_restricted=True)``, which the exit
        #: packs use to prove that the exits drop what reaches them)
        self.include_restricted = bool(getattr(index, "include_restricted", False))
        self._process_local = isinstance(vector_store, ProcessLocal) and vector_store.process_local
        self._lock = threading.RLock()
        self._unreadable: set[tuple[str, int]] = set()
        self._verified: set[tuple[str, int]] = set()  # (chunk_id, version) known to be in sync
        self._verified_seq: int | None = None  # index sequence at which every chunk was checked
        self._missing: set[tuple[str, int]] = set()  # readable, without a vector when last checked
        self._checked_at = 0.0

    @property
    def vectors_outlive_process(self) -> bool:
        """Whether the vectors this leg computes are there for the next process: not when a
        process-local vector store (in-process, ``qdrant::memory:``) sits over an in-process
        embedding cache (PostgreSQL's default) — the next process has neither."""
        return not (self._process_local and isinstance(self.cache, InMemoryEmbeddingCache))

    # -- keeping the vectors in step ------------------------------------------------------------
    def searchable(self, chunks: Sequence[Any]) -> list[Any]:
        """The ``chunks`` that may have a vector: every one but the RESTRICTED."""
        return [c for c in chunks if not self._hidden(c.sensitivity)]

    def _hidden(self, sensitivity: str) -> bool:
        return not self.include_restricted and is_restricted(sensitivity)

    def refresh(self) -> None:
        """Forget checks of chunks no longer active; prune a process-local store's stale ids."""
        if len(self._verified) + len(self._missing) > 2 * max(len(self.index), 1000):
            current = set(self.index.candidates())
            self._verified &= current
            self._missing &= current
        if self._process_local and self.vector_store.count() > 2 * max(len(self.index), 1000):
            assert isinstance(self.vector_store, ProcessLocal)
            active = {cid for cid, _ in self.index.candidates()}
            self.vector_store.delete([cid for cid in self.vector_store.ids() if cid not in active])

    def ensure_vectors(
        self,
        candidates: Sequence[tuple[str, int]],
        progress: Callable[[int], None] | None = None,
        expect: Callable[[int], None] | None = None,
        *,
        fill_local: bool = True,
    ) -> int:
        """Give every ``(chunk_id, version)`` a current vector; returns how many were embedded.
        Cached vectors are stored first (no model call); ``expect(n)`` is then told how many
        chunks are left to embed, and ``progress(k)`` follows each embedded batch — so a
        progress bar's rate and ETA are those of the embedding alone.

        The work goes in steps of :attr:`step` chunks — the store is asked, the chunks read, embedded,
        cached and written one step at a time — so what it holds at once does not grow with
        the library: the candidates and those without a vector (their ``(chunk_id, version)``
        pairs), never all their texts or vectors. ``fill_local=False`` (a process that ends
        after this: ``ragspine ingest``, ``ragspine embed``): a process-local vector store is
        not filled when the embedding cache outlives the process — the vectors go to the cache
        only, a cached vector counts as done, and the next process's first search takes them
        from there, as it does after any restart."""
        with self._lock:
            cache_only = not fill_local and self._process_local and not isinstance(self.cache, InMemoryEmbeddingCache)
            missing = self.missing(candidates)
            if missing:
                store = self.vector_store
                # cached vectors are a first load without a model call: one bulk load (pgvector
                # builds its index once); the model's batches below go as plain upserts, so no
                # lock on the model table is held while a model embeds
                with store.bulk_load(len(missing)) if isinstance(store, BulkLoads) and not cache_only else contextlib.nullcontext():
                    missing = self._look_up(missing, store=not cache_only, mark=True, cached_done=cache_only)
            if self._missing:  # forget the pairs that have a vector now
                still = set(missing)
                self._missing.difference_update([c for c in candidates if c not in still])
            if expect is not None:
                expect(len(missing))
            embedded = 0
            step = self.step
            for start in range(0, len(missing), step):
                check_deadline("embedding chunks")
                part = missing[start : start + step]
                embedded += self._fill([cid for cid, _ in part], uncached=True, progress=progress, upsert=not cache_only)
                self._missing.difference_update(part)
            return embedded

    @property
    def step(self) -> int:
        """Chunks per step of :meth:`ensure_vectors` (and of the cache look-ups): read, embedded
        and written together."""
        return max(self.embed_batch_size * 16, 256)

    def missing(self, candidates: Sequence[tuple[str, int]]) -> list[tuple[str, int]]:
        """The ``candidates`` without a current vector (unreadable ones left out); nothing is
        embedded or written. The vector store is asked one :attr:`step` at a time."""
        out: list[tuple[str, int]] = []
        step = self.step
        for start in range(0, len(candidates), step):
            part = candidates[start : start + step]
            have = self.vector_store.versions([cid for cid, _ in part])
            out += [pair for pair in part if have.get(pair[0]) != pair[1] and pair not in self._unreadable]
        return out

    def warm_cache(self, chunks: Sequence[Chunk]) -> int:
        """Put the vectors of ``chunks`` (not necessarily stored yet) into the embedding cache;
        returns how many were embedded. An ingest calls it *before* its atomic replace, so a
        failing model leaves the previous version active; the replace then finds them cached.
        RESTRICTED chunks are left out: they never get a vector."""
        return self._vectors_for(self.searchable(chunks))[1]

    def vectors(self, chunks: Sequence[StoredChunk]) -> list[np.ndarray]:
        """Each chunk's vector — cached, else embedded now (and cached) — the empty vector for
        one the dense gate cannot read: what a build over the library (RAPTOR's, which reads
        open chunks only) reads. Nothing is written to the vector store."""
        return [v if v is not None else np.zeros(0, dtype=np.float32) for v in self._vectors_for(list(chunks))[0]]

    def drop_restricted(self) -> int:
        """Delete the vectors of the library's active RESTRICTED chunks (an older release wrote
        them; ``ragspine embed`` calls this); how many went. One pass over the store's active
        chunk labels (:class:`ActiveVersions`) — nothing on a store without it."""
        if not isinstance(self.store, ActiveVersions):
            return 0
        removed = 0
        for chunk_ids, _, labels in self.store.active_versions():
            check_deadline("dropping RESTRICTED vectors")
            doomed = [cid for cid, label in zip(chunk_ids, labels, strict=False) if self._hidden(label)]
            if doomed:
                removed += self.vector_store.delete(doomed)
        return removed

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

    def _fill(
        self, chunk_ids: Sequence[str], *, uncached: bool = False, progress: Callable[[int], None] | None = None, upsert: bool = True,
    ) -> int:
        chunks = self.searchable(self.store.get_chunks(chunk_ids))
        vectors, embedded = self._vectors_for(chunks, uncached=uncached, progress=progress)
        self._store_vectors(chunks, vectors, upsert=upsert)
        return embedded

    def _store_vectors(self, chunks: Sequence[StoredChunk], vectors: Sequence[np.ndarray | None], *, upsert: bool = True) -> None:
        """Write the vectors to the vector store (``upsert=False``: only note the chunks the gate cannot read)."""
        records = []
        for chunk, vec in zip(chunks, vectors, strict=False):
            if vec is None or self._hidden(chunk.sensitivity):  # not cached: stays missing; RESTRICTED: never stored
                continue
            if vec.size == 0:
                self._unreadable.add((chunk.chunk_id, chunk.version))
                continue
            if upsert:
                records.append(VectorRecord(chunk.chunk_id, vec, chunk.doc_id, chunk.version, chunk.sensitivity, dict(chunk.metadata)))
        if records:
            self.vector_store.upsert(records)

    def _cached(self, chunks: Sequence[StoredChunk], *, mark: bool = False) -> list[np.ndarray | None]:
        """Each chunk's vector from the cache (no model call): ``None`` when not cached, the
        empty vector for a chunk the gate cannot read (with ``mark``, recorded in the cache
        as such, as an embedding pass does)."""
        texts = [self._index_text(c) for c in chunks]
        keys = [embedding_key(self.namespace, c.chunk_id, t) for c, t in zip(chunks, texts, strict=True)]
        cached = list(self.cache.get_many(keys))
        unknown = [i for i, v in enumerate(cached) if v is None]
        markers: dict[str, np.ndarray] = {}
        for i, ok in zip(unknown, self.gate.readable([texts[i] for i in unknown]), strict=False):
            if not ok:
                cached[i] = markers[keys[i]] = np.zeros(0, dtype=np.float32)
        if mark and markers:
            self.cache.set_many(markers)
        return cached

    def _vectors_for(
        self, chunks: Sequence[Any], *, uncached: bool = False, progress: Callable[[int], None] | None = None
    ) -> tuple[list[np.ndarray | None], int]:
        """Each chunk's vector — from the cache (unless known ``uncached``), else embedded (and
        cached); the empty vector for a text the dense gate cannot read — and how many were
        embedded."""
        texts = [self._index_text(c) for c in chunks]
        keys = [embedding_key(self.namespace, c.chunk_id, t) for c, t in zip(chunks, texts, strict=True)]
        vectors: list[np.ndarray | None] = [None] * len(chunks) if uncached else list(self.cache.get_many(keys))
        todo = [i for i, v in enumerate(vectors) if v is None]
        readable = self.gate.readable([texts[i] for i in todo])
        to_embed = [i for i, ok in zip(todo, readable, strict=False) if ok]
        fresh: dict[str, np.ndarray] = {keys[i]: np.zeros(0, dtype=np.float32) for i, ok in zip(todo, readable, strict=False) if not ok}
        for start in range(0, len(to_embed), self.embed_batch_size):
            batch = to_embed[start : start + self.embed_batch_size]
            out = self.backend.embed_texts([texts[i] for i in batch])
            for i, vec in zip(batch, out, strict=False):
                array = np.asarray(vec, dtype=np.float32)
                vectors[i] = fresh[keys[i]] = array
            if progress is not None:
                progress(len(batch))
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
        self, query: str, metadata_filter: MetadataFilter | None, depth: int, versions: dict[str, int] | None = None,
        qvec: Sequence[float] | None = None, view: Any = None,
    ) -> DenseRanking:
        """The ``depth`` nearest current chunks ``[(chunk_id, similarity)]`` and how many of
        the candidates had no vector; records each hit's version in ``versions``. ``qvec``:
        the query's vector, when the caller has it; ``view``: the rows a principal may read (the
        lexical index's): the store is asked within them only, and the coverage counts them only."""
        coverage = self._sync_candidates(metadata_filter, view)
        if not coverage.total:
            return DenseRanking([], coverage)
        qvec = embed_query(self.backend, query) if qvec is None else qvec
        want = depth + VECTOR_OVERFETCH
        seen = {} if view is None else {"view": view}
        within = None if view is None else [cid for cid, _ in self.index.candidates(metadata_filter, **seen)]
        hits = self.vector_store.query(qvec, top_k=want, where=metadata_filter, ids=within)
        current = self._current(hits, qvec, metadata_filter)
        if len(current) < min(depth, len(hits)) and len(hits) == want:
            # vectors of retired chunks (deleted just after their replace) crowded the top: ask within the candidates
            active = dict(self.index.candidates(metadata_filter, **seen))
            hits = self.vector_store.query(qvec, top_k=want, where=metadata_filter, ids=list(active))
            current = self._current(hits, qvec, metadata_filter)
        ranked = sorted(((h.id, round(h.score, VECTOR_SCORE_DECIMALS)) for h in current), key=lambda hit: (-hit[1], hit[0]))
        if versions is not None:
            versions.update((h.id, h.version) for h in current)
        return DenseRanking(ranked[:depth], coverage)

    def _sync_candidates(self, metadata_filter: MetadataFilter | None, view: Any = None) -> DenseCoverage:
        """Check that the filter-surviving candidates have vectors — once per (chunk_id,
        version), missing ones again every :data:`RECHECK_S` — and return how many of them
        have none; nothing is embedded. An unfiltered query at an index sequence already
        checked does nothing. A total of 0: no chunk survives the filter (then not even the
        query is embedded)."""
        seq = self.index.seq if isinstance(self.index, VersionedIndex) else None
        recheck = bool(self._missing) and time.monotonic() - self._checked_at >= RECHECK_S
        if metadata_filter is None and view is None and seq is not None and seq == self._verified_seq and not recheck:
            total = len(self.index)  # at this sequence every missing pair is a current candidate
            return DenseCoverage(min(len(self._missing), total), total)
        candidates = self.index.candidates(metadata_filter, **({} if view is None else {"view": view}))
        unverified = [c for c in candidates if c not in self._verified and c not in self._unreadable]
        if not recheck:
            unverified = [c for c in unverified if c not in self._missing]
        if unverified:
            with self._lock:
                lacking = self.missing(unverified)
                new = [c for c in lacking if c not in self._missing]
                if self._process_local and lacking:
                    lacking = self._look_up(lacking, store=True)
                elif new:  # which of them the gate cannot read (never to get a vector)
                    unread = set(new) - set(self._look_up(new, store=False))
                    lacking = [c for c in lacking if c not in unread]
                lacking_set = set(lacking)
                self._verified.update(c for c in unverified if c not in lacking_set and c not in self._unreadable)
                self._missing.difference_update(unverified)
                self._missing.update(lacking_set)
                self._checked_at = time.monotonic()
        coverage = DenseCoverage(sum(1 for c in candidates if c in self._missing), len(candidates))
        if metadata_filter is None and view is None:
            self._verified_seq = seq
        return coverage

    def _look_up(
        self, pairs: Sequence[tuple[str, int]], *, store: bool, mark: bool = False, cached_done: bool = False,
    ) -> list[tuple[str, int]]:
        """Look ``pairs`` up in the embedding cache (a read, no model call), one :attr:`step` at a
        time: chunks the gate cannot read are marked so; with ``store`` (a process-local store
        after a restart) the cached vectors are stored. Returns the pairs that are still without
        a vector (``cached_done``: without a cached one)."""
        still: list[tuple[str, int]] = []
        step = self.step
        for start in range(0, len(pairs), step):
            check_deadline("loading vectors from the embedding cache")
            page = pairs[start : start + step]
            wanted = dict(page)
            fetched = [c for c in self.store.get_chunks(list(wanted)) if wanted.get(c.chunk_id) == c.version]
            chunks = self.searchable(fetched)
            vectors = self._cached(chunks, mark=mark)
            for chunk, vec in zip(chunks, vectors, strict=False):
                if vec is not None and vec.size == 0:
                    self._unreadable.add((chunk.chunk_id, chunk.version))
            if store:
                self._store_vectors(chunks, vectors)
            got = {c.chunk_id for c, v in zip(chunks, vectors, strict=False) if v is not None and (store or cached_done or v.size == 0)}
            got.update(c.chunk_id for c in fetched if self._hidden(c.sensitivity))  # never to get a vector
            still += [pair for pair in page if pair[0] not in got]  # the caller's pairs: no copy per chunk
        return [p for p in still if p not in self._unreadable]

    def _current(self, hits: Sequence[VectorHit], qvec: Any, metadata_filter: MetadataFilter | None) -> list[VectorHit]:
        """Each hit at the version it is scored for: a hit of the version the index holds active
        as is; one of an older version (the new vectors not written yet) scored again with the
        active version's cached vector (or dropped); one of a newer version (committed since
        the index's refresh) as is, at that version. A chunk the index does not hold (retired,
        filtered out, RESTRICTED) is dropped."""
        index = self.index
        if isinstance(index, VersionedIndex):
            active: dict[str, int | None] = dict(index.versions([h.id for h in hits]))
        else:
            active = dict(index.candidates())
        current: list[VectorHit] = []
        stale: dict[str, int] = {}
        for hit in hits:
            version = active.get(hit.id)
            if version is None or self._hidden(hit.sensitivity):
                continue
            if hit.version >= version:
                current.append(hit)
            else:
                stale[hit.id] = version
        return current + self._rescored(stale, qvec, metadata_filter) if stale else current

    def _rescored(self, stale: dict[str, int], qvec: Any, metadata_filter: MetadataFilter | None) -> list[VectorHit]:
        """Hits of ``stale`` (``{chunk_id: the index's version}``) scored with the cached vector
        of the store's active version — the index's, or a newer one committed since."""
        chunks = [c for c in self.searchable(self.store.get_chunks(list(stale)))
                  if c.version >= stale[c.chunk_id] and (metadata_filter is None or metadata_filter.matches(c.metadata))]
        q = np.asarray(qvec, dtype=np.float32)
        q = q / (np.linalg.norm(q) or 1.0)
        out = []
        for chunk, vec in zip(chunks, self._cached(chunks), strict=False):
            if vec is None or vec.size == 0 or vec.shape != q.shape:
                continue
            score = float(np.dot(q, vec / (np.linalg.norm(vec) or 1.0)))
            out.append(VectorHit(chunk.chunk_id, score, chunk.doc_id, chunk.version, chunk.sensitivity, dict(chunk.metadata)))
        return out

