"""Deliberately leaky agents, routers and retrievers: each must fail one check of the agent's
pack (the inverse cases of ``test_agent.py``)."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field, replace
from typing import Any, Sequence

from ragspine.agent import Agent, NarrativePart, NarrativePath, StructuredPart
from ragspine.agent.narrative import _citation, history_text
from ragspine.retrieval.link.narrative_link import Retrieval, to_snippet
from ragspine.retrieval.types import RetrievalResult
from ragspine.structured.result import FOUND, MetricResult


class InventingAgent(Agent):
    """Fills a failed lookup with an estimate (what the text-to-SQL chains do)."""

    def answer(self, question: str, history: Any = None, **kw: Any) -> Any:
        answer = super().answer(question, history, **kw)
        if answer.structured is not None and not answer.structured.result.found:
            return replace(answer, text=answer.text + " It was probably about １８０ million euros.")
        return answer


class NarrativePromotingAgent(Agent):
    """Answers a failed lookup with the first number a snippet states, as if it were a fact."""

    def answer(self, question: str, history: Any = None, **kw: Any) -> Any:
        answer = super().answer(question, history, **kw)
        part = answer.structured
        if part is None or part.result.found:
            return answer
        snippets = self.narrative.retriever.search(question, top_k=5).snippets if self.narrative.retriever else []
        for s in snippets:
            number = re.search(r"\d+(?:\.\d+)?", s["text"])
            if number:
                result = MetricResult(FOUND, f"{s['text'][:80]} (source: {s['doc_id']})", value=number.group(0),
                                      source_doc_id=s["doc_id"], source_locator=s["source_locator"], valid_as_of="2024-10-30")
                return replace(answer, structured=StructuredPart(result, s["library_id"]), text=result.text)
        return answer


class MisattributingAgent(Agent):
    """Cites the right number from the wrong place."""

    def answer(self, question: str, history: Any = None, **kw: Any) -> Any:
        answer = super().answer(question, history, **kw)
        part = answer.structured
        if part is not None and part.result.found:
            return replace(answer, structured=replace(part, result=replace(part.result, source_locator="p. 99, table 9")))
        return answer


class HistoryEvidenceAgent(Agent):
    """Takes what the user said earlier as a source."""

    def answer(self, question: str, history: Any = None, **kw: Any) -> Any:
        answer = super().answer(question, history, **kw)
        if history:
            return replace(answer, text=answer.text + "\n\nAs you said earlier: " + history_text(history))
        return answer


class UngatedAgent(Agent):
    """Never asks the gate."""

    def _gate(self, kind: str, text: str) -> dict[str, Any] | None:
        return None


@dataclass
class CyclingRouter:
    """A router that changes its mind."""

    name: str = "cycling"
    routes: Any = field(default_factory=lambda: itertools.cycle(["structured", "narrative", "composite"]))

    def route(self, reading: Any) -> tuple[str, str]:
        return next(self.routes), "whatever comes next"


class TrustingNarrativePath(NarrativePath):
    """Shows (and prompts with) whatever the retriever returns, RESTRICTED included."""

    def answer(self, question: str, language: str, history: Sequence[Any] = (), **kw: Any) -> NarrativePart:
        assert self.retriever is not None
        snippets = self.retriever.search(question, top_k=self.top_k).snippets
        citations = tuple(_citation(f"S{i}", s) for i, s in enumerate(snippets, 1))
        if self.provider is not None:
            self.provider.chat([{"role": "user", "content": "\n".join(c.text for c in citations)}])
        return NarrativePart("extractive", "\n".join(f"[{c.id}] {c.text}" for c in citations), citations)


@dataclass
class ExposedRetriever:
    """The link exit plus every stored chunk of the library, RESTRICTED ones included (what a
    retriever reading the store directly would return)."""

    inner: Any
    store: Any
    library_id: str

    def search(self, query: str, *, filters: Any = None, top_k: int = 50) -> Retrieval:
        leaked = [to_snippet(RetrievalResult(c, {"fused": 1.0}, library_id=self.library_id)) for c in self.store.iter_chunks()]
        return Retrieval((leaked + self.inner.search(query, top_k=top_k).snippets)[:top_k])

    def retrieve(self, query: str, *, filters: Any = None, top_k: int = 50) -> list[dict[str, Any]]:
        return self.search(query, top_k=top_k).snippets
