"""``Stack``: the whole retrieval stack from :class:`Settings` — what the CLI and the service use.

A facade over ``ragspine/assembly/``: the shared :class:`~ragspine.assembly.resources.Resources`
(opened on first use, closed once; ``Stack(settings)`` does no I/O, and in ``economy`` mode no
embedding backend, embedding cache or vector store is ever built) with the configured stages
(``stages.py``), and a cache of pipelines keyed
by library and :class:`~ragspine.profile.Profile` (``pipelines.py`` wires one; ``exits.py`` the
link exits over them). Every pipeline of one library shares its lexical index, and every
pipeline of one (library, embedding) pair its vector store.

A library's recipe: :meth:`Stack.profile_for` — the one it was built with (recorded at its
ingest, :meth:`Stack.record_profile`) under the choices this configuration makes on purpose.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from dataclasses import replace
from functools import cached_property
from typing import Any, Callable, Mapping, Sequence

from ragspine.assembly.describe import describe_profile, describe_reranker, describe_stack
from ragspine.assembly.exits import Exits
from ragspine.assembly.pipelines import build_pipeline, lexical_index, trim_lexical
from ragspine.assembly.stages import ConfiguredStages
from ragspine.config import Settings, load_settings
from ragspine.errors import BackendError, ConfigError, RagspineError
from ragspine.llm.base import LLMProvider
from ragspine.profile import UNSET, Profile, library_recipe, read_recipe, recipe_json
from ragspine.registries import RERANKERS
from ragspine.retrieval.chunking.chunk_store import LibraryInfo
from ragspine.retrieval.contextual import make_index_text_fn
from ragspine.retrieval.lexical.base import LexicalIndex
from ragspine.retrieval.link.narrative_link import NarrativeRetriever
from ragspine.retrieval.mode import RetrievalMode, make_retrieval_mode
from ragspine.retrieval.pipeline import LibraryPipeline
from ragspine.retrieval.ranking import Ranking
from ragspine.retrieval.reasoning import ReasoningOptions
from ragspine.retrieval.rerank.base import StoringReranker
from ragspine.retrieval.vector.embedding import EmbeddingBackend, model_id_of, vector_dim
from ragspine.retrieval.vector.vector_store import VectorStore

__all__ = ["Stack", "describe_profile", "describe_reranker", "describe_stack"]


class Stack(ConfiguredStages):
    """See the module docstring. Close it when done (``with Stack() as stack:``)."""

    def __init__(self, settings: Settings | None = None, *, mode: RetrievalMode | str | None = None,
                 provider: LLMProvider | None = None) -> None:
        super().__init__(settings or load_settings(), mode=mode, provider=provider)
        self._mode_given = mode is not None  # a --mode flag: a choice over a library's recorded mode
        self._pipelines: dict[tuple[str, Profile], LibraryPipeline] = {}  # (library, recipe as run: mode/embedding resolved)
        self._lexical: OrderedDict[str, LexicalIndex] = OrderedDict()  # least recently used first (RAGSPINE_LEXICAL_CACHE_ROWS)
        self._lexical_text: dict[str, Callable[..., str]] = {}  # library -> the index text its lexical index was built with
        self._vectors: dict[tuple[str, str], VectorStore] = {}  # (library, embedding)
        self._opened_lexical: weakref.WeakSet[LexicalIndex] = weakref.WeakSet()  # evicted ones too, while alive (a build holds its own)
        self._pipeline_lock = threading.RLock()
        self.exits = Exits(self)

    def __enter__(self) -> Stack:
        return self

    def close(self) -> None:
        """Close the lexical indexes built (a warm one's background build reads through the
        database's pool), then the shared resources."""
        with self._pipeline_lock:
            lexical = list(self._opened_lexical)
        for index in lexical:
            close = getattr(index, "close", None)
            if callable(close):
                close()
        super().close()

    def describe(self) -> list[tuple[str, str]]:
        return describe_stack(self.settings, self.mode)

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
        """The recipe a search (or an ingest) of ``library_id`` uses (:func:`~ragspine.profile.library_recipe`):
        the one it was built with under this configuration's deliberate choices; none recorded: the configured one."""
        recorded = read_recipe(self.db.library_profile(library_id))
        if recorded is None:
            return self.profile
        return library_recipe(library_id, recorded, self.profile, self.settings.profile, mode=self.mode.name if self._mode_given else None)

    # -- pipelines ---------------------------------------------------------------------------
    def pipeline(self, library_id: str, profile: Profile | None = None, *, mode: RetrievalMode | str | None = None,
                 embedding: str | None = None, chunker: str | None = None, contextual: str | None = None,
                 ranking: Ranking | None = None, raptor: bool | None = None) -> LibraryPipeline:
        """``library_id``'s pipeline for ``profile`` (default: :meth:`profile_for`'s), one per
        library and recipe; the keywords override the configured recipe instead. A mode that uses
        embeddings needs a stack not in economy mode."""
        if profile is None:
            given = {"mode": mode.name if isinstance(mode, RetrievalMode) else mode, "embedding": embedding, "chunker": chunker,
                     "contextual": contextual, "raptor": raptor}
            if all(v is None for v in given.values()) and ranking is None:
                profile = self.profile_for(library_id)
            else:
                profile = self.profile.override(**{k: (UNSET if v is None else v) for k, v in given.items()})
                profile = replace(profile, mode=profile.mode if mode is not None else self.mode.name,
                                  ranking=ranking if ranking is not None else profile.ranking)
        resolved = make_retrieval_mode(profile.mode)
        if resolved.requires_embeddings and not self.mode.uses_embeddings:
            raise ConfigError(f"retrieval mode {resolved.name!r} needs embeddings, but this stack runs in economy mode")
        spec = self._embedding_spec(profile.embedding)
        asks = resolved.uses_embeddings or resolved.name == self.mode.name  # the stack's own mode asks its backend as ever
        backend = self.embedding_backend_for(spec) if asks else None  # None in an economy stack
        if backend is None and resolved.requires_embeddings:
            raise ConfigError(f"retrieval mode {resolved.name!r} needs an embedding backend, but the embedding is {spec!r}")
        recipe = replace(profile, reasoning=ReasoningOptions())  # reasoning wraps the exit, not the pipeline
        key = (library_id, replace(recipe, mode=resolved.name, embedding=spec) if backend else replace(recipe, mode="economy", embedding=""))
        with self._pipeline_lock:
            pipeline = self._pipelines.get(key)
            if pipeline is None:
                pipeline = self._pipelines[key] = self._build(library_id, resolved, spec, backend, recipe)
                trim_lexical(self._lexical, self._pipelines, self.settings.lexical_cache_rows, keep=library_id)
            elif library_id in self._lexical:
                self._lexical.move_to_end(library_id)
            return pipeline

    #: The seed-era name of :meth:`pipeline`.
    index = pipeline

    def _build(self, library_id: str, mode: RetrievalMode, spec: str, backend: EmbeddingBackend | None, recipe: Profile) -> LibraryPipeline:
        store, index_text = self.db.chunk_store(library_id), make_index_text_fn(recipe.contextual)
        lexical = self._lexical.get(library_id)
        if lexical is None or self._lexical_text.get(library_id) is not index_text:
            lexical = self._lexical[library_id] = lexical_index(self, store, index_text)
            self._lexical_text[library_id] = index_text
            self._opened_lexical.add(lexical)
        vectors = None
        if backend is not None:
            vectors = self._vectors.get((library_id, spec))
            if vectors is None:
                vectors = self._vectors[(library_id, spec)] = self.vector_connector.open(
                    library_id, model_id=model_id_of(backend), dim=vector_dim(backend))
        return build_pipeline(self, store, mode, backend, recipe, lexical=lexical, index_text=index_text, vectors=vectors)

    # -- libraries -----------------------------------------------------------------------------
    def libraries(self, library_ids: Sequence[str] | None = None) -> list[LibraryInfo]:
        """Every library, or only those of ``library_ids`` that exist."""
        return self.db.list_libraries(library_ids)

    def library(self, library_id: str) -> LibraryInfo | None:
        return self.db.get_library(library_id)

    def ensure_library(self, library_id: str, description: str | None = None, tenant_id: str | None = None) -> LibraryInfo:
        """Create the library if new; ``tenant_id`` is recorded where the catalog has an owner column (PostgreSQL)."""
        return self.db.ensure_library(library_id, description, tenant_id=tenant_id)

    def delete_library(self, library_id: str, *, embeddings: Sequence[str] = ()) -> bool:
        """Remove a library from every store: chunks, change log, vectors and embedding cache entries
        of the configured backend and each of ``embeddings`` (a shared entry goes too: a miss, not a loss),
        and its visual index's files (``ragspine visual build``: a library made again under its name never adopts them)."""
        chunks: list[Any] | None = None
        reranker = self.reranker() if "cache" in RERANKERS.needs(self.settings.ranking.reranker) else None
        if isinstance(reranker, StoringReranker):  # what it stored of the library's texts goes too
            chunks = self.db.chunk_store(library_id).iter_chunks(include_inactive=True)
            reranker.forget(chunks)
        for spec in dict.fromkeys(self._embedding_spec(e) for e in (None, *embeddings)):
            dense = self.pipeline(library_id, embedding=spec).retriever.dense if self.embedding_backend_for(spec) else None
            if dense is not None:
                chunks = chunks if chunks is not None else self.db.chunk_store(library_id).iter_chunks(include_inactive=True)
                dense.forget(chunks)
        with self._pipeline_lock:
            for key in [k for k in self._pipelines if k[0] == library_id]:
                del self._pipelines[key]
            self._lexical.pop(library_id, None)
            self._lexical_text.pop(library_id, None)
            for vector_key in [k for k in self._vectors if k[0] == library_id]:
                del self._vectors[vector_key]
        self.chunk_cache.forget_library(library_id)
        return bool(self.db.delete_library(library_id))

    def preflight(self, library_id: str, *, mode: RetrievalMode | str | None = None, embedding: str | None = None) -> None:
        """Before an ingest's first write: every store answers, the embedding backend embeds, the vector store
        takes its dimension; else ``BackendError``/``ConfigError`` naming each problem and its fix."""
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

    # -- exits -----------------------------------------------------------------------------------
    def retriever(self, library_ids: Sequence[str] | None = None, *, retry_without_filters: bool = True) -> NarrativeRetriever:
        """One library → its exit; several (default: all) → routed multi-index, each with its own recipe."""
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
        recipes = {lib: self.profile_for(lib) for lib in wanted}
        return self.retriever_for({lib: self.pipeline(lib, recipes[lib]) for lib in wanted}, descriptions={lib: known[lib] for lib in wanted},
                                  retry_without_filters=retry_without_filters, reasoning={lib: r.reasoning for lib, r in recipes.items()})

    def retriever_for(self, pipelines: dict[str, LibraryPipeline], *, descriptions: dict[str, str] | None = None,
                      retry_without_filters: bool = True, reasoning: ReasoningOptions | Mapping[str, ReasoningOptions] | None = None,
                      raptor: bool | None = None) -> NarrativeRetriever:
        """The link exit over ``pipelines`` (:meth:`~ragspine.assembly.exits.Exits.retriever_for`)."""
        return self.exits.retriever_for(pipelines, descriptions=descriptions, retry_without_filters=retry_without_filters,
                                        reasoning=reasoning, raptor=raptor)

    def reasoning_options(self, **overrides: Any) -> ReasoningOptions:
        """The configured query-time reasoning with a request's ``overrides`` (checked)."""
        return self.exits.reasoning_options(**overrides)

    def check_reasoning(self, options: ReasoningOptions) -> None:
        """Build ``options``' parts now: a ``ConfigError`` when one needs a model this stack lacks."""
        self.exits.check_reasoning(options)

