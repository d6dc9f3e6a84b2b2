"""The agent's roles and answer types: what ``Agent.answer`` returns, and the seams it takes.

Roles (Protocols, structural):

* :class:`QueryGate` — ``check(text) -> decision`` with ``decision.allowed`` and
  ``decision.entity``: the deterministic security gate every sub-query passes
  (``ragspine.security.SecurityGate`` has this shape);
* :class:`AgentRouter` — ``route(reading) -> (route, why)``: structured, narrative or composite.

An :class:`AgentAnswer` is one question's answer::

    route        structured | narrative | composite
    text         what to show: the structured channel's text, the narrative text, or both
                 (structured first); or the fixed refusal when the gate refused the question
    structured   StructuredPart: the MetricResult (found / not_found / unrecognized_param)
                 and the library of a found fact
    narrative    NarrativePart: extractive (the cited snippets themselves), generated (prose
                 citing snippet ids that exist), refused (citations that did not resolve) or
                 empty (no passage), with its citations
    sources      the merged source list: the found fact (kind "fact"), then every cited
                 chunk (kind "chunk") — never a history turn
    refused      the texts the gate refused: {kind, entity}
    routing      how the route was chosen: router, why, the slots read from the question
    visual_hints the visual seam's page hints (is_visual, a page reference): only when the seam
                 is on; never a source, never cited

A number in ``text`` is either the stored fact's (``structured``) or inside a cited snippet's
text (``narrative``): the conversation history is never a source.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ragspine.structured.result import MetricResult

if TYPE_CHECKING:
    from ragspine.agent.reading import Reading

STRUCTURED, NARRATIVE, COMPOSITE = "structured", "narrative", "composite"
ROUTES = (STRUCTURED, NARRATIVE, COMPOSITE)
EXTRACTIVE, GENERATED, CITATION_REFUSED, EMPTY, GATE_REFUSED = "extractive", "generated", "refused", "empty", "gate_refused"


class GateDecision(Protocol):
    @property
    def allowed(self) -> bool: ...

    @property
    def entity(self) -> str | None: ...


@runtime_checkable
class QueryGate(Protocol):
    """A deterministic allow/refuse decision on one query text (no model, no I/O)."""

    def check(self, text: str) -> GateDecision: ...


@runtime_checkable
class AgentRouter(Protocol):
    """Chooses the route of a read question; ``why`` says on what (for the answer's ``routing``)."""

    name: str

    def route(self, reading: Reading) -> tuple[str, str]: ...


@dataclass(frozen=True)
class Citation:
    """A cited snippet: its id in this answer (``S1``...) and its provenance."""

    id: str
    chunk_id: str
    doc_id: str
    title: str
    library_id: str
    source_locator: str
    text: str

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "chunk", "id": self.id, "chunk_id": self.chunk_id, "doc_id": self.doc_id, "title": self.title,
                "library_id": self.library_id, "source_locator": self.source_locator, "text": self.text}


@dataclass(frozen=True)
class StructuredPart:
    result: MetricResult
    library_id: str = ""  # of a found fact

    def source(self) -> dict[str, Any] | None:
        r = self.result
        if not r.found:
            return None
        return {"kind": "fact", "library_id": self.library_id, "metric": r.metric, "entity": r.entity, "period": r.period,
                "channel": r.channel, "value": r.value, "unit": r.unit, "source_doc_id": r.source_doc_id,
                "source_locator": r.source_locator, "valid_as_of": r.valid_as_of}

    def to_dict(self) -> dict[str, Any]:
        return {**self.result.to_dict(), "library_id": self.library_id}


@dataclass(frozen=True)
class NarrativePart:
    mode: str  # extractive | generated | refused | empty | gate_refused
    text: str
    citations: tuple[Citation, ...] = ()
    dropped: int = 0  # generated sentences dropped for a number their cited snippets do not state

    def to_dict(self) -> dict[str, Any]:
        return {"mode": self.mode, "text": self.text, "citations": [c.to_dict() for c in self.citations],
                "dropped_sentences": self.dropped}


@dataclass(frozen=True)
class AgentAnswer:
    question: str
    route: str
    text: str
    language: str = "en"
    structured: StructuredPart | None = None
    narrative: NarrativePart | None = None
    refusal: str | None = None
    refused: tuple[dict[str, Any], ...] = ()
    routing: dict[str, Any] = field(default_factory=dict)
    #: the visual seam's page hints (``VisualHint.to_dict``), beside the sources and never among them;
    #: ``None`` when the seam is off (RAGSPINE_VISUAL_EMBEDDER=none): then no ``visual_hints`` key at all
    visual_hints: tuple[dict[str, Any], ...] | None = None

    @property
    def sources(self) -> list[dict[str, Any]]:
        """The found fact, then every cited chunk (see the module docstring)."""
        fact = self.structured.source() if self.structured is not None else None
        chunks = [c.to_dict() for c in self.narrative.citations] if self.narrative is not None else []
        return ([fact] if fact else []) + chunks

    def to_dict(self) -> dict[str, Any]:
        out = {
            "question": self.question, "route": self.route, "text": self.text, "language": self.language,
            "structured": self.structured.to_dict() if self.structured is not None else None,
            "narrative": self.narrative.to_dict() if self.narrative is not None else None,
            "sources": self.sources, "refusal": self.refusal, "refused": list(self.refused), "routing": dict(self.routing),
        }
        if self.visual_hints is not None:
            out["visual_hints"] = [dict(h) for h in self.visual_hints]
        return out
