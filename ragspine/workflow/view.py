"""``PipelineView``: the configured retrieval pipeline as names — redacted by construction.

:func:`pipeline_view` reads :class:`~ragspine.config.Settings` and a
:class:`~ragspine.profile.Profile` (the settings' own, or the recipe one library's searches run) into a small value holding only **registry names,
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
from typing import TYPE_CHECKING, Any

from ragspine.errors import ConfigError, RagspineError

if TYPE_CHECKING:
    from ragspine.config import Settings
    from ragspine.profile import Profile

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

    def with_profile(self, recipe: Profile) -> PipelineView:
        """This view with the recipe fields of ``recipe`` (a library's, over the server's: what its
        searches run): chunker and budget, contextual header, mode, embedding, ranking, reasoning."""
        from ragspine.registries import CHUNKERS, EMBEDDING_BACKENDS, RERANKERS

        embedding = _resolved_embedding(str(recipe.embedding))
        mode = _mode(str(recipe.mode), embedding)
        embedding = _name(EMBEDDING_BACKENDS, embedding) if mode != "economy" else "none"
        ranking, reasoning = recipe.ranking, recipe.reasoning
        return replace(
            self, chunker=_name(CHUNKERS, recipe.chunker), chunk_chars=int(recipe.chunk_chars), contextual=_contextual(recipe.contextual),
            mode=mode, embedding=embedding, vector_store=self.vector_store if embedding != "none" else "none",
            reranker=_name(RERANKERS, ranking.reranker), rerank_depth=int(ranking.rerank_depth), postprocessors=_postprocessors(ranking.postprocessor),
            fusion_weights=_weights(ranking.fusion_weights),
            query_reasoning=_reasoning_of(reasoning.transform, reasoning.decompose, reasoning.adaptive, reasoning.corrective),
        )


def pipeline_view(settings: Settings, mode: str | None = None, recipe: Profile | None = None) -> PipelineView:
    """The pipeline ``settings`` configure for ``recipe`` (default: the settings' own,
    :meth:`Profile.from_settings`; ``mode`` overrides its mode); no I/O. The recipe fields are read
    from the :class:`~ragspine.profile.Profile` the searches run, the rest (stores, fusion
    constant, router, gate) from ``settings``."""
    from ragspine.profile import Profile
    from ragspine.registries import CHUNK_STORES, FILTER_EXTRACTORS, LIBRARY_ROUTERS
    from ragspine.stores.registry import parse_chunk_store, parse_vector_store

    recipe = recipe if recipe is not None else Profile.from_settings(settings)
    if mode is not None:
        recipe = replace(recipe, mode=mode)
    chunk = parse_chunk_store(settings.chunk_store, settings.data_dir)
    lexical = settings.lexical_index
    if lexical == "auto":
        lexical = str(CHUNK_STORES.load(chunk.kind).auto_lexical_index(settings)[0])
    dense = _mode(str(recipe.mode), _resolved_embedding(str(recipe.embedding))) != "economy"
    server = PipelineView(
        overlap_chars=settings.overlap_chars, chunk_store=chunk.kind, lexical_index=lexical,
        vector_store=parse_vector_store(settings.vector_store, chunk, settings.data_dir).kind if dense else "none", rrf_k=settings.ranking.rrf_k,
        library_router=_name(LIBRARY_ROUTERS, settings.library_router), filter_extractor=_name(FILTER_EXTRACTORS, settings.filter_extractor),
        security_gate=bool(settings.security_denylist),
    )
    return server.with_profile(recipe)


def _resolved_embedding(embedding: str) -> str:
    """``auto`` as what it resolves to here: the packaged ONNX model when installed, else none."""
    if embedding != "auto":
        return embedding
    from ragspine.retrieval.vector.embedding_backends import onnx_available

    return "onnx" if onnx_available() else "none"


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


def _reasoning_of(transform: object, decompose: object, adaptive: object, corrective: object) -> tuple[str, ...]:
    from ragspine.registries import COMPLEXITY_CLASSIFIERS, QUERY_DECOMPOSERS, QUERY_TRANSFORMS

    parts = [
        ("transform", _name(QUERY_TRANSFORMS, transform)),
        ("decompose", _name(QUERY_DECOMPOSERS, decompose)),
        ("adaptive", _name(COMPLEXITY_CLASSIFIERS, adaptive)),
    ]
    on = [f"{what} {name}" for what, name in parts if name != "none"]
    return (*on, *(["corrective"] if corrective else []))
