"""``PerLibraryReasoning``'s answer: each library's trace steps and refusals tagged with it,
before the fused search's step; its own gate step left out; the corrective refusal only when
nothing is left."""

from __future__ import annotations

from ragspine.retrieval.link.narrative_link import Retrieval
from ragspine.retrieval.reasoning import CORRECTIVE_REFUSAL, ReasonedRetrieval
from ragspine.retrieval.reasoning.per_library import LibraryReasoner, merged

GATE = {"step": "gate", "query": "q", "allowed": True}
FUSED = {"step": "search", "question": "q", "filtered": False, "snippets": 1}


def _own(steps: list[str], refusal: str | None = None, refused: list[dict] | None = None) -> ReasonedRetrieval:
    return ReasonedRetrieval(trace=[GATE, *({"step": s} for s in steps)], refused=refused or [], refusal=refusal)


def test_steps_and_refusals_are_tagged_and_placed_before_the_fused_search() -> None:
    outer = ReasonedRetrieval(snippets=[{"chunk_id": "c"}], trace=[GATE, FUSED])
    runs = [("a", _own(["transform", "search"], refused=[{"kind": "variant", "entity": "X", "query": "x"}])),
            ("b", Retrieval([{"chunk_id": "d"}])), ("c", _own(["search", "grade"], refusal=CORRECTIVE_REFUSAL))]
    answer = merged(outer, runs)
    assert [(s["step"], s.get("library")) for s in answer.trace] == [
        ("gate", None), ("transform", "a"), ("search", "a"), ("search", "c"), ("grade", "c"), ("search", None)]
    assert answer.refused == [{"kind": "variant", "entity": "X", "query": "x", "library": "a"}]
    assert answer.refusal is None  # another library answered


def test_the_corrective_refusal_when_nothing_is_left() -> None:
    outer = ReasonedRetrieval(trace=[{**FUSED, "snippets": 0}])
    assert merged(outer, [("c", _own(["grade"], refusal=CORRECTIVE_REFUSAL))]).refusal == CORRECTIVE_REFUSAL
    assert merged(outer, [("b", Retrieval())]).refusal is None  # nothing found is not a refusal


def test_a_library_reasoners_answer_carries_itself_back() -> None:
    class Inner:
        def search(self, query, *, filters=None, top_k=10):
            return Retrieval([{"chunk_id": query}])

        def retrieve(self, query, *, filters=None, top_k=10):
            return self.search(query).snippets

    reasoner = LibraryReasoner("a", Inner())
    assert reasoner.retrieve("x") == [{"chunk_id": "x"}]
    answer = reasoner.search("y")
    assert answer == Retrieval([{"chunk_id": "y"}])  # the answer as the library gave it ...
    assert [(lib, r.snippets) for lib, r in answer.library_runs] == [("a", [{"chunk_id": "y"}])]  # ... carrying itself back
