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
   wrapped in a :class:`LibraryReasoner` whose answer carries itself back
   (:attr:`~ragspine.retrieval.request.Answer.library_runs`: the multi-library exit gathers
   them, no state is shared); the libraries' answers are fused by RRF as always;
3. one answer: the fused snippets, and each library's trace steps and refusals tagged with its
   ``library`` (before the fused search's own step); the corrective refusal when nothing is
   left and a library's loop refused.

Filters are dropped (when the caller allows it) once, on the fused answer — a library's
corrective loop only rewrites or refuses — so one library's unfiltered fallback never sits
next to another's matches. One LLM call budget covers the whole search.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from ragspine.retrieval.link.narrative_link import NarrativeRetriever
from ragspine.retrieval.reasoning.retriever import CORRECTIVE_REFUSAL, ReasonedRetrieval, ReasoningRetriever
from ragspine.retrieval.request import Answer, RequestRetriever, SearchRequest, ask

if TYPE_CHECKING:
    from ragspine.retrieval.filtering.filters import MetadataFilter

__all__ = ["LibraryReasoner", "PerLibraryReasoning"]


class LibraryReasoner(RequestRetriever):
    """One library's reasoned retriever inside a multi-library exit: its answer carries itself
    in ``library_runs`` for the enclosing :class:`PerLibraryReasoning` (outside one, nobody
    reads it)."""

    def __init__(self, library_id: str, inner: NarrativeRetriever) -> None:
        self.library_id = library_id
        self.inner = inner

    def _answer(self, request: SearchRequest) -> Answer:
        answer = ask(self.inner, request)
        return replace(answer, library_runs=(*answer.library_runs, (self.library_id, answer)))


class PerLibraryReasoning(RequestRetriever):
    """See the module docstring. ``outer``: a :class:`ReasoningRetriever` with the gate and no
    reasoning of its own, around the multi-library exit whose libraries reason for themselves."""

    def __init__(self, outer: ReasoningRetriever) -> None:
        self.outer = outer

    def search(self, request: SearchRequest | str, *, filters: MetadataFilter | None = None, top_k: int | None = None) -> ReasonedRetrieval:
        return self._answer(SearchRequest.of(request, filters=filters, top_k=top_k))

    def _answer(self, request: SearchRequest) -> ReasonedRetrieval:
        answer = self.outer.search(request)
        return merged(answer, answer.library_runs)


def merged(answer: ReasonedRetrieval, runs: Sequence[tuple[str, Answer]]) -> ReasonedRetrieval:
    """``answer`` with each library's trace steps (its own gate step left out: the question was
    gated once, first) and refusals, tagged with the library (``library_runs`` read: none left)."""
    reasoned = [(lib, run) for lib, run in runs if run.trace is not None]
    steps = [{**step, "library": lib} for lib, run in reasoned for step in run.trace or () if step.get("step") != "gate"]
    trace = list(answer.trace)
    at = next((i for i, step in enumerate(trace) if step.get("step") == "search"), len(trace))
    trace[at:at] = steps
    refused = [*answer.refused, *({**item, "library": lib} for lib, run in reasoned for item in run.refused or ())]
    refusal = answer.refusal
    if refusal is None and not answer.snippets and any(run.refusal for _, run in reasoned):
        refusal = CORRECTIVE_REFUSAL
    return replace(answer, trace=trace, refused=refused, refusal=refusal, library_runs=())
