"""The agent's narrative path: cited snippets, extractive without a model, checked prose with one.

The question (never the history) is searched through a
:class:`~ragspine.retrieval.link.narrative_link.NarrativeRetriever` — the link exit, which
drops RESTRICTED chunks and their parent/window text before a snippet exists; this path drops
any RESTRICTED snippet again (a retriever is a seam), so neither can reach an answer or a
prompt. The kept snippets get ids ``S1``, ``S2``, ... in rank order.

* **No model**: the answer is the snippets themselves, each under its id (``extractive``):
  nothing is generated.
* **A model**: one call with the snippets (their ``prompt_text`` when the chunker gave one)
  and the conversation history, marked as context that is not a source. The prose is shown
  (``generated``) only if it cites at least one id, every id it cites is one of this answer's
  snippets, and every number it states occurs in a snippet it cites; otherwise it is refused
  with a fixed message and no citation (``refused``) — so a number the model took from the
  history, or invented, never reaches an answer. A failed call is refused the same way.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

from ragspine.agent.base import CITATION_REFUSED, EMPTY, EXTRACTIVE, GATE_REFUSED, GENERATED, Citation, NarrativePart
from ragspine.agent.messages import CITATION_REFUSAL, NO_PASSAGE, SEARCH_REFUSAL, message
from ragspine.llm.base import LLMProvider
from ragspine.retrieval.link.narrative_link import NarrativeRetriever
from ragspine.retrieval.sensitivity import is_restricted

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
NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
MAX_HISTORY_TURNS = 8
MAX_TURN_CHARS = 2000


class NarrativePath:
    """``retriever``: the link exit over the libraries searched; ``provider``: ``None`` for
    extractive answers."""

    def __init__(self, retriever: NarrativeRetriever | None, *, provider: LLMProvider | None = None, top_k: int = 3) -> None:
        self.retriever = retriever
        self.provider = provider
        self.top_k = top_k

    def answer(self, question: str, language: str, history: Sequence[Any] = ()) -> NarrativePart:
        if self.retriever is None:
            return NarrativePart(EMPTY, message(NO_PASSAGE, language))
        found = self.retriever.search(question, top_k=self.top_k)
        if getattr(found, "refusal", None):  # the retriever's own gate or corrective loop refused
            return NarrativePart(GATE_REFUSED, message(SEARCH_REFUSAL, language))
        snippets = [s for s in found.snippets if not is_restricted(s.get("sensitivity"))]
        citations = tuple(_citation(f"S{i}", s) for i, s in enumerate(snippets, 1))
        if not citations:
            return NarrativePart(EMPTY, message(NO_PASSAGE, language))
        if self.provider is None:
            return NarrativePart(EXTRACTIVE, "\n".join(f"[{c.id}] {' '.join(c.text.split())}" for c in citations), citations)
        prompt_texts = {c.id: s.get("prompt_text") or c.text for c, s in zip(citations, snippets)}
        return self._generate(question, language, history, citations, prompt_texts)

    def _generate(self, question: str, language: str, history: Sequence[Any], citations: tuple[Citation, ...],
                  prompt_texts: dict[str, str]) -> NarrativePart:
        assert self.provider is not None
        prompt = GENERATION_PROMPT.format(
            passages="\n\n".join(f"[{c.id}] {prompt_texts[c.id]}" for c in citations),
            history=history_text(history) or "(none)", question=question,
        )
        try:
            prose = str(self.provider.chat([{"role": "user", "content": prompt}]))
        except Exception:  # a failed call or a spent budget: no prose, and no guess either
            return NarrativePart(CITATION_REFUSED, message(CITATION_REFUSAL, language))
        cited = check_citations(prose, {c.id: prompt_texts[c.id] + "\n" + c.text for c in citations})
        if cited is None:
            return NarrativePart(CITATION_REFUSED, message(CITATION_REFUSAL, language))
        return NarrativePart(GENERATED, prose.strip(), tuple(c for c in citations if c.id in cited))


def check_citations(prose: str, texts: dict[str, str]) -> set[str] | None:
    """The ids ``prose`` cites when it cites at least one, all of them are keys of ``texts``,
    and every number outside the citation marks occurs in a cited text; else ``None``."""
    cited: set[str] = set()
    for mark in CITATION.findall(prose):
        ids = [part.strip() for part in re.split(r"[,;，、]", mark) if part.strip()]
        if not ids or any(i not in texts for i in ids):
            return None
        cited.update(ids)
    if not cited:
        return None
    held = " ".join(_numbers_of(texts[i]) for i in cited)
    stated = NUMBER.findall(CITATION.sub(" ", prose))
    if any(_plain(n) not in held.split() for n in stated):
        return None
    return cited


def _numbers_of(text: str) -> str:
    return " ".join(_plain(n) for n in NUMBER.findall(text))


def _plain(number: str) -> str:
    """``1,400`` → ``1400``; ``3.10`` stays (a number is compared as written, less separators)."""
    return number.replace(",", "")


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


def _citation(cid: str, snippet: dict[str, Any]) -> Citation:
    return Citation(cid, str(snippet.get("chunk_id", "")), str(snippet.get("doc_id", "")), str(snippet.get("title", "")),
                    str(snippet.get("library_id", "")), str(snippet.get("source_locator", "")), str(snippet.get("text", "")))
