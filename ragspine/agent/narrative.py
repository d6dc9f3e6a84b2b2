"""The agent's narrative path: cited snippets, extractive without a model, checked prose with one.

The question (never the history) is searched through a
:class:`~ragspine.retrieval.link.narrative_link.NarrativeRetriever` — the link exit, which
drops RESTRICTED chunks and their parent/window text before a snippet exists; this path drops
any RESTRICTED snippet again (a retriever is a seam), so neither can reach an answer or a
prompt. The kept snippets get ids ``S1``, ``S2``, ... in rank order.

* **No model**: the answer is the snippets themselves, each under its id (``extractive``):
  nothing is generated.
* **A model**: one call with the snippets (their ``prompt_text`` when the chunker gave one)
  and the conversation history, marked as context that is not a source. The prose is checked
  sentence by sentence (:func:`check_prose`): a sentence may state a number — digits of any
  script, CJK numerals, numbers in words (:mod:`ragspine.numerals`) — only if a snippet the
  sentence itself cites states the same value with the same unit in the same role (a year is
  not an amount, a page number is not a value); beside a found fact (a composite answer) a
  sentence may not restate, change or extend the fact's number. Any other sentence is dropped
  and counted (``dropped``, and the ``narrative_number`` seam of the LLM metrics). What is
  left is shown (``generated``) when it cites at least one id and every id it cites is one of
  this answer's snippets; otherwise the prose is refused with a fixed message and no citation
  (``refused``) — so a number the model took from the history, or invented, never reaches an
  answer. A failed call is refused the same way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Sequence

from ragspine.agent.base import CITATION_REFUSED, EMPTY, EXTRACTIVE, GATE_REFUSED, GENERATED, Citation, NarrativePart
from ragspine.agent.messages import CITATION_REFUSAL, NO_PASSAGE, SEARCH_REFUSAL, message
from ragspine.llm.base import LLMProvider
from ragspine.llm.observe import report_malformed
from ragspine.numerals import Number, find_numbers
from ragspine.retrieval.link.narrative_link import NarrativeRetriever
from ragspine.retrieval.request import RequestRetriever, SearchRequest
from ragspine.retrieval.sensitivity import is_restricted
from ragspine.retrieval.snippet import Snippet
from ragspine.security.principals import Viewer
from ragspine.structured.periods import fold

GENERATION_PROMPT = """Answer the question using only the numbered passages below.
Cite every sentence with the id of the passage it comes from, in square brackets, e.g. [S1].
State a number only if a passage you cite states it. If the passages do not answer, say so.
The conversation so far is context to understand the question: it is not a source. Never cite it and
never take a fact or a number from it.

Passages:
{passages}

Conversation so far (context only, not a source):
{history}

Question: {question}"""
CITATION = re.compile(r"\[([^\[\]]{1,60})\]")
MAX_HISTORY_TURNS = 8
MAX_TURN_CHARS = 2000


class NarrativePath:
    """``retriever``: the link exit over the libraries searched; ``provider``: ``None`` for
    extractive answers."""

    def __init__(self, retriever: NarrativeRetriever | None, *, provider: LLMProvider | None = None, top_k: int = 3) -> None:
        self.retriever = retriever
        self.provider = provider
        self.top_k = top_k

    def answer(self, question: str, language: str, history: Sequence[Any] = (), *, beside: Beside | None = None,
               viewer: Viewer | None = None) -> NarrativePart:
        """The cited snippets (or checked prose) for ``question``; ``beside``: the found fact this
        narrative half is shown next to (its number may not be restated, changed or extended);
        ``viewer``: whom the search runs for (``None``: the retriever's default, a caller who is
        no principal; a retriever that is no :class:`RequestRetriever` is asked as before)."""
        if self.retriever is None:
            return NarrativePart(EMPTY, message(NO_PASSAGE, language))
        if viewer is not None and isinstance(self.retriever, RequestRetriever):
            found = self.retriever.search(SearchRequest(question, top_k=self.top_k, viewer=viewer))
        else:
            found = self.retriever.search(question, top_k=self.top_k)
        if found.refusal:  # the retriever's own gate or corrective loop refused
            return NarrativePart(GATE_REFUSED, message(SEARCH_REFUSAL, language))
        snippets = [s for s in found.snippets if not is_restricted(s.get("sensitivity"))]
        citations = tuple(_citation(f"S{i}", s) for i, s in enumerate(snippets, 1))
        if not citations:
            return NarrativePart(EMPTY, message(NO_PASSAGE, language))
        if self.provider is None:
            return NarrativePart(EXTRACTIVE, "\n".join(f"[{c.id}] {' '.join(c.text.split())}" for c in citations), citations)
        prompt_texts = {c.id: s.get("prompt_text") or c.text for c, s in zip(citations, snippets, strict=False)}
        return self._generate(question, language, history, citations, prompt_texts, beside)

    def _generate(self, question: str, language: str, history: Sequence[Any], citations: tuple[Citation, ...],
                  prompt_texts: dict[str, str], beside: Beside | None) -> NarrativePart:
        assert self.provider is not None
        prompt = GENERATION_PROMPT.format(
            passages="\n\n".join(f"[{c.id}] {prompt_texts[c.id]}" for c in citations),
            history=history_text(history) or "(none)", question=question,
        )
        try:
            prose = str(self.provider.chat([{"role": "user", "content": prompt}]))
        except Exception:  # a failed call or a spent budget: no prose, and no guess either
            return NarrativePart(CITATION_REFUSED, message(CITATION_REFUSAL, language))
        checked = check_prose(prose, {c.id: prompt_texts[c.id] + "\n" + c.text for c in citations}, beside)
        if checked is None:
            return NarrativePart(CITATION_REFUSED, message(CITATION_REFUSAL, language))
        for sentence in checked.dropped:
            report_malformed(self.provider, "narrative_number", sentence)
        if not checked.cited:
            return NarrativePart(CITATION_REFUSED, message(CITATION_REFUSAL, language), dropped=len(checked.dropped))
        return NarrativePart(GENERATED, checked.text, tuple(c for c in citations if c.id in checked.cited),
                             dropped=len(checked.dropped))


@dataclass(frozen=True)
class Beside:
    """The found fact a narrative half is shown next to: its value (as stored, e.g. ``182``)
    and the folded forms of its metric (a sentence naming the metric with an amount extends it)."""

    value: str
    metric_forms: tuple[str, ...] = ()


@dataclass(frozen=True)
class CheckedProse:
    """What :func:`check_prose` kept: the ``text`` of the kept sentences, the ids they cite,
    and the ``dropped`` sentences."""

    text: str
    cited: frozenset[str]
    dropped: tuple[str, ...]


_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|(?<=[。！？])|\n+")
_SCALES = tuple(Decimal(10) ** k for k in (0, 3, 4, 6, 7, 8, 9, 12))


def sentences(prose: str) -> list[str]:
    """``prose`` cut into sentences; citation marks that open a piece (``... fell. [S1] Then``)
    stay with the sentence before them."""
    pieces = [p for p in _SENTENCE_END.split(prose.strip()) if p and p.strip()]
    out: list[str] = []
    for piece in pieces:
        lead = re.match(r"^(\s*(?:\[[^\[\]]{1,60}\]\s*)+)(.*)$", piece, re.S)
        if lead and out:
            joint = "" if out[-1][-1:] in "。！？" else " "
            out[-1] = out[-1] + joint + lead.group(1).strip()
            piece = lead.group(2)
        if piece.strip():
            out.append(piece.strip())
    return out


def check_prose(prose: str, texts: dict[str, str], beside: Beside | None = None) -> CheckedProse | None:
    """``None`` when ``prose`` cites an id that is not a key of ``texts``, or its kept sentences
    cite none; else the sentences kept (see the module docstring) and the ones dropped."""
    for mark in CITATION.findall(prose):
        ids = [part.strip() for part in re.split(r"[,;，、]", mark) if part.strip()]
        if not ids or any(i not in texts for i in ids):
            return None
    held_by = {i: find_numbers(t) for i, t in texts.items()}
    kept: list[str] = []
    dropped: list[str] = []
    cited: set[str] = set()
    for sentence in sentences(prose):
        own = {part.strip() for mark in CITATION.findall(sentence) for part in re.split(r"[,;，、]", mark) if part.strip()}
        stated = find_numbers(CITATION.sub(" ", sentence))
        held = [n for i in own for n in held_by[i]]
        if stated and not all(any(_same(n, h) for h in held) for n in stated):
            dropped.append(sentence)
        elif beside is not None and _touches(sentence, stated, beside):
            dropped.append(sentence)
        else:
            kept.append(sentence)
            cited |= own
    if not cited and not dropped:
        return None
    return CheckedProse(_joined(kept), frozenset(cited), tuple(dropped))


_CJK_END = re.compile(r"[。！？](?:\[[^\[\]]{1,60}\])*$")


def _joined(kept: list[str]) -> str:
    """The kept sentences as prose: after a CJK sentence end no space, else one."""
    out = ""
    for sentence in kept:
        out += ("" if not out or _CJK_END.search(out) else " ") + sentence
    return out


def check_citations(prose: str, texts: dict[str, str]) -> set[str] | None:
    """The ids ``prose`` cites when every sentence passes :func:`check_prose` (none dropped);
    else ``None``."""
    checked = check_prose(prose, texts)
    return None if checked is None or checked.dropped else set(checked.cited)


def _same(stated: Number, held: Number) -> bool:
    return stated.value == held.value and stated.role == held.role and stated.unit in ("", held.unit)


def _touches(sentence: str, stated: list[Number], beside: Beside) -> bool:
    """Whether ``sentence`` restates the fact's number, or names its metric with an amount."""
    try:
        value = Decimal(beside.value)
    except ArithmeticError:
        return False
    amounts = [n for n in stated if n.role == "amount"]
    if any(n.value == value * scale for n in amounts for scale in _SCALES):
        return True
    folded = fold(CITATION.sub(" ", sentence))
    return bool(amounts) and any(form and form in folded for form in beside.metric_forms)


def history_text(history: Sequence[Any]) -> str:
    """The last turns as ``role: text`` lines (a turn is ``{"role", "content"}`` or a string)."""
    lines = []
    for turn in list(history)[-MAX_HISTORY_TURNS:]:
        if isinstance(turn, dict):
            role, content = str(turn.get("role", "user")), str(turn.get("content", ""))
        else:
            role, content = "user", str(turn)
        lines.append(f"{role}: {' '.join(content.split())[:MAX_TURN_CHARS]}")
    return "\n".join(lines)


def _citation(cid: str, snippet: Snippet) -> Citation:
    return Citation(cid, str(snippet.get("chunk_id", "")), str(snippet.get("doc_id", "")), str(snippet.get("title", "")),
                    str(snippet.get("library_id", "")), str(snippet.get("source_locator", "")), str(snippet.get("text", "")))
