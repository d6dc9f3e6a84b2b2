"""``LibraryPipeline``: one library's narrative retrieval — ingest, search, rerank, postprocess.

Writing: a :class:`~ragspine.retrieval.chunking.base.Chunker` cuts a document into chunks,
the chunk store makes them the document's new version, the dense leg's vectors follow.

Reading, left to right: the metadata pre-filter (a :class:`MetadataFilter`, parsed once at
the edge) → query rewriting (multi-query; the original query first) → each query's BM25
(+ dense) legs → one RRF over every leg → optional rerank (RESTRICTED results never reach
the reranker) → optional postprocessing. :meth:`LibraryPipeline.search_once` is one such
pass with no retries; whether to ask again is decided in one place,
:func:`~ragspine.retrieval.ask_again.ask_again`. The RESTRICTED exit #2 is the link adapter
(``link/narrative_link.py``).

This was ``NarrativeIndex`` (the seed's name, still importable from
``ragspine.retrieval.narrative_index`` and ``ragspine.retrieval.lexical.retrieval``).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

from ragspine.errors import ConfigError
from ragspine.retrieval.ask_again import Page, ask_again
from ragspine.retrieval.chunk_cache import ChunkCache
from ragspine.retrieval.chunking.base import Chunker
from ragspine.retrieval.chunking.chunk_store import (
    BulkWrites,
    ChunkStore,
    DocumentAcls,
    DocumentChunks,
    Fingerprints,
    StoredChunk,
    StreamingReads,
    fingerprint,
)
from ragspine.retrieval.chunking.chunking import (
    DEFAULT_CHUNK_CHARS,
    DEFAULT_OVERLAP_CHARS,
    Chunk,
    ParagraphChunker,
)
from ragspine.retrieval.filtering.filters import FilterSpec, MetadataFilter, combine_filters
from ragspine.retrieval.fusion import DEFAULT_RRF_K
from ragspine.retrieval.fusion.weights import AdaptiveWeights, LegWeights, ZScoreFusion, effective_weights
from ragspine.retrieval.lexical.base import LexicalIndex, default_index_text
from ragspine.retrieval.lexical.hybrid import DEFAULT_CANDIDATE_K, HybridRetriever
from ragspine.retrieval.mode import RetrievalMode, make_retrieval_mode
from ragspine.retrieval.postprocess.base import Postprocessor
from ragspine.retrieval.query.base import QueryRewriter
from ragspine.retrieval.query.probes import Probe, search_probes
from ragspine.retrieval.request import SearchRequest
from ragspine.retrieval.rerank.base import DEFAULT_RERANK_DEPTH, IndexingReranker, Reranker, rerank_open_subset
from ragspine.retrieval.sensitivity import DEFAULT_SENSITIVITY
from ragspine.retrieval.storable import check_document
from ragspine.retrieval.types import RetrievalResult
from ragspine.retrieval.vector.embedding import EmbeddingBackend
from ragspine.retrieval.vector.embedding_cache import EmbeddingCache
from ragspine.retrieval.vector.gate import DenseGate
from ragspine.retrieval.vector.vector_store import VectorStore

__all__ = ["DEFAULT_INGEST_BATCH", "IngestReport", "LibraryPipeline"]

log = logging.getLogger(__name__)

#: Chunks per ``replace_many`` transaction in :meth:`LibraryPipeline.ingest_many`.
DEFAULT_INGEST_BATCH = 5000


@dataclass
class IngestReport:
    """What :meth:`LibraryPipeline.ingest_many` did."""

    documents: int = 0  # documents seen
    written: int = 0  # documents replaced (a new version)
    skipped: int = 0  # documents already current (same fingerprint): nothing written
    chunks: int = 0  # chunk rows written


class LibraryPipeline:
    """See the module docstring. ``mode=None`` means hybrid with a backend, else economy."""

    def __init__(
        self,
        store: ChunkStore,
        *,
        embedding_backend: EmbeddingBackend | None = None,
        vector_store: VectorStore | None = None,
        embedding_cache: EmbeddingCache | None = None,
        mode: RetrievalMode | str | None = None,
        rewriter: QueryRewriter | None = None,
        reranker: Reranker | None = None,
        rerank_depth: int = DEFAULT_RERANK_DEPTH,
        postprocessor: Postprocessor | None = None,
        lexical_index: LexicalIndex | None = None,
        dense_gate: DenseGate | None = None,
        chunker: Chunker | None = None,
        rrf_k: int = DEFAULT_RRF_K,
        candidate_k: int = DEFAULT_CANDIDATE_K,
        chunk_chars: int = DEFAULT_CHUNK_CHARS,
        overlap_chars: int = DEFAULT_OVERLAP_CHARS,
        embed_batch_size: int = 64,
        index_text: Callable[[StoredChunk], str] = default_index_text,
        chunk_cache: ChunkCache | None = None,
        leg_weights: LegWeights | None = None,
    ) -> None:
        if mode is None:
            mode = "hybrid" if embedding_backend is not None else "economy"
        self.mode = make_retrieval_mode(mode)
        if self.mode.requires_embeddings and embedding_backend is None:
            raise ConfigError(f"retrieval mode {self.mode.name!r} needs an embedding_backend")
        if not self.mode.uses_embeddings:
            embedding_backend = None  # economy: zero embedding cost, no vector store
        self.store = store
        self.library_id = store.library_id
        self.rewriter = rewriter
        if rerank_depth < 1:
            raise ConfigError(f"rerank_depth must be >= 1, got {rerank_depth}")
        self.reranker = reranker
        self.rerank_depth = rerank_depth
        #: ``observer(reranker, seconds)`` after each rerank (the service's latency histogram).
        self.rerank_observer: Callable[[Reranker, float], None] | None = None
        #: Whether RAPTOR runs when a request does not say (set by the Stack: a library's own
        #: switch or ``RAGSPINE_RAPTOR``); ``None``: the configured one.
        self.raptor_default: bool | None = None
        self.postprocessor = postprocessor
        self.chunker: Chunker = chunker if chunker is not None else ParagraphChunker(max_chars=chunk_chars, overlap_chars=overlap_chars)
        self.retriever = HybridRetriever(
            store,
            embedding_backend=embedding_backend,
            vector_store=vector_store,
            embedding_cache=embedding_cache,
            lexical_index=lexical_index,
            legs=self.mode.legs(embedding_backend is not None),
            rrf_k=rrf_k,
            candidate_k=candidate_k,
            dense_gate=dense_gate,
            embed_batch_size=embed_batch_size,
            index_text=index_text,
            chunk_cache=chunk_cache,
            leg_weights=leg_weights,
        )

    @property
    def embedding_backend(self) -> EmbeddingBackend | None:
        return self.retriever.embedding_backend

    @property
    def vector_store(self) -> VectorStore | None:
        return self.retriever.vector_store

    # -- writing ------------------------------------------------------------------------------
    def ingest_text(
        self,
        doc_id: str,
        text: str,
        *,
        title: str = "",
        metadata: Mapping[str, Any] | None = None,
        sensitivity: str = DEFAULT_SENSITIVITY,
        source: str | None = None,
        source_offset: int = 0,
        valid_as_of: str = "",
        embed: bool = True,
    ) -> int:
        """Chunk ``text`` and make it the document's new active version (a string no store can
        keep is refused first: :func:`~ragspine.retrieval.storable.check_document`)."""
        check_document(doc_id, title=title, text=text, sensitivity=sensitivity, valid_as_of=valid_as_of,
                       source=source, metadata=metadata)
        chunks = self.chunker.chunk(
            text, doc_id, title=title, metadata=metadata, sensitivity=sensitivity, source=source, source_offset=source_offset,
        )
        return self.replace_doc_chunks(doc_id, chunks, valid_as_of=valid_as_of, embed=embed)

    def replace_doc_chunks(self, doc_id: str, chunks: Sequence[Chunk], valid_as_of: str = "", *, embed: bool = True) -> int:
        """Versioned replace in the store, then the vector side follows: the new version's
        vectors are cached first (a failing model writes nothing), then overwrite the old ones
        by chunk id after the replace, and only then do the ids the new version lacks go — so
        the document never leaves the dense leg (until they are written, a search scores the
        new version with its cached vectors). A RESTRICTED chunk gets no vector, and loses the
        one its open version had. Without ``embed`` the old vectors go at once."""
        return self.replace_docs([DocumentChunks(doc_id, chunks, valid_as_of)], embed=embed)

    def replace_docs(self, docs: Sequence[DocumentChunks], *, embed: bool = True) -> int:
        """:meth:`replace_doc_chunks` for several documents (distinct ids): on a store with
        :class:`BulkWrites` the rows of all of them are one transaction (all visible, or
        none), and their vectors follow as one pass; otherwise one replace per document."""
        store = self.store
        vectors = self.retriever.vector_store
        doc_ids = [d.doc_id for d in docs]
        before = {c.chunk_id for c in self.active_chunks(doc_ids)} if vectors is not None and embed else set()
        if vectors is not None and embed:
            self.retriever.warm_cache([c for d in docs for c in d.chunks])  # RESTRICTED ones are left out
        if isinstance(store, BulkWrites):  # one document too: its ACL is written in the same transaction
            written = store.replace_many(docs)
        elif any(d.acl is not None for d in docs):
            raise ConfigError(f"{type(store).__name__} cannot write a document's ACL with its chunks (no replace_many)")
        else:
            written = sum(store.replace_doc_chunks(d.doc_id, d.chunks, valid_as_of=d.valid_as_of) for d in docs)
        if vectors is None:
            if written:
                self.index_for_rerank(doc_ids)
            return written
        if embed and written:
            self.retriever.refresh()
            stored = self.active_chunks(doc_ids)
            searchable = self.retriever.dense.searchable(stored) if self.retriever.dense is not None else stored
            self.retriever.ensure_vectors([(c.chunk_id, c.version) for c in searchable])
            gone = before - {c.chunk_id for c in searchable}  # retired ids, and every RESTRICTED one
            if gone:
                vectors.delete(sorted(gone))
            self.index_for_rerank(doc_ids, stored)
        else:
            vectors.delete(doc_ids=doc_ids)
            if written:
                self.index_for_rerank(doc_ids)
        return written

    def index_for_rerank(self, doc_ids: Sequence[str], chunks: Sequence[StoredChunk] | None = None) -> int:
        """Hand the active chunks of ``doc_ids`` (``chunks`` when already read) to a reranker
        that works at index time (:class:`IndexingReranker`: SPLADE expands them now, so a
        query encodes only itself); how many it computed. Nothing happens with any other
        reranker. A failure is logged, never raised: the write stands, and the reranker
        computes what it lacks at query time."""
        reranker = self.reranker
        if not isinstance(reranker, IndexingReranker) or not doc_ids:
            return 0
        try:
            return reranker.index(chunks if chunks is not None else self.active_chunks(doc_ids))
        except Exception as exc:  # the chunks are written; the reranker catches up at query time
            log.warning("%s: index-time rerank work failed (computed at query time instead): %s", self.library_id, exc)
            return 0

    def active_chunks(self, doc_ids: Sequence[str]) -> list[StoredChunk]:
        """The active chunks of ``doc_ids`` (one read on a store with :class:`StreamingReads`)."""
        if isinstance(self.store, StreamingReads):
            return list(self.store.iter_active_docs(doc_ids))
        return [c for doc_id in doc_ids for c in self.store.iter_chunks(doc_id=doc_id)]

    def ingest_many(
        self,
        docs: Iterable[DocumentChunks],
        *,
        batch_chunks: int = DEFAULT_INGEST_BATCH,
        resume: bool = True,
        progress: Callable[[int, int], None] | None = None,
    ) -> IngestReport:
        """Bulk ingest from a stream: documents are grouped into batches of about
        ``batch_chunks`` chunks, each batch one ``replace_many`` transaction (all of it visible,
        or none) on a store with :class:`BulkWrites` (else one replace per document). With
        ``resume`` (on a store with :class:`Fingerprints`) a document whose active version has
        the same :func:`fingerprint` is skipped, so re-running an interrupted ingest writes only
        what is missing and never duplicates a version. ``progress(documents, chunks)`` follows
        each batch. Vectors are not computed here (``sync_vectors`` does, in batches through
        the cache); the stale ones of replaced documents are dropped. The lexical index
        catches up once, at the end."""
        report = IngestReport()
        batch: list[DocumentChunks] = []
        in_batch: set[str] = set()
        size = 0
        store = self.store

        def flush() -> None:
            nonlocal batch, size
            if not batch:
                return
            todo = batch
            if resume and isinstance(store, Fingerprints):
                current = store.fingerprints([d.doc_id for d in batch])
                todo = [d for d in batch if current.get(d.doc_id) != fingerprint(d.chunks, d.valid_as_of)]
            unchanged_acls = {d.doc_id: d.acl for d in batch if d.acl is not None and d not in todo}
            if unchanged_acls and isinstance(store, DocumentAcls):  # text unchanged, its ACL maybe not: recorded if it changed
                store.set_acls(unchanged_acls, by="ingest")
            if isinstance(store, BulkWrites):
                report.chunks += store.replace_many(todo)
            elif any(d.acl is not None for d in todo):
                raise ConfigError(f"{type(store).__name__} cannot write a document's ACL with its chunks (no replace_many)")
            else:
                report.chunks += sum(store.replace_doc_chunks(d.doc_id, d.chunks, d.valid_as_of) for d in todo)
            vectors = self.retriever.vector_store
            if vectors is not None and todo:
                vectors.delete(doc_ids=[d.doc_id for d in todo])
            if todo:
                self.index_for_rerank([d.doc_id for d in todo])
            report.written += len(todo)
            report.skipped += len(batch) - len(todo)
            if progress is not None:
                progress(len(batch), size)
            batch, size = [], 0
            in_batch.clear()

        for doc in docs:
            doc = DocumentChunks(*doc)
            if doc.doc_id in in_batch:
                flush()  # one version of a document per transaction
            batch.append(doc)
            in_batch.add(doc.doc_id)
            size += len(doc.chunks)
            report.documents += 1
            if size >= batch_chunks:
                flush()
        flush()
        self.retriever.refresh()
        return report

    def retire(self, doc_id: str) -> int:
        """Remove a document from the active set (its history stays in the store)."""
        return self.replace_doc_chunks(doc_id, [])

    def sync_vectors(
        self, progress: Callable[[int], None] | None = None, expect: Callable[[int], None] | None = None, *, fill_local: bool = True,
    ) -> int:
        """Embed every active chunk lacking a current vector (after a bulk ingest, or
        ``ragspine embed``); queries never embed chunks. ``expect(n)``: how many are left to
        embed once the cached ones are stored; ``progress(k)``: after each embedded batch.
        The work goes a step of chunks at a time (memory flat in the library's size);
        ``fill_local=False`` (a process that ends next): a process-local vector store is left
        empty when the embedding cache outlives the process (see :meth:`DenseLeg.ensure_vectors`)."""
        return self.retriever.sync_vectors(progress, expect, fill_local=fill_local)

    # -- reading ------------------------------------------------------------------------------
    def queries(self, query: str | SearchRequest) -> list[Probe]:
        """What a search runs: the question's variants (the original first), then the probes a
        query transform generated for it in this request (:mod:`ragspine.retrieval.query.probes`)."""
        request = SearchRequest.of(query)
        question = request.question
        return search_probes(self.rewriter.rewrite(question) if self.rewriter is not None else [question], request.probes)

    def max_fused_score(self, query: str | SearchRequest) -> float:
        """The fused score of a chunk ranked first by every ranking ``retrieve(query)`` feeds to
        RRF (each leg of each query variant): ``n / (rrf_k + 1)`` (``n`` with ``zscore`` fusion). A result's
        ``scores["fused"]`` divided by it is in [0, 1] — 1 means "first for every ranker"."""
        request = SearchRequest.of(query)
        legs = [leg for q in self.queries(request) for leg in self.retriever.legs_for(q)]
        weights = effective_weights(self.retriever.leg_weights, request.weights)
        if isinstance(weights, ZScoreFusion) and len(legs) > 1:  # scaled so that first everywhere = n
            return float(len(legs))
        if weights is None or isinstance(weights, AdaptiveWeights) or len(legs) < 2:  # adaptive weights sum to the count
            return len(legs) / (self.retriever.rrf_k + 1)
        return sum(weights.get(leg, 1.0) for leg in legs) / (self.retriever.rrf_k + 1)

    def search_once(
        self, query: str | SearchRequest, want: int, metadata_filter: MetadataFilter | None, skip_stale: bool = False,
    ) -> Page[RetrievalResult]:
        """One pass of the pipeline: up to ``want`` results, reranked and postprocessed, with
        the dense leg's coverage of this pass (no retries: raises
        :class:`~ragspine.retrieval.ask_again.StaleRanking` unless ``skip_stale``). ``query``:
        the question, or the request whose question, probes, stages, leg weights and RAPTOR
        choice this pass follows (its filter and ``top_k`` are the caller's:
        ``metadata_filter`` and ``want``)."""
        request = SearchRequest.of(query)
        query = request.question
        override = request.stages  # a request's own ranking, else the pipeline's
        reranker, depth, postprocessor = (
            (self.reranker, self.rerank_depth, self.postprocessor) if override is None
            else (override.reranker, override.rerank_depth, override.postprocessor)
        )
        staged = reranker is not None or postprocessor is not None
        fetch = max(want, depth) if staged else want  # rerank and postprocess before truncating
        page = self.retriever.search_once(
            self.queries(request), fetch, metadata_filter, skip_stale, weights=request.weights, raptor=request.raptor,
            viewer=request.viewer,
        )
        results = page.items
        if reranker is not None:
            started = time.perf_counter()
            results = rerank_open_subset(results, lambda items: reranker.rerank(query, items), top_n=depth)
            if self.rerank_observer is not None:
                self.rerank_observer(reranker, time.perf_counter() - started)
        if postprocessor is not None:
            results = postprocessor.process(query, results, top_k=want)
        return Page(results[:want], page.exhausted and len(results) <= want, page.dense_coverage)

    def retrieve(self, query: str | SearchRequest, *, top_k: int = 10, metadata_filter: FilterSpec = None, **fields: Any) -> list[RetrievalResult]:
        """The Python API's entry point: ``metadata_filter`` (any form ``parse_filter`` reads)
        AND the seed's keyword pre-filters (``topic=``, ...), RESTRICTED results included (the
        link exit removes them); ``query``: the question, or a request whose probes, stages,
        leg weights and RAPTOR choice the search follows."""
        filt = combine_filters(metadata_filter, fields)
        search = lambda want, f, skip: self.search_once(query, want, f, skip)  # noqa: E731
        return ask_again(search, top_k=top_k, metadata_filter=filt).items
