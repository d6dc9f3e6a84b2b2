"""``NarrativeIndex``: one library's narrative retrieval — ingest, search, rerank, postprocess.

``retrieve(query)`` runs, left to right: the metadata pre-filter → query rewriting (multi-query;
the original query first) → each query's BM25 (+ dense) legs → one RRF over every leg →
optional rerank (RESTRICTED results never reach the reranker) → optional postprocessing.
The RESTRICTED exit #2 is the link adapter (``link/narrative_link.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Protocol, Sequence

from ragspine.errors import ConfigError
from ragspine.retrieval.chunking.chunk_store import ChunkStore, DocumentChunks, StoredChunk, fingerprint
from ragspine.retrieval.chunking.chunking import (
    DEFAULT_CHUNK_CHARS,
    DEFAULT_OVERLAP_CHARS,
    Chunk,
    chunk_document,
)
from ragspine.retrieval.lexical.fusion import DEFAULT_RRF_K
from ragspine.retrieval.lexical.hybrid import (
    DEFAULT_CANDIDATE_K,
    MAX_STALE_RETRIES,
    HybridRetriever,
    StaleRanking,
    combine_filters,
)
from ragspine.retrieval.lexical.index import LexicalIndex, default_index_text
from ragspine.retrieval.lexical.rewrite import QueryRewriter
from ragspine.retrieval.mode import RetrievalMode, make_retrieval_mode
from ragspine.retrieval.rerank.listwise_rerank import Reranker, rerank_open_subset
from ragspine.retrieval.sensitivity import DEFAULT_SENSITIVITY
from ragspine.retrieval.types import RetrievalResult
from ragspine.retrieval.vector.base import EmbeddingBackend, EmbeddingCache, VectorStore
from ragspine.retrieval.vector.gate import DenseGate


#: Chunks per ``replace_many`` transaction in :meth:`NarrativeIndex.ingest_many`.
DEFAULT_INGEST_BATCH = 5000


@dataclass
class IngestReport:
    """What :meth:`NarrativeIndex.ingest_many` did."""

    documents: int = 0  # documents seen
    written: int = 0  # documents replaced (a new version)
    skipped: int = 0  # documents already current (same fingerprint): nothing written
    chunks: int = 0  # chunk rows written


class Postprocessor(Protocol):
    def process(self, query: str, results: list[RetrievalResult]) -> list[RetrievalResult]: ...


class NarrativeIndex:
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
        postprocessor: Postprocessor | None = None,
        lexical_index: LexicalIndex | None = None,
        dense_gate: DenseGate | None = None,
        rrf_k: int = DEFAULT_RRF_K,
        candidate_k: int = DEFAULT_CANDIDATE_K,
        chunk_chars: int = DEFAULT_CHUNK_CHARS,
        overlap_chars: int = DEFAULT_OVERLAP_CHARS,
        embed_batch_size: int = 64,
        index_text: Callable[[StoredChunk], str] = default_index_text,
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
        self.reranker = reranker
        self.postprocessor = postprocessor
        self.chunk_chars = chunk_chars
        self.overlap_chars = overlap_chars
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
        """Chunk ``text`` and make it the document's new active version."""
        chunks = chunk_document(
            text,
            doc_id,
            title=title,
            metadata=metadata,
            sensitivity=sensitivity,
            source=source,
            source_offset=source_offset,
            max_chars=self.chunk_chars,
            overlap_chars=self.overlap_chars,
        )
        return self.replace_doc_chunks(doc_id, chunks, valid_as_of=valid_as_of, embed=embed)

    def replace_doc_chunks(
        self, doc_id: str, chunks: Sequence[Chunk], valid_as_of: str = "", *, embed: bool = True
    ) -> int:
        """Versioned replace in the store, then the vector side follows (old vectors out)."""
        written = self.store.replace_doc_chunks(doc_id, chunks, valid_as_of=valid_as_of)
        vectors = self.retriever.vector_store
        if vectors is not None:
            vectors.delete(doc_ids=[doc_id])
            if embed and written:
                self.retriever.refresh()
                stored = self.store.iter_chunks(doc_id=doc_id)
                self.retriever.ensure_vectors([(c.chunk_id, c.version) for c in stored])
        return written

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
        or none). With ``resume`` a document whose active version has the same
        :func:`fingerprint` is skipped, so re-running an interrupted ingest writes only what is
        missing and never duplicates a version. ``progress(documents, chunks)`` follows each
        batch. Vectors are not computed here (``sync_vectors`` does, in batches through the
        cache); the stale ones of replaced documents are dropped. The lexical index catches up
        once, at the end."""
        report = IngestReport()
        batch: list[DocumentChunks] = []
        in_batch: set[str] = set()
        size = 0

        def flush() -> None:
            nonlocal batch, size
            if not batch:
                return
            todo = batch
            if resume:
                current = self.store.fingerprints([d.doc_id for d in batch])
                todo = [d for d in batch if current.get(d.doc_id) != fingerprint(d.chunks, d.valid_as_of)]
            report.chunks += self.store.replace_many(todo)
            vectors = self.retriever.vector_store
            if vectors is not None and todo:
                vectors.delete(doc_ids=[d.doc_id for d in todo])
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

    def sync_vectors(self, progress: Callable[[int], None] | None = None) -> int:
        """Embed every active chunk lacking a current vector (e.g. after a bulk ingest)."""
        self.retriever.refresh()
        return self.retriever.ensure_vectors(self.retriever.index.candidates(), progress=progress)

    # -- reading ------------------------------------------------------------------------------
    def max_fused_score(self, query: str) -> float:
        """The fused score of a chunk ranked first by every ranking ``retrieve(query)`` feeds to
        RRF (each leg of each query variant): ``n / (rrf_k + 1)``. A result's
        ``scores["fused"]`` divided by it is in [0, 1] — 1 means "first for every ranker"."""
        queries = self.rewriter.rewrite(query) if self.rewriter is not None else [query]
        rankings = sum(len(self.retriever.legs_for(q)) for q in queries)
        return rankings / (self.retriever.rrf_k + 1)

    def retrieve(
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
        retriever = self.retriever
        queries = self.rewriter.rewrite(query) if self.rewriter is not None else [query]
        depth = max(retriever.candidate_k, top_k)
        for attempt in range(MAX_STALE_RETRIES + 1):  # a version committed mid-query: re-rank
            retriever.refresh()
            legs = [retriever.rankings(q, metadata_filter=filt, depth=depth) for q in queries]
            try:
                results = retriever.fuse(legs, top_k=top_k, stale="raise" if attempt < MAX_STALE_RETRIES else "skip")
                break
            except StaleRanking:
                continue
        if self.reranker is not None:
            reranker = self.reranker
            results = rerank_open_subset(results, lambda items: reranker.rerank(query, items))
        if self.postprocessor is not None:
            results = self.postprocessor.process(query, results)
        return results[:top_k]
