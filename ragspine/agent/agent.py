"""``Agent.answer(question, history=None)``: structured, narrative or composite, with sources.

One answer, left to right (one request of the LLM call budget, every call included):

1. **Gate** the question (:class:`~ragspine.agent.base.QueryGate`): refused → the fixed
   refusal, route ``refused``; nothing is read, routed, looked up or sent to a model.
2. **Read** it (:func:`~ragspine.agent.reading.read_question`: glossary slots, shape,
   language) and **route** it (:mod:`~ragspine.agent.router`).
3. **Structured** (structured, composite): the slots → one sub-query, gated, then
   :class:`~ragspine.agent.structured.StructuredPath` → found / not_found /
   unrecognized_param. The numbers come from the fact table only: the narrative path, the
   history and a model never reach it.
4. **Narrative** (narrative, composite): the question less its clauses asking for a quantity
   (:func:`~ragspine.agent.reading.narrative_query`) → one sub-query, gated, then
   :class:`~ragspine.agent.narrative.NarrativePath` → cited snippets (extractive) or checked
   prose (with a model). The history reaches the generation prompt only.
5. **Merge** (composite): the structured text, then the narrative text; the fact source, then
   the cited chunks (:attr:`~ragspine.agent.base.AgentAnswer.sources`).

The two paths run separately: a snippet that states a number never answers a metric question,
and the structured answer never depends on what the narrative path found.
"""

from __future__ import annotations

from datetime import date
from typing import Any, Sequence

from ragspine.agent.base import (
    COMPOSITE,
    NARRATIVE,
    STRUCTURED,
    AgentAnswer,
    AgentRouter,
    NarrativePart,
    QueryGate,
    StructuredPart,
)
from ragspine.agent.messages import GATE_REFUSAL, NO_FACT_MATCH, message
from ragspine.agent.narrative import Beside, NarrativePath
from ragspine.agent.reading import narrative_query, question_language, read_question
from ragspine.agent.router import DeterministicRouter
from ragspine.agent.spotting import TermSpotter, load_fact_glossary
from ragspine.agent.structured import StructuredPath
from ragspine.errors import QuestionError
from ragspine.llm.budget import llm_request
from ragspine.security.principals import Viewer
from ragspine.structured.glossary import Glossary
from ragspine.structured.periods import fold, parse_as_of

REFUSED = "refused"  # the route of a question the gate refused (no route was chosen)
MAX_QUESTION_CHARS = 4000
MAX_HISTORY = 50


class Agent:
    """See the module docstring. ``structured`` / ``narrative``: the two paths (``None``: that
    path answers nothing — not_found / no passage); ``gate``: the security gate every sub-query
    passes (``None``: no deny list); ``router``: default deterministic."""

    def __init__(
        self,
        *,
        structured: StructuredPath | None = None,
        narrative: NarrativePath | None = None,
        glossary: Glossary | None = None,
        gate: QueryGate | None = None,
        router: AgentRouter | None = None,
    ) -> None:
        self.structured = structured if structured is not None else StructuredPath({})
        self.narrative = narrative if narrative is not None else NarrativePath(None)
        self.glossary = glossary if glossary is not None else load_fact_glossary()
        self.spotter = spotter_for(self.glossary)
        self.gate = gate
        self.router: AgentRouter = router if router is not None else DeterministicRouter()

    def answer(self, question: str, history: Sequence[Any] | None = None, *, as_of: date | str | None = None,
               viewer: Viewer | None = None) -> AgentAnswer:
        """The answer to ``question`` (see the module docstring). ``history``: earlier turns
        (``{"role", "content"}`` or strings), generation context only; ``as_of``: the date a
        relative period or a bare quarter counts from (``YYYY-MM-DD``); ``viewer``: whom both
        paths answer for — the narrative search reads only the documents it may, a fact read
        from a document it may not is not found (``None``: as the paths do without one)."""
        question, turns, day = _checked(question, history, as_of)
        language = question_language(question)
        with llm_request():
            refused = self._gate("question", question)
            if refused is not None:
                return AgentAnswer(question, REFUSED, message(GATE_REFUSAL, language), language,
                                   refusal=message(GATE_REFUSAL, language), refused=(refused,))
            reading = read_question(question, self.spotter, as_of=day)
            route, why = self.router.route(reading)
            refusals: list[dict[str, Any]] = []
            structured = narrative = None
            texts: list[str] = []
            if route in (STRUCTURED, COMPOSITE):
                gated = self._gate("structured", self.structured.query_text(reading))
                if gated is None:
                    structured = self.structured.answer(reading, as_of=day, viewer=viewer)
                    texts.append(structured.result.text)
                else:
                    refusals.append(gated)
                    texts.append(message(GATE_REFUSAL, language))
            if route in (NARRATIVE, COMPOSITE):
                sub_query = narrative_query(question)
                gated = self._gate("narrative", sub_query)
                if gated is None:
                    beside = self._beside(structured)
                    narrative = self.narrative.answer(sub_query, language, turns, beside=beside, viewer=viewer)
                    if route == NARRATIVE and reading.asks_number:
                        texts.append(message(NO_FACT_MATCH, language))
                    texts.append(narrative.text)
                else:
                    refusals.append(gated)
                    texts.append(message(GATE_REFUSAL, language))
        return AgentAnswer(
            question, route, "\n\n".join(texts), language, structured, narrative,
            refused=tuple(refusals), routing={"router": self.router.name, "why": why, "slots": reading.slots},
        )

    def _beside(self, structured: StructuredPart | None) -> Beside | None:
        """The found fact a composite answer's narrative half stands next to."""
        if structured is None or not structured.result.found:
            return None
        term = self.glossary.term("metrics", structured.result.metric)
        forms = tuple(dict.fromkeys(fold(f) for f in term.forms)) if term is not None else ()
        return Beside(structured.result.value, forms)

    def _gate(self, kind: str, text: str) -> dict[str, Any] | None:
        """``None`` when ``text`` may be looked up, else what the answer lists as refused."""
        if self.gate is None:
            return None
        decision = self.gate.check(text)
        return None if decision.allowed else {"kind": kind, "entity": decision.entity}


_SPOTTERS: dict[int, tuple[Glossary, TermSpotter]] = {}


def spotter_for(glossary: Glossary) -> TermSpotter:
    """One :class:`TermSpotter` per glossary object (its forms compile once; a few are kept)."""
    held = _SPOTTERS.get(id(glossary))
    if held is None or held[0] is not glossary:
        if len(_SPOTTERS) >= 8:
            _SPOTTERS.clear()
        held = _SPOTTERS[id(glossary)] = (glossary, TermSpotter(glossary))
    return held[1]


def _checked(question: object, history: object, as_of: object) -> tuple[str, list[Any], date | None]:
    if not isinstance(question, str) or not question.strip():
        raise QuestionError("the question is empty: ask something, e.g. ragspine ask \"What was Kestrel's revenue in Q3 2024?\"")
    if len(question) > MAX_QUESTION_CHARS or "\x00" in question:
        raise QuestionError(f"the question must be at most {MAX_QUESTION_CHARS} characters without NUL; shorten it")
    turns = list(history) if isinstance(history, (list, tuple)) else [] if history is None else None
    if turns is None or len(turns) > MAX_HISTORY or not all(_is_turn(t) for t in turns):
        raise QuestionError(f"history must be a list of at most {MAX_HISTORY} turns, each a string or {{\"role\", \"content\"}}")
    try:
        day = parse_as_of(as_of) if as_of is not None else None
    except ValueError:
        raise QuestionError("as_of must be an ISO date (YYYY-MM-DD)") from None
    return question.strip(), turns, day


def _is_turn(turn: object) -> bool:
    if isinstance(turn, str):
        return True
    return isinstance(turn, dict) and isinstance(turn.get("content"), str) and isinstance(turn.get("role", "user"), str)


# re-exported for callers building answers by hand (tests, leaky doubles)
__all__ = ["MAX_QUESTION_CHARS", "REFUSED", "Agent", "AgentAnswer", "NarrativePart", "StructuredPart"]
