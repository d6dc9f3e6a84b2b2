"""Assembly: the whole retrieval stack from :class:`Settings` (what the CLI and service use).

``Stack(settings)`` opens the chunk database and builds, lazily and only when the retrieval
mode needs them, the embedding backend, the embedding cache and one vector store per
library. In ``economy`` mode (``bm25``/``lexical``) none of those three is ever built.

``index(library_id, mode=..., embedding=...)`` also serves a library in another retrieval
mode or with another embedding backend than the configured ones (the HTTP service stores
both per library); every index of one library shares its lexical index, and every index of
one (library, embedding) pair shares its vector store.
"""

from __future__ import annotations

import threading
from typing import Any, Sequence

from ragspine.config import Settings, load_settings
from ragspine.errors import ConfigError, MissingDependencyError
from ragspine.retrieval.chunking.chunk_store import LibraryInfo
from ragspine.retrieval.lexical.index import (
    InMemoryLexicalIndex,
    LexicalIndex,
    default_index_text,
)
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
    embedding_key,
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
        self._indexes: dict[tuple[str, str, str], NarrativeIndex] = {}  # (library, mode, embedding)
        self._backends: dict[str, EmbeddingBackend | None] = {}  # other specs than the configured one
        self._lexical: dict[str, LexicalIndex] = {}
        self._vectors: dict[tuple[str, str], VectorStore] = {}  # (library, embedding)

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

    def _embedding_spec(self, spec: str | None) -> str:
        return (spec or self.settings.embedding).strip().lower()

    def embedding_backend_for(self, spec: str | None = None) -> EmbeddingBackend | None:
        """The backend of an embedding ``spec`` (default ``RAGSPINE_EMBEDDING``), one instance
        per spec; ``None`` for ``none``, and always ``None`` in economy mode."""
        spec = self._embedding_spec(spec)
        if spec == self.settings.embedding:
            return self.embedding_backend
        if not self.mode.uses_embeddings:
            return None
        with self._lock:
            if spec not in self._backends:
                from ragspine.retrieval.vector.embedding_backends import (
                    make_embedding_backend,
                )

                self._backends[spec] = make_embedding_backend(spec)
            return self._backends[spec]

    @property
    def embedding_cache(self) -> EmbeddingCache | None:
        return self._cache_for(self.embedding_backend)

    def _cache_for(self, backend: EmbeddingBackend | None) -> EmbeddingCache | None:
        """The one embedding cache (keys carry the model), built when a backend first needs it."""
        if backend is None:
            return self._cache
        with self._lock:
            if self._cache is None:
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

    def vector_store(self, library_id: str, embedding: str | None = None) -> VectorStore | None:
        """A new handle on ``library_id``'s vectors of one embedding backend (default: the
        configured one); ``None`` without a backend."""
        backend = self.embedding_backend_for(embedding)
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

        return QdrantVectorStore(
            self._qdrant_client(), library_id=library_id, model_id=model_id, dim=dim, exact=s.vector_exact, hnsw_ef=s.hnsw_ef_search
        )

    def _qdrant_client(self) -> Any:
        with self._lock:
            if self._qdrant is None:
                self._qdrant = make_qdrant_client_for(self.vector_spec, api_key=self.settings.qdrant_api_key)
            return self._qdrant

    def check_stores(self) -> list[tuple[str, str | None]]:
        """Probe every store this configuration uses: ``(role, None)`` when it answered, else
        ``(role, why)``. In economy mode only the chunk store is used."""
        probes: list[tuple[str, Any]] = [("chunk store", lambda: self.db.query("SELECT 1"))]
        if self.mode.uses_embeddings:
            if self.vector_spec.kind == "pgvector":
                probes.append(("vector store", self._probe_pgvector))
            elif self.vector_spec.kind == "qdrant":
                probes.append(("vector store", lambda: self._qdrant_client().get_collections()))
            if self.cache_spec.kind == "redis":
                probes.append(("embedding cache", lambda: ping_redis(self.cache_spec.target or "")))
        out: list[tuple[str, str | None]] = []
        for role, probe in probes:
            try:
                probe()
                out.append((role, None))
            except Exception as exc:  # a probe reports, never raises
                out.append((role, f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"))
        return out

    def _probe_pgvector(self) -> None:
        import sqlalchemy as sa

        with self._pgvector_engine().connect() as conn:
            conn.execute(sa.text("SELECT 1"))

    def cache_stats(self) -> dict[str, int]:
        """The embedding cache's counters (``hits, misses, errors, fallbacks``); zeros until a
        query or an ingest built the cache (reading them builds nothing)."""
        out = {"hits": 0, "misses": 0, "errors": 0, "fallbacks": 0}
        stats = getattr(self._cache, "stats", None)
        if stats is not None:
            out.update(stats.as_dict())
        return out

    # -- libraries and retrievers ---------------------------------------------------------
    def libraries(self) -> list[LibraryInfo]:
        return self.db.list_libraries()

    def library(self, library_id: str) -> LibraryInfo | None:
        return self.db.get_library(library_id)

    def ensure_library(self, library_id: str, description: str | None = None, tenant_id: str | None = None) -> LibraryInfo:
        """Create the library if new; ``tenant_id`` is recorded where the catalog has an owner
        column (PostgreSQL)."""
        if tenant_id and self.chunk_spec.kind == "postgresql":
            return self.db.ensure_library(library_id, description, tenant_id=tenant_id)
        return self.db.ensure_library(library_id, description)

    def delete_library(self, library_id: str, *, embeddings: Sequence[str] = ()) -> bool:
        """Remove a library from every store: its chunks, change log, vectors and embedding
        cache entries — of the configured embedding backend and of each of ``embeddings``.

        Cache keys are model + chunk id + text hash, so an entry shared with an identical
        chunk of another library goes too (that library recomputes it: a miss, not a loss)."""
        specs = list(dict.fromkeys(self._embedding_spec(e) for e in (None, *embeddings)))
        with self._lock:
            for key in [k for k in self._indexes if k[0] == library_id]:
                del self._indexes[key]
            self._lexical.pop(library_id, None)
            handles = {spec: self._vectors.pop((library_id, spec), None) for spec in specs}
        backends = [(spec, b) for spec in specs if (b := self.embedding_backend_for(spec)) is not None]
        delete_many = getattr(self._cache_for(backends[0][1]) if backends else None, "delete_many", None)
        if delete_many is not None:
            chunks = self.db.chunk_store(library_id).iter_chunks(include_inactive=True)
            for _, backend in backends:
                namespace = model_namespace(backend)
                delete_many([embedding_key(namespace, c.chunk_id, default_index_text(c)) for c in chunks])
        for spec, _ in backends:
            vectors = handles[spec] or self.vector_store(library_id, spec)
            if vectors is not None:
                vectors.clear()
        return bool(self.db.delete_library(library_id))

    def _lexical_index(self, store: Any) -> LexicalIndex:
        """The configured LexicalIndex over ``store`` (``RAGSPINE_LEXICAL_INDEX``)."""
        choice = (self.settings.lexical_index or "auto").strip().lower()
        on_postgres = self.chunk_spec.kind == "postgresql"
        if choice not in ("auto", "memory", "postgres"):
            raise ConfigError(f"RAGSPINE_LEXICAL_INDEX={choice!r} is not one of auto, memory, postgres")
        if choice == "postgres" and not on_postgres:
            raise ConfigError("RAGSPINE_LEXICAL_INDEX=postgres needs a PostgreSQL chunk store (RAGSPINE_CHUNK_STORE=postgresql://...)")
        if choice == "postgres" or (choice == "auto" and on_postgres):
            from ragspine.stores.postgres.lexical import PostgresLexicalIndex

            return PostgresLexicalIndex(store)
        return InMemoryLexicalIndex(store)

    def index(self, library_id: str, *, mode: RetrievalMode | str | None = None, embedding: str | None = None) -> NarrativeIndex:
        """``library_id``'s index (one per library, mode and embedding backend; defaults: the
        configured ones). A mode that uses embeddings needs a stack that is not in economy mode."""
        resolved = self.mode if mode is None else make_retrieval_mode(mode)
        if resolved.requires_embeddings and not self.mode.uses_embeddings:
            raise ConfigError(f"retrieval mode {resolved.name!r} needs embeddings, but this stack runs in economy mode")
        spec = self._embedding_spec(embedding)
        # the default path asks the stack's backend as ever (None in economy mode)
        backend = self.embedding_backend_for(spec) if resolved.uses_embeddings or mode is None else None
        if backend is None and resolved.requires_embeddings:
            raise ConfigError(f"retrieval mode {resolved.name!r} needs an embedding backend, but the embedding is {spec!r}")
        key = (library_id, resolved.name, spec) if backend is not None else (library_id, "economy", "")
        with self._lock:
            index = self._indexes.get(key)
            if index is None:
                s = self.settings
                store = self.db.chunk_store(library_id)
                lexical = self._lexical.get(library_id)
                if lexical is None:
                    lexical = self._lexical[library_id] = self._lexical_index(store)
                vectors = None
                if backend is not None:
                    vectors = self._vectors.get((library_id, spec))
                    if vectors is None:
                        vectors = self._vectors[(library_id, spec)] = self.vector_store(library_id, spec)  # type: ignore[assignment]
                index = NarrativeIndex(
                    store,
                    embedding_backend=backend,
                    vector_store=vectors,
                    embedding_cache=self._cache_for(backend),
                    mode=resolved if backend is not None else "economy",
                    lexical_index=lexical,
                    rewriter=self._rewriter(),
                    dense_gate=DenseGate(backend, max_unknown_share=s.dense_max_unknown_share) if backend else None,
                    rrf_k=s.rrf_k,
                    candidate_k=s.candidate_k,
                    chunk_chars=s.chunk_chars,
                    overlap_chars=s.overlap_chars,
                    embed_batch_size=s.embed_batch_size,
                )
                self._indexes[key] = index
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


def ping_redis(url: str, timeout: float = 1.0) -> None:
    """Raise unless the Redis server at ``url`` answers PING within ``timeout`` seconds."""
    try:
        import redis
    except ImportError:
        raise MissingDependencyError("redis", "redis", "a Redis URL") from None
    client = redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)
    try:
        client.ping()
    finally:
        client.close()


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
