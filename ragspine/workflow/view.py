"""``PipelineView``: the configured retrieval pipeline as names — redacted by construction.

:func:`pipeline_view` reads :class:`~ragspine.config.Settings` (and, for one library of the
service, that library's stored choices) into a small value holding only **registry names,
kinds and numbers**: the chunker and its budget, the retrieval mode, the lexical index, the
embedding backend's name, the vector and chunk stores' *kinds* (``pgvector``, ``postgresql`` —
never their URLs or paths), the fusion constant and weights, the reranker and its depth, the
postprocessor chain, the router, the filter extractor and whether the security gate and
query-time reasoning are on. Nothing it holds can carry a credential, a URL, a file path, a
prompt, a library or document name, or a variable: what is not here cannot leak into a
picture drawn from it (:mod:`ragspine.workflow.dify`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Mapping

from ragspine.errors import ConfigError, RagspineError

if TYPE_CHECKING:
    from ragspine.config import Settings

__all__ = ["PipelineView", "pipeline_view"]


@dataclass(frozen=True)
class PipelineView:
    """See the module docstring; every field is a registry name, a kind or a number."""

    chunker: str = "default"
    chunk_chars: int = 480
    overlap_chars: int = 80
    contextual: str = "none"
    chunk_store: str = "sqlite"
    mode: str = "economy"
    lexical_index: str = "memory"
    embedding: str = "none"
    vector_store: str = "none"
    rrf_k: int = 60
    fusion_weights: str = "none"
    reranker: str = "none"
    rerank_depth: int = 50
    postprocessors: tuple[str, ...] = ()
    library_router: str = "none"
    filter_extractor: str = "none"
    security_gate: bool = False
    query_reasoning: tuple[str, ...] = ()

    @property
    def dense(self) -> bool:
        """Whether the pipeline has a dense (vector) leg."""
        return self.embedding != "none" and self.mode != "economy"

    def with_library(self, library: Any) -> PipelineView:
        """This view with a service library's stored choices (embedding, mode, chunker,
        contextual header, ranking, the query-time reasoning it chose); its name and description are not read."""
        from ragspine.registries import CHUNKERS, EMBEDDING_BACKENDS, RERANKERS

        mode = _mode(str(library.retrieval_mode), str(library.embedding))
        embedding = _name(EMBEDDING_BACKENDS, library.embedding) if mode != "economy" else "none"
        ranking = library.ranking
        return replace(
            self, chunker=_name(CHUNKERS, library.chunker), contextual=_contextual(library.contextual), mode=mode, embedding=embedding,
            vector_store=self.vector_store if embedding != "none" else "none", reranker=_name(RERANKERS, ranking.reranker),
            rerank_depth=int(ranking.rerank_depth), postprocessors=_postprocessors(ranking.postprocessor),
            fusion_weights=_weights(ranking.fusion_weights), query_reasoning=_library_reasoning(self.query_reasoning, library.reasoning),
        )


def pipeline_view(settings: Settings, mode: str | None = None) -> PipelineView:
    """The pipeline ``settings`` configure (``mode`` overrides ``RAGSPINE_RETRIEVAL_MODE``); no I/O."""
    from ragspine.registries import CHUNK_STORES, EMBEDDING_BACKENDS, FILTER_EXTRACTORS, LIBRARY_ROUTERS, RERANKERS
    from ragspine.stores.registry import parse_chunk_store, parse_vector_store

    chunk = parse_chunk_store(settings.chunk_store, settings.data_dir)
    embedding = settings.embedding
    if embedding == "auto":
        from ragspine.retrieval.vector.embedding_backends import onnx_available

        embedding = "onnx" if onnx_available() else "none"
    resolved = _mode(mode if mode is not None else settings.retrieval_mode, embedding)
    embedding = _name(EMBEDDING_BACKENDS, embedding) if resolved != "economy" else "none"
    vector = parse_vector_store(settings.vector_store, chunk, settings.data_dir).kind if embedding != "none" else "none"
    lexical = settings.lexical_index
    if lexical == "auto":
        lexical = str(CHUNK_STORES.load(chunk.kind).auto_lexical_index(settings)[0])
    return PipelineView(
        chunker=settings.chunker, chunk_chars=settings.chunk_chars, overlap_chars=settings.overlap_chars,
        contextual=_contextual(settings.contextual), chunk_store=chunk.kind, mode=resolved, lexical_index=lexical, embedding=embedding,
        vector_store=vector, rrf_k=settings.rrf_k, fusion_weights=_weights(settings.fusion_weights),
        reranker=_name(RERANKERS, settings.reranker), rerank_depth=settings.rerank_depth,
        postprocessors=_postprocessors(settings.postprocessor), library_router=_name(LIBRARY_ROUTERS, settings.library_router),
        filter_extractor=_name(FILTER_EXTRACTORS, settings.filter_extractor), security_gate=bool(settings.security_denylist),
        query_reasoning=_reasoning(settings),
    )


def _mode(mode: str, embedding: str) -> str:
    """``economy``, ``hybrid`` or ``vector`` (``auto``: hybrid with an embedding backend)."""
    from ragspine.retrieval.mode import make_retrieval_mode

    resolved = make_retrieval_mode(mode)
    if not resolved.uses_embeddings or embedding in ("none", ""):
        return "economy"
    return "hybrid" if resolved.name == "auto" else resolved.name


def _name(registry: Any, value: object) -> str:
    """``value`` as a name of ``registry``; anything else (a URL, a path) is ``custom``."""
    try:
        return str(registry.canonical(value))
    except (ConfigError, AttributeError):
        return "custom"


def _contextual(value: object) -> str:
    return "header" if str(value).strip().lower() == "header" else "none"


def _postprocessors(spec: object) -> tuple[str, ...]:
    from ragspine.registries import POSTPROCESSORS

    names = (_name(POSTPROCESSORS, part.strip()) for part in str(spec or "").split(",") if part.strip())
    return tuple(name for name in names if name != "none")


def _weights(spec: object) -> str:
    from ragspine.retrieval.fusion.weights import format_weights, parse_weights

    try:
        return format_weights(parse_weights(spec if isinstance(spec, str) else None))
    except RagspineError:
        return "custom"


def _reasoning(settings: Settings) -> tuple[str, ...]:
    """The query-time reasoning switched on (query transform, decomposition, Adaptive-RAG, corrective)."""
    return _reasoning_of(settings.query_transform, settings.query_decompose, settings.adaptive, settings.corrective)


def _reasoning_of(transform: object, decompose: object, adaptive: object, corrective: object) -> tuple[str, ...]:
    from ragspine.registries import COMPLEXITY_CLASSIFIERS, QUERY_DECOMPOSERS, QUERY_TRANSFORMS

    parts = [
        ("transform", _name(QUERY_TRANSFORMS, transform)),
        ("decompose", _name(QUERY_DECOMPOSERS, decompose)),
        ("adaptive", _name(COMPLEXITY_CLASSIFIERS, adaptive)),
    ]
    on = [f"{what} {name}" for what, name in parts if name != "none"]
    return (*on, *(["corrective"] if corrective else []))


def _library_reasoning(current: tuple[str, ...], chosen: Mapping[str, Any]) -> tuple[str, ...]:
    """``current`` (the server's reasoning) with each step a service library chose for itself
    (``chosen``: ``ReasoningOptions.override``'s keywords, ``None`` = the server's)."""
    server = {part.split(" ")[0]: part.partition(" ")[2] for part in current}
    transform, decompose, adaptive = (
        chosen.get(what) if chosen.get(what) is not None else server.get(what, "none") for what in ("transform", "decompose", "adaptive")
    )
    corrective = chosen.get("corrective")
    return _reasoning_of(transform, decompose, adaptive, "corrective" in server if corrective is None else corrective)
