"""Assembly: the whole retrieval stack from :class:`Settings` (what the CLI and service use).

``Stack(settings)`` does no I/O: it parses the configured stores (a bad value fails here)
and builds everything else on first use — the chunk database, and, only when the retrieval
mode needs them, the embedding backend, the embedding cache and each library's vector store.
In ``economy`` mode (``bm25``/``lexical``) none of those three is ever built. Every part is
built through its role's registry (``ragspine/registries.py``).

``pipeline(library_id, mode=..., embedding=...)`` also serves a library in another retrieval
mode or with another embedding backend than the configured ones (the HTTP service stores
both per library); every pipeline of one library shares its lexical index, and every
pipeline of one (library, embedding) pair shares its vector store.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from dataclasses import replace
from functools import cached_property
from typing import Any, Callable, Mapping, Sequence

from ragspine.config import Settings, load_settings
from ragspine.errors import BackendError, ConfigError, MissingDependencyError, RagspineError
from ragspine.llm.base import LLMProvider, describe_llm, make_llm_provider
from ragspine.llm.budget import GuardedLLMProvider
from ragspine.llm.observe import LLMObserver
from ragspine.profile import UNSET, Profile, named_profile, read_recipe, recipe_json
from ragspine.registries import CHUNK_STORES, CHUNKERS, RERANKERS
from ragspine.retrieval.chunk_cache import ChunkCache
from ragspine.retrieval.chunking.base import Chunker, bounds_parents, make_chunker
from ragspine.retrieval.chunking.chunk_store import ChunkDatabase, ChunkStore, LibraryInfo, StoredChunk
from ragspine.retrieval.chunking.domain_presets import default_parent_chars
from ragspine.retrieval.contextual import make_index_text_fn
from ragspine.retrieval.filtering.automatic import FilterExtractor, load_vocabulary, make_filter_extractor
from ragspine.retrieval.fusion.weights import parse_weights
from ragspine.retrieval.lexical.base import LexicalIndex, ResidentIndex, default_index_text, make_lexical_index
from ragspine.retrieval.lexical.rewrite import GlossaryQueryRewriter
from ragspine.retrieval.link.narrative_link import NarrativeIndexRetriever, NarrativeRetriever
from ragspine.retrieval.mode import RetrievalMode, make_retrieval_mode
from ragspine.retrieval.pipeline import LibraryPipeline
from ragspine.retrieval.postprocess.base import Postprocessor, make_postprocessor
from ragspine.retrieval.ranking import Ranking, Stages
from ragspine.retrieval.raptor.base import RaptorStore, describe_raptor, raptor_requested
from ragspine.retrieval.raptor.leg import attach_raptor
from ragspine.retrieval.raptor.retriever import check_raptor, make_raptor_store, raptor_store_kind
from ragspine.retrieval.reasoning import ReasoningObserver, ReasoningOptions, ReasoningRetriever
from ragspine.retrieval.reasoning.build import describe_gate, reasoning_parts, uses_llm
from ragspine.retrieval.reasoning.per_library import LibraryReasoner, PerLibraryReasoning
from ragspine.retrieval.rerank.base import IndexingReranker, Reranker, make_reranker
from ragspine.retrieval.routing.multi_index import MultiIndexRetriever
from ragspine.retrieval.routing.routers import make_library_router
from ragspine.retrieval.vector.embedding import EmbeddingBackend, model_id_of, vector_dim
from ragspine.retrieval.vector.embedding_cache import CountingCache, EmbeddingCache
from ragspine.retrieval.vector.gate import DenseGate
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

log = logging.getLogger(__name__)
_NOTICED: set[str] = set()  # the one-line notices of `auto` already logged by this process

#: Rerankers that keep index-time work (SPLADE's document expansions) in the embedding cache.
STORING_RERANKERS = frozenset({"splade"})


class Stack:
    """See the module docstring. Close it when done (``with Stack() as stack:``)."""

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        mode: RetrievalMode | str | None = None,
        provider: LLMProvider | None = None,
    ) -> None:
        self.settings = settings or load_settings()
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
        self._mode_given = mode is not None  # a --mode flag: a choice over a library's recorded mode
        # (library, its recipe as the pipeline runs it: mode and embedding resolved, no reasoning)
        self._pipelines: dict[tuple[str, Profile], LibraryPipeline] = {}
        # open lexical indexes, least recently used first (bounded: RAGSPINE_LEXICAL_CACHE_ROWS)
        self._lexical: OrderedDict[str, LexicalIndex] = OrderedDict()
        self._lexical_text: dict[str, Any] = {}  # library -> the index-text function its lexical index was built with
        self._vectors: dict[tuple[str, str], VectorStore] = {}  # (library, embedding)
        self._rerankers: dict[str, Reranker | None] = {}  # a model reranker loads its model once
        self._gate: tuple[SecurityGate | None] | None = None  # RAGSPINE_SECURITY_DENYLIST's, read once
        self._reasoning: dict[ReasoningOptions, dict[str, Any]] = {}  # each option set's parts, built once
        self.chunk_cache = ChunkCache(s.chunk_cache)  # shared by every library's pipeline
        self._closed = False

    def __enter__(self) -> Stack:
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

    def describe(self) -> list[tuple[str, str]]:
        return describe_stack(self.settings, self.mode)

    # -- parts built on first use ------------------------------------------------------------
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
        return GuardedLLMProvider(provider, max_calls=self.settings.llm_max_calls, name=str(name), observer=self._llm_observer,
                                  reserve=self.settings.llm_reserve)

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
                provider = self.provider if name == "llm" else None
                self._extractor = (make_filter_extractor(name, vocabulary=vocabulary, provider=provider),)
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
                from ragspine.retrieval.vector.embedding_backends import make_embedding_backend

                self._backends[spec] = make_embedding_backend(spec)
            return self._backends[spec]

    @property
    def embedding_cache(self) -> EmbeddingCache | None:
        return self._cache_for(self.embedding_backend)

    def _cache_for(self, backend: EmbeddingBackend | None) -> EmbeddingCache | None:
        """The one embedding cache (keys carry the model), built when a backend first needs it."""
        if backend is None:
            return self._cache
        return self._shared_cache()

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

    def preflight(self, library_id: str, *, mode: RetrievalMode | str | None = None, embedding: str | None = None) -> None:
        """Check everything an ingest into ``library_id`` needs, before its first write: every
        store answers (pgvector present), the embedding backend loads and embeds, and the
        vector store accepts the model's space (its dimension). Raises ``BackendError`` or
        ``ConfigError`` naming each problem and its fix; writes no library, document or chunk."""
        index = self.pipeline(library_id, mode=mode, embedding=embedding)
        backend, vectors = index.embedding_backend, index.vector_store
        problems = [f"{role}: {why}" for role, why in self.check_stores(vectors=backend is not None) if why]
        if problems:
            raise BackendError("cannot write to this stack: " + "; ".join(problems))
        if backend is None or vectors is None:
            return
        try:
            backend.embed_texts(["ragspine pre-check"])
        except RagspineError:
            raise
        except Exception as exc:
            raise BackendError(f"cannot write to this stack: the embedding backend {model_id_of(backend)!r} failed: {exc}") from exc
        vectors.count()  # opens the model's space: a missing extension or another dimension fails here

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

    # -- the configured pipeline stages --------------------------------------------------------
    def chunker(self, name: str | None = None, backend: EmbeddingBackend | None = None, *,
                chars: int | None = None, packing: str | None = None) -> Chunker:
        """The chunker ``name`` (default ``RAGSPINE_CHUNKER``) with the budget ``chars`` and
        ``packing`` (default: the configured ones); ``semantic`` is given ``backend`` (the
        library's embedding model) and refuses to run without one."""
        s = self.settings
        name = CHUNKERS.canonical(name) if name is not None else s.chunker
        chars = s.chunk_chars if chars is None else chars
        packing = s.chunk_packing if packing is None else packing
        overlap = s.overlap_chars if s.overlap_chars < chars else chars // 6
        options: dict[str, Any] = {"max_chars": chars, "overlap_chars": overlap}
        if packing != "pack":
            if name in ("sentence_window", "semantic"):
                raise ConfigError(
                    f"RAGSPINE_CHUNK_PACKING={packing} does not apply to RAGSPINE_CHUNKER={name} "
                    "(it cuts at sentences): unset RAGSPINE_CHUNK_PACKING or choose another chunker"
                )
            options["packing"] = packing
        if name == "semantic":
            options["embedding_backend"] = backend
        if bounds_parents(name):
            options["parent_chars"] = s.parent_chars if chars == s.chunk_chars else max(s.parent_chars, default_parent_chars(chars))
        return make_chunker(name, **options)

    def reranker(self, name: str | None = None) -> Reranker | None:
        """``name`` (default ``RAGSPINE_RERANKER``): ``listwise`` judges with the stack's LLM
        provider; the model rerankers are built once per stack and shared by its pipelines."""
        name = RERANKERS.canonical(name) if name is not None else self.settings.reranker
        if name == "none":
            return None
        with self._lock:
            if name not in self._rerankers:
                options: dict[str, Any] = {"provider": self.provider if name == "listwise" else None, "settings": self.settings}
                if name in STORING_RERANKERS:  # index-time work kept by content hash in the embedding cache
                    options["cache"] = self._shared_cache()
                self._rerankers[name] = make_reranker(name, **options)
            return self._rerankers[name]

    def _shared_cache(self) -> EmbeddingCache:
        """The one cache of derived vectors (``RAGSPINE_EMBEDDING_CACHE``), built now if not yet."""
        with self._lock:
            if self._cache is None:
                self._cache = make_embedding_cache(database=self.db, settings=self.settings)
            return self._cache

    def ranking(
        self, reranker: str | None = None, postprocessor: str | None = None, fusion_weights: str | Mapping[str, object] | None = None,
        rerank_depth: int | None = None,
    ) -> Ranking:
        """A :class:`Ranking` checked and in canonical form; what is not given is the configured one."""
        s = self.settings
        return Ranking.of(
            s.reranker if reranker is None else reranker, s.postprocessor if postprocessor is None else postprocessor,
            s.fusion_weights if fusion_weights is None else fusion_weights, s.rerank_depth if rerank_depth is None else rerank_depth,
        )

    def stages(self, ranking: Ranking) -> Stages:
        """``ranking``'s reranker (shared, built once per name) and postprocessor chain, built:
        a request's override (a :class:`~ragspine.retrieval.request.SearchRequest`'s ``stages``)."""
        return Stages(self.reranker(ranking.reranker), ranking.rerank_depth, self.postprocessor(ranking.postprocessor))

    def postprocessor(self, spec: str | None = None) -> Postprocessor | None:
        """The chain ``spec`` (default ``RAGSPINE_POSTPROCESSOR``) with the configured options."""
        s = self.settings
        return make_postprocessor(
            s.postprocessor if spec is None else spec,
            mmr_lambda=s.mmr_lambda, context_chars=s.context_chars, compression_chars=s.compression_chars,
        )

    # -- libraries and retrievers ---------------------------------------------------------
    def libraries(self, library_ids: Sequence[str] | None = None) -> list[LibraryInfo]:
        """Every library, or only those of ``library_ids`` that exist."""
        return self.db.list_libraries(library_ids)

    def library(self, library_id: str) -> LibraryInfo | None:
        return self.db.get_library(library_id)

    def ensure_library(self, library_id: str, description: str | None = None, tenant_id: str | None = None) -> LibraryInfo:
        """Create the library if new; ``tenant_id`` is recorded where the catalog has an owner
        column (PostgreSQL)."""
        return self.db.ensure_library(library_id, description, tenant_id=tenant_id)

    def delete_library(self, library_id: str, *, embeddings: Sequence[str] = ()) -> bool:
        """Remove a library from every store: its chunks, change log, vectors and embedding
        cache entries — of the configured embedding backend and of each of ``embeddings``.

        Cache keys are model + chunk id + text hash, so an entry shared with an identical
        chunk of another library goes too (that library recomputes it: a miss, not a loss)."""
        specs = list(dict.fromkeys(self._embedding_spec(e) for e in (None, *embeddings)))
        chunks: list[Any] | None = None
        reranker = self.reranker() if self.settings.reranker in STORING_RERANKERS else None
        if isinstance(reranker, IndexingReranker):  # its stored expansions of the library's texts go too
            chunks = self.db.chunk_store(library_id).iter_chunks(include_inactive=True)
            reranker.forget(chunks)
        for spec in specs:
            if self.embedding_backend_for(spec) is None:
                continue
            dense = self.pipeline(library_id, embedding=spec).retriever.dense
            if dense is not None:
                if chunks is None:
                    chunks = self.db.chunk_store(library_id).iter_chunks(include_inactive=True)
                dense.forget(chunks)
        with self._lock:
            for pipeline_key in [k for k in self._pipelines if k[0] == library_id]:
                del self._pipelines[pipeline_key]
            self._lexical.pop(library_id, None)
            self._lexical_text.pop(library_id, None)
            for vector_key in [k for k in self._vectors if k[0] == library_id]:
                del self._vectors[vector_key]
        self.chunk_cache.forget_library(library_id)
        return bool(self.db.delete_library(library_id))

    def _lexical_index(self, store: ChunkStore, index_text: Callable[[StoredChunk], str] = default_index_text) -> LexicalIndex:
        """The configured LexicalIndex over ``store`` (``RAGSPINE_LEXICAL_INDEX``; ``auto`` is the
        chunk database's own) indexing ``index_text``."""
        auto, why = self.db.auto_lexical_index(self.settings)
        if self.settings.lexical_index == "auto" and auto == "postgres" and why not in _NOTICED:
            _NOTICED.add(why)
            log.warning("RAGSPINE_LEXICAL_INDEX=auto: %s", why)
        return make_lexical_index(self.settings.lexical_index, store, settings=self.settings, auto=auto, index_text=index_text)

    # -- a library's recipe -------------------------------------------------------------------
    @cached_property
    def profile(self) -> Profile:
        """The configured recipe: ``RAGSPINE_PROFILE``'s, under the variables (and this stack's
        ``mode``) that override it."""
        configured = Profile.from_settings(self.settings)
        return configured.override(mode=self.mode.name) if self._mode_given else configured

    def recorded_profile(self, library_id: str) -> Profile | None:
        """The recipe ``library_id`` was built with (recorded at its ingest), or ``None``."""
        recorded = read_recipe(self.db.library_profile(library_id))
        return recorded[1] if recorded is not None else None

    def record_profile(self, library_id: str, profile: Profile | None = None) -> None:
        """Record the recipe ``library_id`` is built with (default: :meth:`profile_for`'s),
        under the name of the configured profile (``RAGSPINE_PROFILE``)."""
        self.db.set_library_profile(library_id, recipe_json(profile or self.profile_for(library_id), self.settings.profile or "seed"))

    def profile_for(self, library_id: str) -> Profile:
        """The recipe a search (or an ingest) of ``library_id`` uses: the one it was built with,
        overridden by each choice this stack's configuration makes on purpose — a variable or a
        flag that differs from its profile's value, and, when another named profile is
        configured than the library's, every choice of it — but a choice that shapes what the
        library stores (:data:`~ragspine.profile.INDEX_FIELDS`) may not differ from the
        library's: ``ConfigError`` naming both values and the fix. A library with no recorded
        recipe (built before recipes were recorded) uses the configured one, as it always did."""
        configured = self.profile
        recorded = read_recipe(self.db.library_profile(library_id))
        if recorded is None:
            return configured
        name, built = recorded
        chosen_name = self.settings.profile  # None: no profile chosen, so none overrides the library's
        base = built if chosen_name is not None and chosen_name != name else named_profile(chosen_name or "seed").profile
        chosen = {choice: asked for choice, (asked, _) in configured.differences(base).items()}
        if self._mode_given:
            chosen["mode"] = self.mode.name
        if chosen.get("embedding") == "none":  # no vectors at query time: BM25 over the same index text
            chosen.pop("embedding")
            chosen["mode"] = "economy"
        wanted = built.override(**chosen)
        problem = built.index_mismatch(wanted)
        if problem is not None:
            raise ConfigError(f"library {library_id!r}: {problem}")
        return wanted

    def pipeline(
        self,
        library_id: str,
        profile: Profile | None = None,
        *,
        mode: RetrievalMode | str | None = None,
        embedding: str | None = None,
        chunker: str | None = None,
        contextual: str | None = None,
        ranking: Ranking | None = None,
        raptor: bool | None = None,
    ) -> LibraryPipeline:
        """``library_id``'s pipeline for ``profile`` (default: :meth:`profile_for`'s — the recipe
        the library was built with), one per library and recipe. The keywords override the
        configured recipe instead (a service library's own columns). A mode that uses embeddings
        needs a stack not in economy mode. ``raptor``: whether its RAPTOR leg runs when a request
        does not say (a service library's own switch)."""
        if profile is None:
            given = {"mode": make_retrieval_mode(mode).name if isinstance(mode, RetrievalMode) else mode, "embedding": embedding,
                     "chunker": chunker, "contextual": contextual, "raptor": raptor}
            if all(v is None for v in given.values()) and ranking is None:
                profile = self.profile_for(library_id)
            else:
                profile = self.profile.override(**{k: (UNSET if v is None else v) for k, v in given.items()})
                if mode is None:
                    profile = replace(profile, mode=self.mode.name)
                if ranking is not None:
                    profile = replace(profile, ranking=ranking)
        return self._pipeline_for(library_id, profile)

    def _pipeline_for(self, library_id: str, profile: Profile) -> LibraryPipeline:
        resolved = make_retrieval_mode(profile.mode)
        if resolved.requires_embeddings and not self.mode.uses_embeddings:
            raise ConfigError(f"retrieval mode {resolved.name!r} needs embeddings, but this stack runs in economy mode")
        spec = self._embedding_spec(profile.embedding)
        backend = self.embedding_backend_for(spec) if resolved.uses_embeddings else None  # None in an economy stack
        if backend is None and resolved.requires_embeddings:
            raise ConfigError(f"retrieval mode {resolved.name!r} needs an embedding backend, but the embedding is {spec!r}")
        recipe = replace(profile, reasoning=ReasoningOptions())  # reasoning wraps the exit, not the pipeline
        key = (library_id, replace(recipe, mode=resolved.name, embedding=spec) if backend is not None else
               replace(recipe, mode="economy", embedding=""))
        with self._lock:
            pipeline = self._pipelines.get(key)
            if pipeline is None:
                pipeline = self._pipelines[key] = self._build_pipeline(library_id, resolved, spec, backend, recipe)
                self._trim_lexical(keep=library_id)
            elif library_id in self._lexical:
                self._lexical.move_to_end(library_id)
            return pipeline

    def _trim_lexical(self, keep: str) -> None:
        """Close the least recently used libraries' in-process lexical indexes (and their
        pipelines) while those held exceed ``RAGSPINE_LEXICAL_CACHE_ROWS`` rows; ``keep`` stays.
        A closed library reopens on its next query (from its saved index where there is one);
        a request still holding the old pipeline finishes with it."""
        budget = self.settings.lexical_cache_rows
        held = {lib: ix.resident_rows for lib, ix in self._lexical.items() if isinstance(ix, ResidentIndex)}
        total = sum(held.values())
        for lib in [lib for lib in self._lexical if lib in held and lib != keep]:
            if total <= budget:
                break
            total -= held[lib]
            del self._lexical[lib]
            for pipeline_key in [k for k in self._pipelines if k[0] == lib]:
                del self._pipelines[pipeline_key]

    #: The seed-era name of :meth:`pipeline`.
    index = pipeline

    def _build_pipeline(
        self, library_id: str, mode: RetrievalMode, spec: str, backend: EmbeddingBackend | None, recipe: Profile,
    ) -> LibraryPipeline:
        s = self.settings
        ranking, raptor = recipe.ranking, recipe.raptor
        store = self.db.chunk_store(library_id)
        index_text = make_index_text_fn(recipe.contextual)
        lexical = self._lexical.get(library_id)
        if lexical is None or self._lexical_text.get(library_id) is not index_text:
            lexical = self._lexical[library_id] = self._lexical_index(store, index_text)
            self._lexical_text[library_id] = index_text
        vectors = None
        if backend is not None:
            vectors = self._vectors.get((library_id, spec))
            if vectors is None:
                vectors = self._vectors[(library_id, spec)] = self.vector_connector.open(
                    library_id, model_id=model_id_of(backend), dim=vector_dim(backend)
                )
        pipeline = LibraryPipeline(
            store,
            embedding_backend=backend,
            vector_store=vectors,
            embedding_cache=self._cache_for(backend),
            mode=mode if backend is not None else "economy",
            lexical_index=lexical,
            rewriter=self._rewriter(),
            reranker=self.reranker(ranking.reranker),
            rerank_depth=ranking.rerank_depth,
            leg_weights=parse_weights(ranking.fusion_weights),
            postprocessor=self.postprocessor(ranking.postprocessor),
            chunker=self._chunker_or_refusal(recipe, backend),
            index_text=index_text,
            dense_gate=DenseGate(backend, max_unknown_share=s.dense_max_unknown_share) if backend else None,
            rrf_k=s.rrf_k,
            candidate_k=s.candidate_k,
            embed_batch_size=s.embed_batch_size,
            chunk_cache=self.chunk_cache,
        )
        pipeline.raptor_default = raptor
        if backend is not None and raptor_store_kind(self.db) is not None:  # RAPTOR: only when RAGSPINE_RAPTOR or a request turns it on
            attach_raptor(pipeline, self.raptor_store(library_id), default=raptor, top_nodes=s.raptor_top_nodes)
        return pipeline

    def raptor_store(self, library_id: str) -> RaptorStore:
        """``library_id``'s RAPTOR tree store, in the chunk database (no I/O)."""
        return make_raptor_store(library_id, database=self.db)

    def _chunker_or_refusal(self, recipe: Profile, backend: EmbeddingBackend | None) -> Chunker:
        """The pipeline's chunker; one that cannot be built here (``semantic`` without an
        embedding model) refuses every document with its error, and queries still run."""
        try:
            return self.chunker(recipe.chunker, backend, chars=recipe.chunk_chars, packing=recipe.chunk_packing)
        except ConfigError as exc:
            return _RefusingChunker(exc)

    def _rewriter(self) -> GlossaryQueryRewriter:
        if not self.settings.glossary:
            return GlossaryQueryRewriter()
        return GlossaryQueryRewriter.from_file(self.settings.glossary)

    def retriever(self, library_ids: Sequence[str] | None = None, *, retry_without_filters: bool = True) -> NarrativeRetriever:
        """One library → its exit; several (default: every library) → routed multi-index.
        ``retry_without_filters``: the seed's default retry when nothing matched the filters
        (the answer then says ``filters_dropped``)."""
        if library_ids:  # only the named ones are looked up: no counting over the whole database
            wanted = list(dict.fromkeys(library_ids))
            known = self.db.descriptions(wanted)
        else:
            known = {lib.library_id: lib.description for lib in self.libraries()}
            wanted = sorted(known)
        missing = [lib for lib in wanted if lib not in known]
        if missing:
            every = sorted(lib.library_id for lib in self.libraries())
            raise ConfigError(f"unknown library {missing[0]!r}; known: {', '.join(every) or '(none yet: ingest first)'}")
        if not wanted:
            raise ConfigError("there are no libraries yet: run `ragspine ingest PATH --library NAME` first")
        return self.retriever_for(
            {lib: self.pipeline(lib) for lib in wanted},
            descriptions={lib: known[lib] for lib in wanted},
            retry_without_filters=retry_without_filters,
        )

    def retriever_for(
        self,
        pipelines: dict[str, LibraryPipeline],
        *,
        descriptions: dict[str, str] | None = None,
        retry_without_filters: bool = True,
        reasoning: ReasoningOptions | Mapping[str, ReasoningOptions] | None = None,
        raptor: bool | None = None,
    ) -> NarrativeRetriever:
        """The link exit over ``pipelines`` (library id → pipeline): one library's exit, or the
        routed, fused multi-library one (the retry without filters then applies to the fused
        answer, so one library's unfiltered fallback never sits next to another's matches).
        With a security deny list or any query-time ``reasoning`` (default: the configured
        options; a mapping gives each library its own, the configured ones where it has none)
        the exit is wrapped in a :class:`ReasoningRetriever` — or, when the libraries' options
        differ, each library reasons for itself (:class:`PerLibraryReasoning`); with neither
        it is the plain exit, byte for byte. ``raptor``: the request's RAPTOR choice (``None``: each
        library's own), checked here — RAPTOR without vectors is refused."""
        for library_id, pipeline in pipelines.items():
            default = pipeline.raptor_default
            if raptor_requested(self.settings.raptor if default is None else default, raptor):
                check_raptor({library_id: pipeline}, needs_leg=True)  # RAPTOR without vectors is refused, never silently left out
        per_library = self._options_per_library(pipelines, reasoning)
        gate = self.security_gate
        if len(set(per_library.values())) > 1:
            return self._per_library_reasoning(pipelines, descriptions, retry_without_filters, per_library)
        options = next(iter(per_library.values()), None) or self.reasoning_options()
        if not options.active and gate is None:
            return self._exit_for(pipelines, descriptions, retry_without_filters)
        owns_retry = options.decompose != "none" or options.adaptive != "none" or options.corrective
        inner = self._exit_for(pipelines, descriptions, retry_without_filters and not owns_retry)
        return self._reasoner(inner, options, retry_without_filters=retry_without_filters, owns_retry=owns_retry)

    def _options_per_library(
        self, pipelines: Mapping[str, LibraryPipeline], reasoning: ReasoningOptions | Mapping[str, ReasoningOptions] | None,
    ) -> dict[str, ReasoningOptions]:
        if isinstance(reasoning, ReasoningOptions):
            return {lib: reasoning for lib in pipelines}
        configured = self.reasoning_options()
        return {lib: (reasoning or {}).get(lib, configured) for lib in pipelines}

    def _reasoner(self, inner: NarrativeRetriever, options: ReasoningOptions, *, retry_without_filters: bool,
                  owns_retry: bool) -> ReasoningRetriever:
        return ReasoningRetriever(
            inner, gate=self.security_gate, retry_without_filters=retry_without_filters, owns_retry=owns_retry, rrf_k=self.settings.rrf_k,
            observer=self._llm_observer if isinstance(self._llm_observer, ReasoningObserver) else None,
            **self._reasoning_parts(options),
        )

    def _per_library_reasoning(self, pipelines: dict[str, LibraryPipeline], descriptions: dict[str, str] | None,
                               retry_without_filters: bool, per_library: Mapping[str, ReasoningOptions]) -> NarrativeRetriever:
        """Libraries whose reasoning differs: each reasons over its own answer, the question is
        gated once and filters are dropped once, on the fused answer (``per_library.py``)."""
        def own(library_id: str, exit_: NarrativeRetriever) -> NarrativeRetriever:
            options = per_library[library_id]
            if not options.active:
                return exit_
            return LibraryReasoner(library_id, self._reasoner(exit_, options, retry_without_filters=False, owns_retry=False))

        fused = self._exit_for(pipelines, descriptions, retry_without_filters, wrap=own)
        return PerLibraryReasoning(self._reasoner(fused, ReasoningOptions(), retry_without_filters=retry_without_filters, owns_retry=False))

    @property
    def security_gate(self) -> SecurityGate | None:
        """The gate of ``RAGSPINE_SECURITY_DENYLIST`` (``None``: no deny list), its entities
        expanded through the fact glossary (``RAGSPINE_FACT_GLOSSARY``), read once."""
        with self._lock:
            if self._gate is None:
                self._gate = (security_gate_for(self.settings),)
            return self._gate[0]

    def reasoning_options(self, **overrides: Any) -> ReasoningOptions:
        """The configured query-time reasoning with a request's ``overrides`` (checked)."""
        return ReasoningOptions.from_settings(self.settings).override(**overrides)

    def check_reasoning(self, options: ReasoningOptions) -> None:
        """Build ``options``' parts now: a ``ConfigError`` when one needs a model this stack lacks."""
        self._reasoning_parts(options)

    def _reasoning_parts(self, options: ReasoningOptions) -> dict[str, Any]:
        """The transform, decomposer, classifier and rewrite of ``options`` (built once each)."""
        with self._lock:
            if options not in self._reasoning:
                self._reasoning[options] = reasoning_parts(options, self.settings, self.provider if uses_llm(options) else None)
            return self._reasoning[options]

    def _exit_for(self, pipelines: dict[str, LibraryPipeline], descriptions: dict[str, str] | None,
                  retry_without_filters: bool, *,
                  wrap: Callable[[str, NarrativeRetriever], NarrativeRetriever] | None = None) -> NarrativeRetriever:
        """One library's exit, or the routed multi-library one (``wrap``: each library's retriever in it)."""
        extractor = self.filter_extractor
        if len(pipelines) == 1:
            (pipeline,) = pipelines.values()
            return NarrativeIndexRetriever(pipeline, retry_without_filters=retry_without_filters, filter_extractor=extractor)
        router = self.settings.library_router
        return MultiIndexRetriever(
            {lib: (wrap or _same)(lib, NarrativeIndexRetriever(p, retry_without_filters=False, share_expansions=False))
             for lib, p in pipelines.items()},
            router=make_library_router(router, provider=self.provider if router == "llm" else None),
            filter_extractor=extractor,
            descriptions=descriptions,
            rrf_k=self.settings.rrf_k,
            retry_without_filters=retry_without_filters,
            library_fusion=self.settings.library_fusion,
        )


def _same(_library_id: str, retriever: NarrativeRetriever) -> NarrativeRetriever:
    return retriever


def describe_reranker(settings: Settings) -> str:
    """The reranker line of ``ragspine config``: what model it runs, and at what depth."""
    name, depth = settings.reranker, f"depth {settings.rerank_depth}"
    if name == "colbert":
        model = settings.colbert_dir or "the packaged all-MiniLM-L6-v2's token states (not a trained ColBERT model)"
        return f"colbert: MaxSim over {model}, {depth}"
    if name in ("cross_encoder", "auto"):
        if not settings.cross_encoder_dir:
            return "none (auto: no RAGSPINE_CROSS_ENCODER_DIR)" if name == "auto" else "cross_encoder: RAGSPINE_CROSS_ENCODER_DIR is not set (refused)"
        return f"cross_encoder: {settings.cross_encoder_dir}, {depth}"
    return name if name == "none" else f"{name}, {depth}"


def describe_profile(settings: Settings, mode: RetrievalMode | str | None = None) -> str:
    """The profile line of ``ragspine config``: the named profile and each choice that overrides it."""
    configured = Profile.from_settings(settings)
    if mode is not None:
        configured = configured.override(mode=make_retrieval_mode(mode).name)
    name = settings.profile or "seed (default)"
    overrides = configured.differences(named_profile(settings.profile or "seed").profile)
    if not overrides:
        return name
    return f"{name}, overridden: " + ", ".join(f"{name}={asked!r}" for name, (asked, _) in overrides.items())


def describe_stack(settings: Settings, mode: RetrievalMode | str | None = None) -> list[tuple[str, str]]:
    """The stack ``settings`` resolve to, as ``(role, value)`` rows — without connecting."""
    resolved = make_retrieval_mode(mode if mode is not None else settings.retrieval_mode)
    chunk = parse_chunk_store(settings.chunk_store, settings.data_dir)
    vector = parse_vector_store(settings.vector_store, chunk, settings.data_dir)
    cache = parse_embedding_cache(settings.embedding_cache, chunk, settings.data_dir)
    off = "none (economy mode)"
    uses = resolved.uses_embeddings
    lexical = settings.lexical_index
    if lexical == "auto":
        lexical = "auto ({}: {})".format(*CHUNK_STORES.load(chunk.kind).auto_lexical_index(settings))
    embedding, mode_name = settings.embedding, resolved.name
    if embedding == "auto":
        from ragspine.retrieval.vector.embedding_backends import onnx_available

        has_onnx = onnx_available()
        embedding = "auto (onnx)" if has_onnx else "auto (none: the [embed-onnx] extra is not installed)"
    if mode_name == "auto":
        has_backend = settings.embedding != "none" and (settings.embedding != "auto" or "(onnx)" in embedding)
        mode_name = "auto (hybrid)" if has_backend else "auto (economy: no embedding backend)"
    return [
        ("profile", describe_profile(settings, mode)),
        ("chunk store", chunk.describe()),
        ("vector store", vector.describe() if uses else off),
        ("embedding cache", cache.describe() if uses else off),
        ("embedding", embedding if uses else off),
        ("retrieval mode", mode_name),
        ("lexical index", lexical),
        ("chunker", settings.chunker),
        ("contextual header", "title · entity · period · heading on the index text" if settings.contextual == "header" else "none"),
        ("reranker", describe_reranker(settings)),
        ("postprocessor", settings.postprocessor),
        ("fusion", "z-score fusion (each leg's z-scored scores, weighted by its best hit's z-score)" if settings.fusion_weights == "zscore"
         else f"RRF k={settings.rrf_k}, weights {settings.fusion_weights or 'none (every leg 1)'}"),
        ("library router", settings.library_router),
        ("filter extractor", settings.filter_extractor),
        ("llm", describe_llm(settings)),
        *ReasoningOptions.from_settings(settings).describe(),
        ("raptor", describe_raptor(settings, uses)),
        ("security gate", describe_gate(settings.security_denylist)),
    ]


class _Closing:
    """``close()`` of an object that may have one (an LLM provider: the local model's server)."""

    def __init__(self, resource: object) -> None:
        self.resource = resource

    def close(self) -> None:
        close = getattr(self.resource, "close", None)
        if callable(close):
            close()


class _RefusingChunker:
    """Stands for a configured chunker that cannot run in this pipeline: chunking raises its error."""

    def __init__(self, error: ConfigError) -> None:
        self.error = error

    def chunk(self, text: str, doc_id: str, **_: Any) -> list[Any]:
        raise ConfigError(str(self.error))
