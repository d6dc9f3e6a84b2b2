"""What ``ragspine config`` prints: the stack ``settings`` resolve to, as ``(role, value)`` rows,
without connecting (:func:`describe_stack`)."""

from __future__ import annotations

from ragspine.config import Settings
from ragspine.llm.base import describe_llm
from ragspine.profile import Profile, named_profile
from ragspine.registries import CHUNK_STORES
from ragspine.retrieval.mode import RetrievalMode, make_retrieval_mode
from ragspine.retrieval.raptor.base import describe_raptor
from ragspine.retrieval.reasoning.build import describe_gate
from ragspine.stores.registry import parse_chunk_store, parse_embedding_cache, parse_vector_store


def describe_reranker(settings: Settings) -> str:
    """The reranker line of ``ragspine config``: what model it runs, and at what depth."""
    ranking = settings.ranking
    name, depth = ranking.reranker, f"depth {ranking.rerank_depth}"
    if name == "colbert":
        model = ranking.colbert_dir or "the packaged all-MiniLM-L6-v2's token states (not a trained ColBERT model)"
        return f"colbert: MaxSim over {model}, {depth}"
    if name in ("cross_encoder", "auto"):
        if not ranking.cross_encoder_dir:
            return "none (auto: no RAGSPINE_CROSS_ENCODER_DIR)" if name == "auto" else "cross_encoder: RAGSPINE_CROSS_ENCODER_DIR is not set (refused)"
        return f"cross_encoder: {ranking.cross_encoder_dir}, {depth}"
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
    return f"{name}, overridden: " + ", ".join(f"{choice}={asked!r}" for choice, (asked, _) in overrides.items())


def describe_stack(settings: Settings, mode: RetrievalMode | str | None = None) -> list[tuple[str, str]]:
    """The stack ``settings`` resolve to, as ``(role, value)`` rows — without connecting. The
    recipe rows (chunker, header, ranking, reasoning) are read from the :class:`Profile` the
    settings resolve to, the one a pipeline is built from."""
    recipe = Profile.from_settings(settings)
    resolved = make_retrieval_mode(mode if mode is not None else recipe.mode)
    chunk = parse_chunk_store(settings.chunk_store, settings.data_dir)
    vector = parse_vector_store(settings.vector_store, chunk, settings.data_dir)
    cache = parse_embedding_cache(settings.embedding_cache, chunk, settings.data_dir)
    off = "none (economy mode)"
    uses = resolved.uses_embeddings
    lexical = settings.lexical_index
    if lexical == "auto":
        lexical = "auto ({}: {})".format(*CHUNK_STORES.load(chunk.kind).auto_lexical_index(settings))
    embedding, mode_name = recipe.embedding, resolved.name
    if embedding == "auto":
        from ragspine.retrieval.vector.embedding_backends import onnx_available

        has_onnx = onnx_available()
        embedding = "auto (onnx)" if has_onnx else "auto (none: the [embed-onnx] extra is not installed)"
    if mode_name == "auto":
        has_backend = recipe.embedding != "none" and (recipe.embedding != "auto" or "(onnx)" in embedding)
        mode_name = "auto (hybrid)" if has_backend else "auto (economy: no embedding backend)"
    ranking = recipe.ranking
    packing = ", each unit its own chunk" if recipe.chunk_packing == "unit" else ""
    return [
        ("profile", describe_profile(settings, mode)),
        ("chunk store", chunk.describe()),
        ("vector store", vector.describe() if uses else off),
        ("embedding cache", cache.describe() if uses else off),
        ("embedding", embedding if uses else off),
        ("retrieval mode", mode_name),
        ("lexical index", lexical),
        ("chunker", f"{recipe.chunker} ({recipe.chunk_chars:,} characters{packing})"),
        ("contextual header", "title · entity · period · heading on the index text" if recipe.contextual == "header" else "none"),
        ("reranker", describe_reranker(settings)),
        ("postprocessor", ranking.postprocessor),
        ("fusion", "z-score fusion (each leg's z-scored scores, weighted by its best hit's z-score)" if ranking.fusion_weights == "zscore"
         else f"RRF k={settings.ranking.rrf_k}, weights {ranking.fusion_weights or 'none (every leg 1)'}"),
        ("library router", settings.library_router),
        ("filter extractor", settings.filter_extractor),
        ("llm", describe_llm(settings)),
        *recipe.reasoning.describe(),
        ("raptor", describe_raptor(settings, uses)),
        ("security gate", describe_gate(settings.security_denylist)),
    ]
