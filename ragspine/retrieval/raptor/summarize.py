"""A cluster's synthesis text (``RAGSPINE_RAPTOR_SUMMARIZER``): extractive, or a model's.

* :class:`ExtractiveSummarizer` (default, no model) — the members' sentences most central to
  the cluster, verbatim: each sentence is scored by the cosine of its term counts with the
  whole cluster's (:func:`~ragspine.retrieval.lexical.tokenizer.tokenize`: CJK bigrams too);
  the best sentence of each member first (those that fit), then the next best while they fit in ``max_chars``
  (a first sentence longer than that is cut there); kept in reading order.
* :class:`LLMSummarizer` — the model writes two or three sentences from the members (each cut
  to :data:`MEMBER_CHARS`); an unusable answer or a failed call falls back to the extractive
  text for that node (reported as malformed: ``raptor_summary``).

Either way the text is a retrieval probe, never evidence (``base.py``). The builder hands a
summarizer open text only; the prompt is built from ``members`` and nothing else.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ragspine.errors import BackendError, ConfigError
from ragspine.llm.observe import report_malformed
from ragspine.retrieval.chunking.chunking import sentence_spans
from ragspine.retrieval.lexical.tokenizer import tokenize

if TYPE_CHECKING:
    from ragspine.llm.base import LLMProvider

__all__ = ["MEMBER_CHARS", "ExtractiveSummarizer", "LLMSummarizer", "make_summarizer", "summary_prompt"]

#: The most of one member's text a prompt carries, and of all members together.
MEMBER_CHARS = 600
PROMPT_MEMBERS_CHARS = 4000
SEAM = "raptor_summary"


def _sentences(members: Sequence[str]) -> list[tuple[int, int, str]]:
    """``(member, position, sentence)`` of every distinct sentence, in reading order."""
    seen: set[str] = set()
    out = []
    for m, text in enumerate(members):
        for pos, (start, end) in enumerate(sentence_spans(text, 0, len(text))):
            sentence = text[start:end]
            if sentence and sentence not in seen:  # overlapping chunks repeat sentences
                seen.add(sentence)
                out.append((m, pos, sentence))
    return out


def _cosine(a: Counter[str], b: Counter[str], norm_b: float) -> float:
    dot = sum(count * b[token] for token, count in a.items())
    norm_a = math.sqrt(sum(c * c for c in a.values()))
    return dot / (norm_a * norm_b) if norm_a and norm_b else 0.0


class ExtractiveSummarizer:
    """See the module docstring."""

    name = "extractive"

    def summarize(self, members: Sequence[str], *, max_chars: int) -> tuple[str, str]:
        if max_chars <= 0:
            raise ConfigError(f"max_chars must be positive, got {max_chars}")
        sentences = _sentences(members)
        if not sentences:
            return "", self.name
        counts = [Counter(tokenize(s)) for _, _, s in sentences]
        cluster: Counter[str] = Counter()
        for c in counts:
            cluster.update(c)
        norm = math.sqrt(sum(v * v for v in cluster.values()))
        scores = [round(_cosine(c, cluster, norm), 9) for c in counts]
        ranked = sorted(range(len(sentences)), key=lambda i: (-scores[i], sentences[i][0], sentences[i][1]))
        chosen: list[int] = []
        used = 0
        members_seen: set[int] = set()
        for first_pass in (True, False):
            for i in ranked:
                member, _, sentence = sentences[i]
                if i in chosen or (first_pass and member in members_seen):
                    continue
                cost = len(sentence) + (1 if chosen else 0)
                if used + cost > max_chars:
                    if first_pass:
                        continue
                    break  # a less central sentence never takes the place of a more central one
                chosen.append(i)
                members_seen.add(member)
                used += cost
        if not chosen:  # even the most central sentence is longer than the budget: its head
            return sentences[ranked[0]][2][:max_chars].rstrip(), self.name
        return " ".join(sentences[i][2] for i in sorted(chosen, key=lambda i: sentences[i][:2])), self.name


def summary_prompt(members: Sequence[str]) -> str:
    """The one prompt of the LLM summarizer: the members' texts (each cut) and the task."""
    parts, total = [], 0
    for n, text in enumerate(members, 1):
        piece = " ".join(text.split())[:MEMBER_CHARS]
        if total + len(piece) > PROMPT_MEMBERS_CHARS:
            break
        parts.append(f"Passage {n}: {piece}")
        total += len(piece)
    return (
        "Summarize what the passages below have in common in two or three sentences, in their language. "
        "Use only what the passages say. Reply with the summary only.\n\n" + "\n\n".join(parts) + "\n\nSummary:"
    )


def _read_summary(answer: object, max_chars: int) -> str | None:
    """The model's summary, whitespace collapsed, cut at the last sentence end within
    ``max_chars`` (else at ``max_chars``); ``None`` when empty."""
    text = " ".join(str(answer or "").split()).removeprefix("Summary:").strip()
    if not text:
        return None
    if len(text) <= max_chars:
        return text
    ends = [end for _, end in sentence_spans(text, 0, max_chars)]
    cut = max((e for e in ends if e <= max_chars and text[e - 1] in "。！？.!?"), default=max_chars)
    return text[:cut].rstrip()


class LLMSummarizer:
    """See the module docstring. ``provider``: an :class:`~ragspine.llm.base.LLMProvider`."""

    name = "llm"

    def __init__(self, provider: Any = None) -> None:
        if provider is None:
            raise ConfigError("RAGSPINE_RAPTOR_SUMMARIZER=llm needs a language model: set RAGSPINE_LLM (or use extractive)")
        self.provider = provider
        self.fallback = ExtractiveSummarizer()

    def summarize(self, members: Sequence[str], *, max_chars: int) -> tuple[str, str]:
        if not any(m.strip() for m in members):
            return "", self.name
        answer: object = None
        try:
            answer = self.provider.chat([{"role": "user", "content": summary_prompt(members)}])
        except BackendError as exc:  # a failed call (timeout, server error): this node is extractive
            answer = f"<call failed: {exc}>"
        else:
            text = _read_summary(answer, max_chars)
            if text is not None:
                return text, self.name
        report_malformed(self.provider, SEAM, answer)
        text, _ = self.fallback.summarize(members, max_chars=max_chars)
        return text, "extractive (the model's answer was unusable)"


def make_summarizer(name: str, *, provider: LLMProvider | None = None) -> Any:
    """The summarizer ``name`` (``RAGSPINE_RAPTOR_SUMMARIZER``) of the registry; ``provider`` goes
    to one whose registry line needs an LLM."""
    from ragspine.registries import RAPTOR_SUMMARIZERS

    needs = {"provider": provider} if "llm" in RAPTOR_SUMMARIZERS.needs(name) else {}
    return RAPTOR_SUMMARIZERS.build(name, **needs)
