"""A request's generated probes: what a query transform adds to one question's search.

:class:`~ragspine.retrieval.reasoning.ReasoningRetriever` asks the configured transform once
per question, passes every generated text through the security gate, and runs the question's
search inside :func:`request_probes`. Every :class:`~ragspine.retrieval.pipeline.LibraryPipeline`
searching that question in this context then adds them to the question's own variants
(:func:`with_probes`): RAG-Fusion's variants and the step-back query run every leg, like the
glossary's variants, and HyDE's passage runs the dense leg only — the lexical leg in its place
where there is none (economy mode) or the dense gate cannot read it (:func:`dense_only`).
Everything is fused by the pipeline's one RRF, reranked against the question itself.

A probe's rankings count :data:`PROBE_WEIGHT` in that RRF (:func:`probe_weight`), the
question's own (and its glossary variants') 1: a document that only a generated text ranks
first scores below the question's own first, instead of tying it (with equal weights a poor
step-back query's first document won half those ties). A probe still reorders the question's
near-ties — that is what it is for, and why a poor one costs quality (``docs/benchmarks.md``, *Query transforms*).

A probe is only ever a query: it is never returned, stored or cited. Outside a
:func:`request_probes` block (the default path) nothing changes.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

__all__ = ["PROBE_WEIGHT", "ProbePlan", "current_probes", "dense_only", "probe_weight", "request_probes", "with_probes"]

#: The RRF weight of a generated probe's rankings (the question's own weigh 1).
PROBE_WEIGHT = 0.5


@dataclass(frozen=True)
class ProbePlan:
    """The generated probes of one question: ``queries`` run every leg, ``dense`` (HyDE
    passages) the dense leg only."""

    question: str
    queries: tuple[str, ...] = ()
    dense: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.queries and not self.dense


_PLAN: ContextVar[ProbePlan | None] = ContextVar("ragspine_probe_plan", default=None)


@contextmanager
def request_probes(plan: ProbePlan | None) -> Iterator[None]:
    """Within the block, searches of ``plan.question`` run its probes too."""
    token = _PLAN.set(plan if plan is not None and not plan.empty else None)
    try:
        yield
    finally:
        _PLAN.reset(token)


def current_probes(question: str) -> ProbePlan | None:
    """The plan of ``question`` in this context (``None``: none, or another question's)."""
    plan = _PLAN.get()
    return plan if plan is not None and plan.question == question else None


def with_probes(question: str, variants: list[str]) -> list[str]:
    """``variants`` (the question first) and then the question's generated probes, each once."""
    plan = current_probes(question)
    if plan is None:
        return variants
    return list(dict.fromkeys([*variants, *plan.queries, *plan.dense]))


def dense_only(text: str) -> bool:
    """Whether ``text`` is a dense-leg probe (a HyDE passage) of the current plan."""
    plan = _PLAN.get()
    return plan is not None and text in plan.dense and text not in plan.queries and text != plan.question


def probe_weight(text: str) -> float:
    """:data:`PROBE_WEIGHT` for a generated probe of the current plan, else 1."""
    plan = _PLAN.get()
    if plan is None or text == plan.question or (text not in plan.queries and text not in plan.dense):
        return 1.0
    return PROBE_WEIGHT
