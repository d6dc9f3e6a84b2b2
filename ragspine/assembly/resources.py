"""``Resources``: what a stack opens once and shares — the chunk database, the LLM provider
behind its call budget, the embedding backends, the embedding cache, the vector store backend,
the model rerankers, the security gate and the filter extractor — each built on first use,
closed once (:meth:`Resources.close`). No I/O in the constructor: it parses the configured
stores, so a bad value fails here.

Parts are built through their role's registry (``ragspine/registries.py``); what a part takes
from here (the provider, the library's embedding backend, the cache) is what its registry line
declares (:meth:`Resources.needs`), never a branch on its name.
"""

from __future__ import annotations

import threading
from typing import Any

from ragspine.config import Settings
from ragspine.errors import ConfigError, MissingDependencyError
from ragspine.llm.base import LLMProvider, make_llm_provider
from ragspine.llm.budget import GuardedLLMProvider
from ragspine.llm.observe import LLMObserver
from ragspine.registries import FILTER_EXTRACTORS, RERANKERS
from ragspine.registry import Registry
from ragspine.retrieval.chunk_cache import ChunkCache
from ragspine.retrieval.chunking.chunk_store import ChunkDatabase
from ragspine.retrieval.filtering.automatic import FilterExtractor, load_vocabulary, make_filter_extractor
from ragspine.retrieval.lexical.rewrite import GlossaryQueryRewriter
from ragspine.retrieval.mode import RetrievalMode, make_retrieval_mode
from ragspine.retrieval.raptor.base import RaptorStore
from ragspine.retrieval.raptor.retriever import make_raptor_store
from ragspine.retrieval.rerank.base import Reranker, make_reranker
from ragspine.retrieval.vector.embedding import EmbeddingBackend, model_id_of, vector_dim
from ragspine.retrieval.vector.embedding_cache import CountingCache, EmbeddingCache
from ragspine.retrieval.vector.vector_store import VectorStore, VectorStoreConnector
from ragspine.security.gate import SecurityGate, security_gate_for
from ragspine.stores.registry import (
    make_chunk_store,
    make_embedding_cache,
    make_vector_store,
    parse_chunk_store,
    parse_embedding_cache,
    parse_vector_store,
)


class Resources:
    """See the module docstring. Close it when done (``with``)."""

    def __init__(
        self,
        settings: Settings,
        *,
        mode: RetrievalMode | str | None = None,
        provider: LLMProvider | None = None,
    ) -> None:
        self.settings = settings
        s = self.settings
        self.mode = make_retrieval_mode(mode if mode is not None else s.retrieval_mode)
        self.chunk_spec = parse_chunk_store(s.chunk_store, s.data_dir)
        self.vector_spec = parse_vector_store(s.vector_store, self.chunk_spec, s.data_dir)
        self.cache_spec = parse_embedding_cache(s.embedding_cache, self.chunk_spec, s.data_dir)
        self._llm_observer: LLMObserver | None = None
        self._provider: GuardedLLMProvider | None = self._guard(provider) if provider is not None else None
        self._provider_built = provider is not None
        self._owns_provider = provider is None  # a provider passed in stays the caller's to close
        self._extractor: tuple[FilterExtractor | None] | None = None  # built on first use
        self._lock = threading.RLock()
        self._db: ChunkDatabase | None = None
        self._backend_built = False
        self._backend: EmbeddingBackend | None = None
        self._backends: dict[str, EmbeddingBackend | None] = {}  # other specs than the configured one
        self._cache: EmbeddingCache | None = None
        self._connector: VectorStoreConnector | None = None
        self._rerankers: dict[str, Reranker | None] = {}  # a model reranker loads its model once
        self._gate: tuple[SecurityGate | None] | None = None  # RAGSPINE_SECURITY_DENYLIST's, read once
        self.chunk_cache = ChunkCache(s.chunk_cache)  # shared by every library's pipeline
        self._closed = False


    def __enter__(self) -> Resources:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close what was built (best effort for the optional parts); the stack is done."""
        self._closed = True
        own_llm = self._provider.inner if self._provider is not None and self._owns_provider else None
        for resource in (self._cache, self._connector, _Closing(own_llm)):
            if resource is not None:
                try:
                    resource.close()
                except Exception:  # closing is best effort
                    pass
        if self._db is not None:
            self._db.close()

    # -- the shared parts, built on first use ----------------------------------------------------

    @property
    def db(self) -> ChunkDatabase:
        """The chunk database (built on first use; it connects on its own first use)."""
        with self._lock:
            if self._db is None:
                if self._closed:
                    raise ConfigError("this Stack is closed")
                self._db = make_chunk_store(settings=self.settings)
            return self._db

    @property
    def provider(self) -> LLMProvider | None:
        """The LLM provider — the one passed in, else ``RAGSPINE_LLM``'s (``None``: none) —
        behind the per-request call budget (``RAGSPINE_LLM_MAX_CALLS``) and the LLM observer."""
        with self._lock:
            if not self._provider_built:
                built = make_llm_provider(settings=self.settings)
                self._provider = self._guard(built) if built is not None else None
                self._provider_built = True
            return self._provider

    def _guard(self, provider: LLMProvider) -> GuardedLLMProvider:
        name = getattr(provider, "name", None) or type(provider).__name__  # "openai", "local", or a passed-in class
        return GuardedLLMProvider(provider, max_calls=self.settings.llm.max_calls, name=str(name), observer=self._llm_observer,
                                  reserve=self.settings.llm.reserve)

    def observe_llm(self, observer: LLMObserver | None) -> None:
        """Report every LLM call and malformed answer to ``observer`` (the service's metrics)."""
        with self._lock:
            self._llm_observer = observer
        if self._provider is not None:
            self._provider.observer = observer

    @property
    def filter_extractor(self) -> FilterExtractor | None:
        """``RAGSPINE_FILTER_EXTRACTOR`` over the ``RAGSPINE_FILTER_VOCABULARY`` file (built once)."""
        with self._lock:
            if self._extractor is None:
                name = self.settings.filter_extractor
                vocabulary = load_vocabulary(self.settings.filter_vocabulary) if self.settings.filter_vocabulary else None
                self._extractor = (make_filter_extractor(name, vocabulary=vocabulary, **self.needs(FILTER_EXTRACTORS, name)),)
            return self._extractor[0]

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
        backend = make_embedding_backend(spec, settings=self.settings)
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
                from ragspine.retrieval.vector.embedding_backends import make_embedding_backend

                self._backends[spec] = make_embedding_backend(spec, settings=self.settings)
            return self._backends[spec]

    @property
    def embedding_cache(self) -> EmbeddingCache | None:
        return self._cache_for(self.embedding_backend)

    def _cache_for(self, backend: EmbeddingBackend | None) -> EmbeddingCache | None:
        """The one embedding cache (keys carry the model), built when a backend first needs it."""
        if backend is None:
            return self._cache
        return self._shared_cache()

    def _shared_cache(self) -> EmbeddingCache:
        """The one cache of derived vectors (``RAGSPINE_EMBEDDING_CACHE``), built now if not yet."""
        with self._lock:
            if self._cache is None:
                self._cache = make_embedding_cache(database=self.db, settings=self.settings)
            return self._cache

    @property
    def vector_connector(self) -> VectorStoreConnector:
        """The configured vector store backend (``RAGSPINE_VECTOR_STORE``), built on first use."""
        with self._lock:
            if self._connector is None:
                self._connector = make_vector_store(database=self.db, settings=self.settings)
            return self._connector

    def vector_store(self, library_id: str, embedding: str | None = None) -> VectorStore | None:
        """A new handle on ``library_id``'s vectors of one embedding backend (default: the
        configured one); ``None`` without a backend."""
        backend = self.embedding_backend_for(embedding)
        if backend is None:
            return None
        return self.vector_connector.open(library_id, model_id=model_id_of(backend), dim=vector_dim(backend))

    def reranker(self, name: str | None = None) -> Reranker | None:
        """``name`` (default ``RAGSPINE_RERANKER``): ``listwise`` judges with the stack's LLM
        provider; the model rerankers are built once per stack and shared by its pipelines."""
        name = RERANKERS.canonical(name) if name is not None else self.settings.ranking.reranker
        if name == "none":
            return None
        with self._lock:
            if name not in self._rerankers:
                self._rerankers[name] = make_reranker(name, settings=self.settings, **self.needs(RERANKERS, name))
            return self._rerankers[name]

    def needs(self, registry: Registry, name: str, *, backend: EmbeddingBackend | None = None) -> dict[str, Any]:
        """The keywords building ``name`` of ``registry`` takes from these resources, as its
        registry line declares them (:attr:`~ragspine.registry.Entry.needs`): ``provider`` for
        "llm", ``embedding_backend`` (``backend``) for "embedding", ``cache`` for "cache"."""
        wanted = registry.needs(name)
        out: dict[str, Any] = {}
        if "llm" in wanted:
            out["provider"] = self.provider
        if "embedding" in wanted:
            out["embedding_backend"] = backend
        if "cache" in wanted:
            out["cache"] = self._shared_cache()
        return out


    @property
    def security_gate(self) -> SecurityGate | None:
        """The gate of ``RAGSPINE_SECURITY_DENYLIST`` (``None``: no deny list), its entities
        expanded through the fact glossary (``RAGSPINE_FACT_GLOSSARY``), read once."""
        with self._lock:
            if self._gate is None:
                self._gate = (security_gate_for(self.settings),)
            return self._gate[0]

    def raptor_store(self, library_id: str) -> RaptorStore:
        """``library_id``'s RAPTOR tree store, in the chunk database (no I/O)."""
        return make_raptor_store(library_id, database=self.db)

    def _rewriter(self) -> GlossaryQueryRewriter:
        if not self.settings.glossary:
            return GlossaryQueryRewriter()
        return GlossaryQueryRewriter.from_file(self.settings.glossary)

    # -- probes -----------------------------------------------------------------------------------

    def check_stores(self, *, vectors: bool | None = None) -> list[tuple[str, str | None]]:
        """Probe every store this configuration uses: ``(role, None)`` when it answered, else
        ``(role, why)``. In economy mode (or with ``vectors=False``) only the chunk store is used."""
        probes: list[tuple[str, Any]] = [("chunk store", lambda: self.db.check())]
        if self.mode.uses_embeddings if vectors is None else vectors:
            if self.vector_spec.kind != "memory":
                probes.append(("vector store", lambda: self.vector_connector.check()))
            cache_kind = self.cache_spec.kind
            if cache_kind not in ("memory", "sqlite"):
                probes.append(("embedding cache", self._check_cache))
        out: list[tuple[str, str | None]] = []
        for role, probe in probes:
            try:
                probe()
                out.append((role, None))
            except Exception as exc:  # a probe reports, never raises
                text = str(exc).strip()
                out.append((role, f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"))
        return out

    def _check_cache(self) -> None:
        cache = self._cache if self._cache is not None else make_embedding_cache(database=self.db, settings=self.settings)
        try:
            cache.check()
        finally:
            if cache is not self._cache:
                cache.close()

    def cache_stats(self) -> dict[str, int]:
        """The embedding cache's counters (``hits, misses, errors, fallbacks``); zeros until a
        query or an ingest built the cache (reading them builds nothing)."""
        out = {"hits": 0, "misses": 0, "errors": 0, "fallbacks": 0}
        if isinstance(self._cache, CountingCache):
            out.update(self._cache.stats.as_dict())
        return out


class _Closing:
    """``close()`` of an object that may have one (an LLM provider: the local model's server)."""

    def __init__(self, resource: object) -> None:
        self.resource = resource

    def close(self) -> None:
        close = getattr(self.resource, "close", None)
        if callable(close):
            close()
