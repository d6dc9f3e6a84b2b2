"""Pure wiring: a library's pipeline from a :class:`~ragspine.profile.Profile` and the shared
:class:`~ragspine.assembly.resources.Resources` — its chunker, ranking stages, lexical index and
vectors. Nothing here opens anything; :class:`~ragspine.stack.Stack` caches what it builds.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from typing import Any, Callable, Mapping

from ragspine.assembly.resources import Resources
from ragspine.config import Settings
from ragspine.errors import ConfigError
from ragspine.profile import Profile
from ragspine.registries import CHUNKERS
from ragspine.retrieval.chunking.base import Chunker, bounds_parents, make_chunker
from ragspine.retrieval.chunking.chunk_store import ChunkStore, StoredChunk
from ragspine.retrieval.chunking.chunking import Chunk
from ragspine.retrieval.chunking.domain_presets import default_parent_chars
from ragspine.retrieval.fusion.weights import parse_weights
from ragspine.retrieval.lexical.base import LexicalIndex, ResidentIndex, default_index_text, make_lexical_index
from ragspine.retrieval.mode import RetrievalMode
from ragspine.retrieval.pipeline import LibraryPipeline
from ragspine.retrieval.postprocess.base import Postprocessor, make_postprocessor
from ragspine.retrieval.ranking import Ranking
from ragspine.retrieval.raptor.leg import attach_raptor
from ragspine.retrieval.raptor.retriever import raptor_store_kind
from ragspine.retrieval.sensitivity import DEFAULT_SENSITIVITY
from ragspine.retrieval.vector.embedding import EmbeddingBackend
from ragspine.retrieval.vector.gate import DenseGate
from ragspine.retrieval.vector.vector_store import VectorStore

log = logging.getLogger(__name__)
_NOTICED: set[str] = set()  # the one-line notices of `auto` already logged by this process


def build_pipeline(
    res: Resources, store: ChunkStore, mode: RetrievalMode, backend: EmbeddingBackend | None, recipe: Profile, *,
    lexical: LexicalIndex, index_text: Callable[[StoredChunk], str], vectors: VectorStore | None,
) -> LibraryPipeline:
    """The pipeline over ``store`` (one library's) for ``recipe`` (its mode resolved to ``mode``,
    its embedding to ``backend``) with the shared ``lexical`` index and ``vectors``: pure wiring of
    ``res``'s parts."""
    s = res.settings
    ranking, raptor = recipe.ranking, recipe.raptor
    library_id = store.library_id
    pipeline = LibraryPipeline(
        store,
        embedding_backend=backend,
        vector_store=vectors,
        embedding_cache=res._cache_for(backend),
        mode=mode if backend is not None else "economy",
        lexical_index=lexical,
        rewriter=res._rewriter(),
        reranker=res.reranker(ranking.reranker),
        rerank_depth=ranking.rerank_depth,
        leg_weights=parse_weights(ranking.fusion_weights),
        postprocessor=postprocessor_of(s, ranking.postprocessor, profile=recipe),
        chunker=chunker_or_refusal(s, recipe, backend),
        index_text=index_text,
        dense_gate=DenseGate(backend, max_unknown_share=s.dense_max_unknown_share) if backend else None,
        rrf_k=s.ranking.rrf_k,
        candidate_k=s.ranking.candidate_k,
        embed_batch_size=s.embed_batch_size,
        chunk_cache=res.chunk_cache,
    )
    pipeline.raptor_default = raptor
    if backend is not None and raptor_store_kind(res.db) is not None:  # RAPTOR: only when RAGSPINE_RAPTOR or a request turns it on
        attach_raptor(pipeline, res.raptor_store(library_id), default=raptor, top_nodes=s.raptor.top_nodes)
    return pipeline


def lexical_index(res: Resources, store: ChunkStore, index_text: Callable[[StoredChunk], str] = default_index_text) -> LexicalIndex:
    """The configured LexicalIndex over ``store`` (``RAGSPINE_LEXICAL_INDEX``; ``auto`` is the
    chunk database's own) indexing ``index_text``."""
    auto, why = res.db.auto_lexical_index(res.settings)
    if res.settings.lexical_index == "auto" and auto == "postgres" and why not in _NOTICED:
        _NOTICED.add(why)
        log.warning("RAGSPINE_LEXICAL_INDEX=auto: %s", why)
    return make_lexical_index(res.settings.lexical_index, store, settings=res.settings, auto=auto, index_text=index_text)


def trim_lexical(lexical: OrderedDict[str, LexicalIndex], pipelines: dict[tuple[str, Profile], LibraryPipeline], budget: int,
                 keep: str) -> None:
    """Close the least recently used libraries' in-process lexical indexes (and their
    pipelines) while those held exceed ``budget`` rows (``RAGSPINE_LEXICAL_CACHE_ROWS``); ``keep``
    stays. A closed library reopens on its next query (from its saved index where there is one);
    a request still holding the old pipeline finishes with it."""
    held = {lib: ix.resident_rows for lib, ix in lexical.items() if isinstance(ix, ResidentIndex)}
    total = sum(held.values())
    for lib in [lib for lib in lexical if lib in held and lib != keep]:
        if total <= budget:
            break
        total -= held[lib]
        del lexical[lib]
        for pipeline_key in [k for k in pipelines if k[0] == lib]:
            del pipelines[pipeline_key]


def stage_chunker(settings: Settings, name: str | None = None, backend: EmbeddingBackend | None = None, *,
                  chars: int | None = None, packing: str | None = None) -> Chunker:
    """The chunker ``name`` (default ``RAGSPINE_CHUNKER``) with the budget ``chars`` and
    ``packing`` (default: the configured ones); ``semantic`` is given ``backend`` (the
    library's embedding model) and refuses to run without one."""
    s = settings
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
    if "embedding" in CHUNKERS.needs(name):  # its registry line says it cuts by the library's model
        options["embedding_backend"] = backend
    if bounds_parents(name):
        options["parent_chars"] = s.parent_chars if chars == s.chunk_chars else max(s.parent_chars, default_parent_chars(chars))
    return make_chunker(name, **options)


def chunker_or_refusal(settings: Settings, recipe: Profile, backend: EmbeddingBackend | None) -> Chunker:
    """The pipeline's chunker; one that cannot be built here (``semantic`` without an
    embedding model) refuses every document with its error, and queries still run."""
    try:
        return stage_chunker(settings, recipe.chunker, backend, chars=recipe.chunk_chars, packing=recipe.chunk_packing)
    except ConfigError as exc:
        return RefusingChunker(exc)


def ranking_of(
    settings: Settings, reranker: str | None = None, postprocessor: str | None = None, fusion_weights: str | Mapping[str, object] | None = None,
    rerank_depth: int | None = None,
) -> Ranking:
    """A :class:`Ranking` checked and in canonical form; what is not given is the configured one."""
    r = settings.ranking
    return Ranking.of(
        r.reranker if reranker is None else reranker, r.postprocessor if postprocessor is None else postprocessor,
        r.fusion_weights if fusion_weights is None else fusion_weights, r.rerank_depth if rerank_depth is None else rerank_depth,
    )


def postprocessor_of(settings: Settings, spec: str | None = None, profile: Profile | None = None) -> Postprocessor | None:
    """The chain ``spec`` (default ``RAGSPINE_POSTPROCESSOR``), each stage built from ``settings``;
    a stage that needs the library's recipe is handed ``profile`` (default: the one ``settings``
    resolve to)."""
    return make_postprocessor(settings.ranking.postprocessor if spec is None else spec, settings=settings, profile=profile)


class RefusingChunker:
    """Stands for a configured chunker that cannot run in this pipeline: chunking raises its error."""

    def __init__(self, error: ConfigError) -> None:
        self.error = error

    def chunk(
        self, text: str, doc_id: str, *, title: str = "", metadata: Mapping[str, object] | None = None,
        sensitivity: str = DEFAULT_SENSITIVITY, source: str | None = None, source_offset: int = 0,
    ) -> list[Chunk]:
        raise ConfigError(str(self.error))
