"""The embedding pass (``sync_vectors``: ``ragspine ingest``, ``ragspine embed``) holds a step of
chunks at a time, never a library's texts or vectors: recording doubles count the largest batch
each side is handed over a few thousand chunks. ``fill_local=False`` (the CLI's) leaves a
process-local vector store empty when the embedding cache outlives the process, and changes no
search result."""

from __future__ import annotations

import sqlite3
from typing import Any, Sequence

from ragspine.retrieval.chunking.chunk_store import DocumentChunks, StoredChunk
from ragspine.retrieval.pipeline import LibraryPipeline
from ragspine.retrieval.vector.cache import InMemoryEmbeddingCache
from ragspine.retrieval.vector.embedding_backends import DeterministicEmbeddingBackend
from ragspine.retrieval.vector.store import InProcessVectorStore
from ragspine.retrieval.vector.vector_store import VectorRecord
from ragspine.stores.sqlite.chunk_store import SQLiteChunkStore
from ragspine.stores.sqlite.embedding_cache import SQLiteEmbeddingCache
from tests.helpers import make_chunk

DOCS, PER_DOC = 300, 10  # 3,000 chunks
BATCH = 16  # embed_batch_size: the dense leg's step is max(16 * 16, 256) = 256 chunks
STEP = 256
WORDS = "port freight shipment revenue warranty customs supplier margin router board quarter delay".split()


class RecordingBackend:
    """The hashing embedder, counting the texts of each call."""

    def __init__(self) -> None:
        self.inner = DeterministicEmbeddingBackend(dim=32)
        self.model_id, self.dim, self.languages = self.inner.model_id, self.inner.dim, None
        self.calls: list[int] = []

    def embed_texts(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(len(texts))
        return self.inner.embed_texts(texts)


class RecordingStore(SQLiteChunkStore):
    """The SQLite chunk store, counting the ids of each ``get_chunks`` (the texts read at once)."""

    reads: list[int]

    def get_chunks(self, chunk_ids: Sequence[str]) -> list[StoredChunk]:
        self.reads.append(len(chunk_ids))
        return super().get_chunks(chunk_ids)


class RecordingVectors:
    """A vector store that is not process-local (as pgvector, Qdrant), counting each batch it is handed."""

    process_local = False

    def __init__(self) -> None:
        self.inner = InProcessVectorStore()
        self.upserts: list[int] = []
        self.asked: list[int] = []

    def upsert(self, records: Sequence[VectorRecord]) -> None:
        self.upserts.append(len(records))
        self.inner.upsert(records)

    def versions(self, ids: Sequence[str]) -> dict[str, int]:
        self.asked.append(len(ids))
        return self.inner.versions(ids)

    def __getattr__(self, name: str) -> Any:  # query, delete, clear, count
        return getattr(self.inner, name)


def _library(tmp_path: Any, **kwargs: Any) -> tuple[LibraryPipeline, RecordingStore, RecordingBackend]:
    store = RecordingStore(str(tmp_path / "lib.db"))
    store.reads = []
    backend = RecordingBackend()
    pipe = LibraryPipeline(store, embedding_backend=backend, embed_batch_size=BATCH, **kwargs)
    docs = (
        DocumentChunks(f"d{d:04d}", [
            make_chunk(f"d{d:04d}", i, " ".join(WORDS[(d * 7 + i * 3 + k) % len(WORDS)] for k in range(12)) + f" doc {d} part {i}")
            for i in range(PER_DOC)
        ])
        for d in range(DOCS)
    )
    assert pipe.ingest_many(docs, batch_chunks=1000).chunks == DOCS * PER_DOC
    store.reads.clear()
    return pipe, store, backend


def test_the_embedding_pass_hands_each_side_a_step_never_the_library(tmp_path):
    vectors = RecordingVectors()
    pipe, store, backend = _library(tmp_path, vector_store=vectors, embedding_cache=SQLiteEmbeddingCache(str(tmp_path / "cache.db")))
    assert pipe.sync_vectors() == DOCS * PER_DOC
    assert sum(backend.calls) == DOCS * PER_DOC and max(backend.calls) <= BATCH
    assert sum(vectors.upserts) == DOCS * PER_DOC and max(vectors.upserts) <= STEP  # vectors streamed to the store
    assert max(store.reads) <= STEP  # chunk texts read a step at a time
    assert max(vectors.asked) <= STEP  # "which have a vector?" asked a step at a time
    assert vectors.inner.count() == DOCS * PER_DOC


def test_cached_vectors_are_loaded_a_step_at_a_time(tmp_path):
    cache = SQLiteEmbeddingCache(str(tmp_path / "cache.db"))
    pipe, _, _ = _library(tmp_path, vector_store=RecordingVectors(), embedding_cache=cache)
    pipe.sync_vectors()
    vectors = RecordingVectors()  # a fresh store over the same cache: every vector is a cache hit
    again = LibraryPipeline(pipe.store, embedding_backend=RecordingBackend(), embed_batch_size=BATCH, vector_store=vectors,
                            embedding_cache=cache)
    pipe.store.reads.clear()  # type: ignore[attr-defined]
    assert again.sync_vectors() == 0 and again.embedding_backend.calls == []  # type: ignore[union-attr]
    assert sum(vectors.upserts) == DOCS * PER_DOC and max(vectors.upserts) <= STEP
    assert max(pipe.store.reads) <= STEP  # type: ignore[attr-defined]


def test_fill_local_false_leaves_a_process_local_store_empty_and_results_unchanged(tmp_path):
    cache = SQLiteEmbeddingCache(str(tmp_path / "cache.db"))
    pipe, store, backend = _library(tmp_path, embedding_cache=cache)  # the default store: in this process
    assert pipe.sync_vectors(fill_local=False) == DOCS * PER_DOC
    assert pipe.vector_store is not None and pipe.vector_store.count() == 0  # the vectors went to the cache only
    with sqlite3.connect(tmp_path / "cache.db") as db:
        assert db.execute("SELECT count(*) FROM embedding_cache").fetchone()[0] == DOCS * PER_DOC
    assert max(store.reads) <= STEP
    backend.calls.clear()
    assert pipe.sync_vectors(fill_local=False) == 0 and backend.calls == []  # a cached vector counts as done

    filled = LibraryPipeline(store, embedding_backend=RecordingBackend(), embed_batch_size=BATCH,
                             embedding_cache=SQLiteEmbeddingCache(str(tmp_path / "other.db")))
    filled.sync_vectors()
    assert filled.vector_store is not None and filled.vector_store.count() == DOCS * PER_DOC
    for query in ("freight delay", "board margin quarter", "doc 17 part 3"):
        mine = [(r.chunk.chunk_id, r.scores) for r in pipe.retrieve(query, top_k=10)]  # refilled from the cache
        assert mine == [(r.chunk.chunk_id, r.scores) for r in filled.retrieve(query, top_k=10)]
        assert any(scores["vector"] > 0 for _, scores in mine)
    assert backend.calls and set(backend.calls) == {1}  # the queries embedded themselves, no chunk


def test_fill_local_false_still_fills_the_store_when_the_cache_dies_with_the_process(tmp_path):
    pipe, _, _ = _library(tmp_path, embedding_cache=InMemoryEmbeddingCache())
    assert pipe.sync_vectors(fill_local=False) == DOCS * PER_DOC
    assert pipe.vector_store is not None and pipe.vector_store.count() == DOCS * PER_DOC
