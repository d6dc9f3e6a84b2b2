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
from ragspine.retrieval.chunking.sqlite_store import SQLiteDatabase
from ragspine.retrieval.lexical.rewrite import GlossaryQueryRewriter
from ragspine.retrieval.link.narrative_link import NarrativeIndexRetriever, NarrativeRetriever
from ragspine.retrieval.mode import RetrievalMode, make_retrieval_mode
from ragspine.retrieval.narrative_index import NarrativeIndex
from ragspine.retrieval.routing.multi_index import MultiIndexRetriever
from ragspine.retrieval.routing.routers import make_library_router
from ragspine.retrieval.vector.base import EmbeddingBackend, EmbeddingCache, VectorStore
from ragspine.retrieval.vector.gate import DenseGate

VECTOR_STORES = ("memory",)
EMBEDDING_CACHES = ("auto", "sqlite", "memory")


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
        self.mode = make_retrieval_mode(mode if mode is not None else self.settings.retrieval_mode)
        if self.settings.vector_store not in VECTOR_STORES:
            raise ConfigError(
                f"unknown RAGSPINE_VECTOR_STORE {self.settings.vector_store!r}; "
                f"choose one of {', '.join(VECTOR_STORES)}"
            )
        if self.settings.embedding_cache not in EMBEDDING_CACHES:
            raise ConfigError(
                f"unknown RAGSPINE_EMBEDDING_CACHE {self.settings.embedding_cache!r}; "
                f"choose one of {', '.join(EMBEDDING_CACHES)}"
            )
        self.provider = provider
        self.db = SQLiteDatabase(self.settings.chunk_store)
        self.db.init_schema()
        self._lock = threading.RLock()
        self._backend_built = False
        self._backend: EmbeddingBackend | None = None
        self._cache: EmbeddingCache | None = None
        self._indexes: dict[str, NarrativeIndex] = {}

    def __enter__(self) -> "Stack":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.db.close()

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
                if self.settings.embedding_cache == "memory":
                    from ragspine.retrieval.vector.cache import InMemoryEmbeddingCache

                    self._cache = InMemoryEmbeddingCache()
                else:
                    from ragspine.retrieval.vector.cache import SQLiteEmbeddingCache

                    self._cache = SQLiteEmbeddingCache(self.db)
            return self._cache

    def vector_store(self, library_id: str) -> VectorStore | None:
        if self.embedding_backend is None:
            return None
        from ragspine.retrieval.vector.store import InProcessVectorStore

        return InProcessVectorStore(library_id=library_id)

    # -- libraries and retrievers ---------------------------------------------------------
    def libraries(self) -> list[LibraryInfo]:
        return self.db.list_libraries()

    def library(self, library_id: str) -> LibraryInfo | None:
        return self.db.get_library(library_id)

    def ensure_library(self, library_id: str, description: str | None = None) -> LibraryInfo:
        return self.db.ensure_library(library_id, description)

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
