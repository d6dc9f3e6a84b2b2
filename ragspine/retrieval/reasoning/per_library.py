"""Per-library query-time reasoning: one search over libraries whose reasoning differs.

A service library may keep its own reasoning (``query_transform``, ``decompose``, ``adaptive``,
``corrective``, ``query_fanout``; a request's choice first, then the library's, then the
server's). When every library of a search resolves to the same
:class:`~ragspine.retrieval.reasoning.ReasoningOptions` — one library, or libraries that agree —
the search is reasoned once around the whole exit, as ever. When they differ,
:class:`PerLibraryReasoning` runs (``Stack.retriever_for`` builds it):

1. the security gate on the question, once: refused → nothing searched, the fixed refusal;
2. the routed multi-library exit, where each library with reasoning is searched by its own
   :class:`~ragspine.retrieval.reasoning.ReasoningRetriever` (its transform, decomposition,
   Adaptive-RAG and corrective loop over that library's answer; every generated text gated),
   wrapped in a :class:`LibraryReasoner` that records its answer; the libraries' answers are
   fused by RRF as always;
3. one answer: the fused snippets, and each library's trace steps and refusals tagged with its
   ``library`` (before the fused search's own step); the corrective refusal when nothing is
   left and a library's loop refused.

Filters are dropped (when the caller allows it) once, on the fused answer — a library's
corrective loop only rewrites or refuses — so one library's unfiltered fallback never sits
next to another's matches. One LLM call budget covers the whole search.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import replace
from typing import Any

from ragspine.retrieval.filtering.filters import MetadataFilter, parse_filter
from ragspine.retrieval.link.narrative_link import DEFAULT_RETRIEVE_TOP_K, NarrativeRetriever, Retrieval
from ragspine.retrieval.reasoning.retriever import CORRECTIVE_REFUSAL, ReasonedRetrieval, ReasoningRetriever

__all__ = ["LibraryReasoner", "PerLibraryReasoning"]

_RUNS: ContextVar[list[tuple[str, Retrieval]] | None] = ContextVar("ragspine_library_runs", default=None)


@contextmanager
def _recording() -> Iterator[list[tuple[str, Retrieval]]]:
    runs: list[tuple[str, Retrieval]] = []
    token = _RUNS.set(runs)
    try:
        yield runs
    finally:
        _RUNS.reset(token)


class LibraryReasoner:
    """One library's reasoned retriever inside a multi-library exit; each answer is recorded
    for the enclosing :class:`PerLibraryReasoning` (outside one, it is just ``inner``)."""

    def __init__(self, library_id: str, inner: NarrativeRetriever) -> None:
        self.library_id = library_id
        self.inner = inner

    def retrieve(self, query: str, *, filters: Any = None, top_k: int = DEFAULT_RETRIEVE_TOP_K) -> list[dict[str, Any]]:
        return self.search(query, filters=parse_filter(filters), top_k=top_k).snippets

    def search(self, query: str, *, filters: MetadataFilter | None = None, top_k: int = DEFAULT_RETRIEVE_TOP_K) -> Retrieval:
        answer = self.inner.search(query, filters=filters, top_k=top_k)
        runs = _RUNS.get()
        if runs is not None:
            runs.append((self.library_id, answer))
        return answer


class PerLibraryReasoning:
    """See the module docstring. ``outer``: a :class:`ReasoningRetriever` with the gate and no
    reasoning of its own, around the multi-library exit whose libraries reason for themselves."""

    def __init__(self, outer: ReasoningRetriever) -> None:
        self.outer = outer

    def retrieve(self, query: str, *, filters: Any = None, top_k: int = DEFAULT_RETRIEVE_TOP_K) -> list[dict[str, Any]]:
        return self.search(query, filters=parse_filter(filters), top_k=top_k).snippets

    def search(self, query: str, *, filters: MetadataFilter | None = None, top_k: int = DEFAULT_RETRIEVE_TOP_K) -> ReasonedRetrieval:
        with _recording() as runs:
            answer = self.outer.search(query, filters=filters, top_k=top_k)
        return merged(answer, runs)


def merged(answer: ReasonedRetrieval, runs: list[tuple[str, Retrieval]]) -> ReasonedRetrieval:
    """``answer`` with each library's trace steps (its own gate step left out: the question was
    gated once, first) and refusals, tagged with the library."""
    reasoned = [(lib, run) for lib, run in runs if isinstance(run, ReasonedRetrieval)]
    steps = [{**step, "library": lib} for lib, run in reasoned for step in run.trace if step.get("step") != "gate"]
    trace = list(answer.trace)
    at = next((i for i, step in enumerate(trace) if step.get("step") == "search"), len(trace))
    trace[at:at] = steps
    refused = [*answer.refused, *({**item, "library": lib} for lib, run in reasoned for item in run.refused)]
    refusal = answer.refusal
    if refusal is None and not answer.snippets and any(run.refusal for _, run in reasoned):
        refusal = CORRECTIVE_REFUSAL
    return replace(answer, trace=trace, refused=refused, refusal=refusal)
