"""Assembly: the whole retrieval stack from :class:`Settings` (what the CLI and service use).

``Stack(settings)`` opens the chunk database and builds, lazily and only when the retrieval
mode needs them, the embedding backend, the embedding cache and one vector store per
library. In ``economy`` mode (``bm25``/``lexical``) none of those three is ever built.
"""

from __future__ import annotations

import threading
from typing import Any, Sequence

from ragspine.config import Settings, load_settings
from ragspine.errors import ConfigError, MissingDependencyError
from ragspine.retrieval.chunking.chunk_store import LibraryInfo
from ragspine.retrieval.lexical.rewrite import GlossaryQueryRewriter
from ragspine.retrieval.link.narrative_link import (
    NarrativeIndexRetriever,
    NarrativeRetriever,
)
from ragspine.retrieval.mode import RetrievalMode, make_retrieval_mode
from ragspine.retrieval.narrative_index import NarrativeIndex
from ragspine.retrieval.routing.multi_index import MultiIndexRetriever
from ragspine.retrieval.routing.routers import make_library_router
from ragspine.retrieval.vector.base import (
    EmbeddingBackend,
    EmbeddingCache,
    VectorStore,
    model_namespace,
)
from ragspine.retrieval.vector.gate import DenseGate
from ragspine.stores.registry import (
    make_qdrant_client_for,
    open_database,
    parse_chunk_store,
    parse_embedding_cache,
    parse_vector_store,
)


class Stack:
    """See the module docstring. Close it when done (``with Stack() as stack:``)."""

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        mode: RetrievalMode | str | None = None,
        provider: Any = None,
    ) -> None:
        self.settings = settings or load_settings()
        s = self.settings
        self.mode = make_retrieval_mode(mode if mode is not None else s.retrieval_mode)
        self.chunk_spec = parse_chunk_store(s.chunk_store)
        self.vector_spec = parse_vector_store(s.vector_store, self.chunk_spec, s.data_dir)
        self.cache_spec = parse_embedding_cache(s.embedding_cache, self.chunk_spec)
        self.provider = provider
        self.db = open_database(self.chunk_spec, schema=s.pg_schema)
        self.db.init_schema()
        self._lock = threading.RLock()
        self._backend_built = False
        self._backend: EmbeddingBackend | None = None
        self._cache: EmbeddingCache | None = None
        self._qdrant: Any = None
        self._vector_db: Any = None
        self._indexes: dict[str, NarrativeIndex] = {}

    def __enter__(self) -> "Stack":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for resource in (self._cache, self._qdrant, self._vector_db):
            close = getattr(resource, "close", None)
            if callable(close) and resource is not self.db:
                try:
                    close()
                except Exception:  # closing is best effort
                    pass
        self.db.close()

    def describe(self) -> list[tuple[str, str]]:
        return describe_stack(self.settings, self.mode)

    # -- lazily built parts (never in economy mode) -------------------------------------
    @property
    def embedding_backend(self) -> EmbeddingBackend | None:
        with self._lock:
            if not self._backend_built:
                self._backend = self._build_backend()
                self._backend_built = True
            return self._backend

    def _build_backend(self) -> EmbeddingBackend | None:
        if not self.mode.uses_embeddings:
            return None
        from ragspine.retrieval.vector.embedding_backends import make_embedding_backend

        spec = self.settings.embedding
        backend = make_embedding_backend(spec)
        if backend is None and self.mode.requires_embeddings:
            if spec == "auto":
                raise MissingDependencyError("fastembed", "embed-onnx", f"retrieval mode {self.mode.name!r}")
            raise ConfigError(
                f"retrieval mode {self.mode.name!r} needs an embedding backend, but RAGSPINE_EMBEDDING={spec!r}"
            )
        return backend

    @property
    def embedding_cache(self) -> EmbeddingCache | None:
        with self._lock:
            if self._cache is None and self.embedding_backend is not None:
                kind = self.cache_spec.kind
                if kind == "memory":
                    from ragspine.retrieval.vector.cache import InMemoryEmbeddingCache

                    self._cache = InMemoryEmbeddingCache()
                elif kind == "sqlite":
                    from ragspine.retrieval.vector.cache import SQLiteEmbeddingCache

                    self._cache = SQLiteEmbeddingCache(self.db)
                else:
                    from ragspine.stores.redis_cache import RedisEmbeddingCache

                    ttl = self.settings.embedding_cache_ttl or None
                    self._cache = RedisEmbeddingCache(
                        self.cache_spec.target, prefix=f"{self.settings.redis_prefix}emb:", ttl_seconds=ttl
                    )
            return self._cache

    def _vector_dim(self, backend: EmbeddingBackend) -> int:
        dim = getattr(backend, "dim", None)
        return int(dim) if dim else len(backend.embed_texts(["dimension probe"])[0])

    def _pgvector_engine(self) -> Any:
        """One migrated engine shared by every library's PgVectorStore."""
        if self.chunk_spec.kind == "postgresql" and self.vector_spec.target == self.chunk_spec.target:
            return self.db.engine
        with self._lock:
            if self._vector_db is None:
                from ragspine.stores.postgres.database import PostgresDatabase

                self._vector_db = PostgresDatabase(self.vector_spec.target or "", schema=self.settings.pg_schema)
                self._vector_db.init_schema()
            return self._vector_db.engine

    def vector_store(self, library_id: str) -> VectorStore | None:
        backend = self.embedding_backend
        if backend is None:
            return None
        kind, s = self.vector_spec.kind, self.settings
        if kind == "memory":
            from ragspine.retrieval.vector.store import InProcessVectorStore

            return InProcessVectorStore(library_id=library_id)
        model_id = model_namespace(backend).split("@")[0]
        dim = self._vector_dim(backend)
        if kind == "pgvector":
            from ragspine.stores.pgvector.store import PgVectorStore

            return PgVectorStore(
                self._pgvector_engine(), library_id=library_id, model_id=model_id, dim=dim, schema=s.pg_schema,
                exact=s.vector_exact, ef_search=s.hnsw_ef_search,
            )
        from ragspine.stores.qdrant.store import QdrantVectorStore

        with self._lock:
            if self._qdrant is None:
                self._qdrant = make_qdrant_client_for(self.vector_spec, api_key=s.qdrant_api_key)
        return QdrantVectorStore(
            self._qdrant, library_id=library_id, model_id=model_id, dim=dim, exact=s.vector_exact, hnsw_ef=s.hnsw_ef_search
        )

    # -- libraries and retrievers ---------------------------------------------------------
    def libraries(self) -> list[LibraryInfo]:
        return self.db.list_libraries()

    def library(self, library_id: str) -> LibraryInfo | None:
        return self.db.get_library(library_id)

    def ensure_library(self, library_id: str, description: str | None = None) -> LibraryInfo:
        return self.db.ensure_library(library_id, description)

    def delete_library(self, library_id: str) -> bool:
        """Remove a library from every store: its chunks, change log and vectors."""
        with self._lock:
            index = self._indexes.pop(library_id, None)
        vectors = index.vector_store if index is not None else self.vector_store(library_id)
        if vectors is not None:
            vectors.clear()
        return bool(self.db.delete_library(library_id))

    def index(self, library_id: str) -> NarrativeIndex:
        with self._lock:
            index = self._indexes.get(library_id)
            if index is None:
                backend = self.embedding_backend
                s = self.settings
                index = NarrativeIndex(
                    self.db.chunk_store(library_id),
                    embedding_backend=backend,
                    vector_store=self.vector_store(library_id),
                    embedding_cache=self.embedding_cache,
                    mode=self.mode if backend is not None else "economy",
                    rewriter=self._rewriter(),
                    dense_gate=DenseGate(backend, max_unknown_share=s.dense_max_unknown_share) if backend else None,
                    rrf_k=s.rrf_k,
                    candidate_k=s.candidate_k,
                    chunk_chars=s.chunk_chars,
                    overlap_chars=s.overlap_chars,
                    embed_batch_size=s.embed_batch_size,
                )
                self._indexes[library_id] = index
            return index

    def _rewriter(self) -> GlossaryQueryRewriter:
        if not self.settings.glossary:
            return GlossaryQueryRewriter()
        return GlossaryQueryRewriter(load_glossary(self.settings.glossary))

    def retriever(self, library_ids: Sequence[str] | None = None) -> NarrativeRetriever:
        """One library → its exit; several (default: every library) → routed multi-index."""
        known = {lib.library_id: lib for lib in self.libraries()}
        wanted = list(dict.fromkeys(library_ids)) if library_ids else sorted(known)
        missing = [lib for lib in wanted if lib not in known]
        if missing:
            raise ConfigError(
                f"unknown library {missing[0]!r}; known: {', '.join(sorted(known)) or '(none yet: ingest first)'}"
            )
        if not wanted:
            raise ConfigError("there are no libraries yet: run `ragspine ingest PATH --library NAME` first")
        if len(wanted) == 1:
            return NarrativeIndexRetriever(self.index(wanted[0]))
        return MultiIndexRetriever(  # the retry without filters applies to the fused result
            {lib: NarrativeIndexRetriever(self.index(lib), retry_without_filters=False) for lib in wanted},
            router=make_library_router(self.settings.library_router, provider=self.provider),
            descriptions={lib: known[lib].description for lib in wanted},
            rrf_k=self.settings.rrf_k,
            retry_without_filters=True,
        )


def describe_stack(settings: Settings, mode: RetrievalMode | str | None = None) -> list[tuple[str, str]]:
    """The stack ``settings`` resolve to, as ``(role, value)`` rows — without connecting."""
    resolved = make_retrieval_mode(mode if mode is not None else settings.retrieval_mode)
    chunk = parse_chunk_store(settings.chunk_store)
    vector = parse_vector_store(settings.vector_store, chunk, settings.data_dir)
    cache = parse_embedding_cache(settings.embedding_cache, chunk)
    off = "none (economy mode)"
    uses = resolved.uses_embeddings
    return [
        ("chunk store", chunk.describe()),
        ("vector store", vector.describe() if uses else off),
        ("embedding cache", cache.describe() if uses else off),
        ("embedding", settings.embedding if uses else off),
        ("retrieval mode", resolved.name),
        ("library router", settings.library_router),
    ]


def load_glossary(path: str) -> dict[str, list[str]]:
    """A glossary file: YAML or JSON mapping ``canonical -> [synonyms]``."""
    import yaml

    try:
        with open(path, encoding="utf-8") as fh:
            data = yaml.safe_load(fh)
    except OSError as exc:
        raise ConfigError(f"cannot read RAGSPINE_GLOSSARY {path!r}: {exc.strerror}") from None
    if not isinstance(data, dict) or not all(isinstance(v, list) for v in data.values()):
        raise ConfigError(f"RAGSPINE_GLOSSARY {path!r} must map each term to a list of synonyms")
    return {str(k): [str(x) for x in v] for k, v in data.items()}
