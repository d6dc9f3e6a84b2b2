"""Building query-time reasoning from settings: the parts of a :class:`ReasoningOptions`, and
the security gate's line of ``ragspine config`` (what :class:`~ragspine.stack.Stack` calls)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ragspine.errors import RagspineError
from ragspine.llm.base import LLMProvider
from ragspine.registries import COMPLEXITY_CLASSIFIERS
from ragspine.retrieval.query.adaptive import glossary_entities
from ragspine.retrieval.query.base import make_complexity_classifier, make_query_decomposer, make_query_transform
from ragspine.retrieval.query.decompose import QueryRewrite
from ragspine.retrieval.reasoning.options import ReasoningOptions
from ragspine.security.gate import make_security_gate

if TYPE_CHECKING:
    from ragspine.config import Settings

__all__ = ["describe_gate", "reasoning_parts", "uses_llm"]


def uses_llm(options: ReasoningOptions) -> bool:
    """Whether ``options`` call a model (the corrective rewrite uses one when configured)."""
    return options.transform != "none" or options.decompose != "none" or options.adaptive != "none" or options.corrective


def reasoning_parts(options: ReasoningOptions, settings: Settings, provider: LLMProvider | None) -> dict[str, Any]:
    """:class:`~ragspine.retrieval.reasoning.ReasoningRetriever`'s keyword arguments for
    ``options``: the transform, decomposer (Adaptive-RAG decomposes with the model), classifier
    and corrective rewrite. A part that needs a model without ``provider`` raises ``ConfigError``."""
    llm: dict[str, Any] = {"provider": provider, "max_tokens": settings.llm.max_tokens}
    entities = glossary_entities(settings.fact_glossary) if options.adaptive == "heuristic" else None  # the structured channel's
    decompose = "llm" if options.adaptive != "none" else options.decompose
    classify = llm if "llm" in COMPLEXITY_CLASSIFIERS.needs(options.adaptive) else {"entities": entities}  # what its registry line needs
    return {
        "transform": make_query_transform(options.transform, fanout=options.fanout, **llm),
        "decomposer": make_query_decomposer(decompose, fanout=options.fanout, **llm),
        "classifier": make_complexity_classifier(options.adaptive, **classify),
        "corrective": options.corrective,
        "rewrite": QueryRewrite(provider, max_tokens=settings.llm.max_tokens) if options.corrective else None,
    }


def describe_gate(path: str | None) -> str:
    """The security gate line of ``ragspine config``: its deny list, or why it cannot be read."""
    if not path:
        return "none (no RAGSPINE_SECURITY_DENYLIST)"
    try:
        gate = make_security_gate(path)
    except RagspineError as exc:
        return f"{path}: cannot be used ({exc})"
    entities = gate.entities if gate is not None else ()
    return f"{len(entities)} denied entit{'y' if len(entities) == 1 else 'ies'} from {path}: {', '.join(entities)}"
