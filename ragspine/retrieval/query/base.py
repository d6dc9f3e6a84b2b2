"""The query-time roles: one question in, the probes and sub-questions a search runs out.

* ``QueryRewriter.rewrite(query) -> list[str]``: the original query first, then variants,
  de-duplicated. The default is the seed's deterministic glossary expansion
  (:class:`~ragspine.retrieval.lexical.rewrite.GlossaryQueryRewriter`).
* ``QueryTransform.probes(question) -> Probes`` (``RAGSPINE_QUERY_TRANSFORM``: HyDE,
  RAG-Fusion, step-back; :mod:`~ragspine.retrieval.query.transforms`).
* ``QueryDecomposer.decompose(question) -> list[str]`` (``RAGSPINE_QUERY_DECOMPOSE``).
* ``ComplexityClassifier.classify(question) -> Complexity`` (``RAGSPINE_ADAPTIVE``).

Everything they produce is a retrieval probe only: never returned, stored or cited, and
checked by the security gate before any index sees it
(:class:`~ragspine.retrieval.reasoning.ReasoningRetriever` runs them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class QueryRewriter(Protocol):
    """Turns one query into several probes; the original query is always first."""

    def rewrite(self, query: str) -> list[str]:
        """``[query, variant, ...]``: the original first, no duplicates."""
        ...


@runtime_checkable
class QueryTransform(Protocol):
    """An LLM query transform (``RAGSPINE_QUERY_TRANSFORM``): one question in, its generated
    probes out. Never raises: a failed or unreadable model answer is no probes (the plain
    question), reported to the provider's observer."""

    #: ``hyde | rag_fusion | step_back``: the transform's name in traces and metrics.
    name: str

    def probes(self, question: str) -> Probes:
        """The generated texts (``queries``: every leg; ``dense``: the dense leg only)."""
        ...


@runtime_checkable
class QueryDecomposer(Protocol):
    """Splits a question into self-contained sub-questions (``RAGSPINE_QUERY_DECOMPOSE``).
    Never raises: ``[]`` means "search the question as it is"."""

    def decompose(self, question: str) -> list[str]:
        ...


@runtime_checkable
class ComplexityClassifier(Protocol):
    """Adaptive-RAG's router (``RAGSPINE_ADAPTIVE``): single-shot or decomposition. There is
    no "answer without retrieval" branch. Never raises."""

    def classify(self, question: str) -> Complexity:
        ...


@dataclass(frozen=True)
class Probes:
    """What a :class:`QueryTransform` generated; ``degraded``: the model failed or answered
    something unreadable, so there is nothing (the plain question is searched)."""

    queries: tuple[str, ...] = ()
    dense: tuple[str, ...] = ()
    degraded: bool = False


@dataclass(frozen=True)
class Complexity:
    """``route`` is ``single`` or ``decompose``; ``signals`` say why (``comparison``,
    ``entities``, ``periods``, ``questions``, ``llm``; ``degraded`` when the model failed)."""

    route: str
    signals: tuple[str, ...] = ()

    @property
    def decompose(self) -> bool:
        return self.route == "decompose"


def make_query_transform(spec: str = "none", **options: Any) -> QueryTransform | None:
    """The transform named ``spec`` (the caller's ``RAGSPINE_QUERY_TRANSFORM``; default ``none``, the seed's); ``None`` for ``none``.
    ``options``: ``provider=`` (required by every transform), ``fanout=``."""
    from ragspine.registries import QUERY_TRANSFORMS

    transform: QueryTransform | None = QUERY_TRANSFORMS.build(spec, **options)
    return transform


def make_query_decomposer(spec: str = "none", **options: Any) -> QueryDecomposer | None:
    """The decomposer named ``spec`` (the caller's ``RAGSPINE_QUERY_DECOMPOSE``; default ``none``, the seed's); ``None`` for ``none``."""
    from ragspine.registries import QUERY_DECOMPOSERS

    decomposer: QueryDecomposer | None = QUERY_DECOMPOSERS.build(spec, **options)
    return decomposer


def make_complexity_classifier(spec: str = "none", **options: Any) -> ComplexityClassifier | None:
    """The classifier named ``spec`` (the caller's ``RAGSPINE_ADAPTIVE``; default ``none``, the seed's); ``None`` for ``none``."""
    from ragspine.registries import COMPLEXITY_CLASSIFIERS

    classifier: ComplexityClassifier | None = COMPLEXITY_CLASSIFIERS.build(spec, **options)
    return classifier
