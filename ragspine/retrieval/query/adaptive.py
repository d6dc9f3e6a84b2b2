"""Adaptive-RAG (``RAGSPINE_ADAPTIVE``): single-shot retrieval, or decomposition into sub-questions.

``heuristic`` (:class:`HeuristicComplexityClassifier`) is deterministic — the same question
always takes the same route — and decomposes when the question has any of these signals:

* ``comparison``: a comparison word — English ``compare``, ``comparison``, ``versus``/``vs``,
  ``difference(s) between``, ``differ``, ``relative to``, ``outperform``, ``which is
  higher/lower/larger/better``; Chinese 比较 对比 相比 比起 区别 差异 哪个更; Japanese 比較 比べ
  違い 差異 対比 どちら;
* ``entities``: two or more entities of the structured channel's controlled glossary
  (``RAGSPINE_FACT_GLOSSARY``, default the shipped one), matched like the security gate;
* ``periods``: two or more distinct periods (``2023``, ``Q3 2024``, ``FY2024``, ``H1``,
  ``2024年第三季度``, ``上半年``, ``2024年度``, ``第3四半期`` …; ``Q3 2024`` is one period);
* ``questions``: two or more question marks (``?`` or ``？``).

``llm`` (:class:`LLMComplexityClassifier`) asks the model for SIMPLE or COMPLEX; a failed or
unreadable answer routes single-shot (the plain question). There is no "answer without
retrieval" branch: both routes retrieve.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Mapping, Sequence

from ragspine.errors import ConfigError
from ragspine.llm.base import LLMProvider
from ragspine.llm.observe import report_malformed
from ragspine.retrieval.query import prompts
from ragspine.retrieval.query.base import Complexity
from ragspine.retrieval.query.transforms import ask_model
from ragspine.security.gate import TermMatcher

__all__ = ["HeuristicComplexityClassifier", "LLMComplexityClassifier", "glossary_entities", "periods_in"]

SINGLE = Complexity("single")

_COMPARISON = re.compile(
    r"\b(?:compar(?:e|ed|es|ing|ison|isons)|versus|vs\.?|differ(?:s|ed|ence|ences)?|relative to|outperform(?:s|ed)?"
    r"|which (?:is|was|one is|has) (?:higher|lower|larger|smaller|bigger|better|worse|more|less))\b"
    r"|比较|比較|对比|對比|相比|比起|区别|區別|差异|差異|哪个更|哪個更|比べ|違い|対比|どちら",
    re.I,
)
_Y = r"(?:19|20)\d{2}"
_Q = r"(?:q[1-4]|h[12])"
_CJK_Q = r"(?:第?[一二三四1-4]季度|第?[1-4一二三四]四半期|上半年|下半年|上半期|下半期|上期|下期)"
_PERIOD = re.compile(
    rf"(?<![a-z0-9])(?:{_Y}\s*[-/]?\s*{_Q}|{_Q}\s*[-/]?\s*(?:fy\s*)?{_Y}|fy\s*'?\d{{2,4}}(?:\s*[-/]?\s*{_Q})?|{_Y}年?{_CJK_Q}"
    rf"|{_Y}(?:年度|年)?|{_Q})(?![a-z0-9])|{_CJK_Q}",
    re.I,
)


def periods_in(text: str) -> list[str]:
    """The distinct period mentions of ``text`` (spaces removed, lowercased), in order."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return list(dict.fromkeys(re.sub(r"\s+", "", m.group()) for m in _PERIOD.finditer(folded)))


def glossary_entities(path: str | None = None) -> dict[str, list[str]]:
    """``{entity key: [forms]}`` of a glossary file (default: the structured channel's shipped one)."""
    from ragspine.structured.glossary import Glossary

    glossary = Glossary.load(path) if path else Glossary.default()
    return {key: list(term.forms) for key, term in glossary.terms["entities"].items()}


class HeuristicComplexityClassifier:
    """See the module docstring. ``entities``: ``{key: [forms]}`` (default: the shipped glossary's)."""

    def __init__(self, entities: Mapping[str, Sequence[str]] | None = None) -> None:
        self.entities = TermMatcher(glossary_entities() if entities is None else entities)

    def signals(self, question: str) -> tuple[str, ...]:
        found = []
        if _COMPARISON.search(unicodedata.normalize("NFKC", question)):
            found.append("comparison")
        if len(self.entities.keys_in(question)) >= 2:
            found.append("entities")
        if len(periods_in(question)) >= 2:
            found.append("periods")
        if len(re.findall(r"[?？]", question)) >= 2:
            found.append("questions")
        return tuple(found)

    def classify(self, question: str) -> Complexity:
        signals = self.signals(question)
        return Complexity("decompose", signals) if signals else SINGLE


class LLMComplexityClassifier:
    """Asks the model SIMPLE or COMPLEX (one short call); failure or an unreadable answer is single-shot."""

    def __init__(self, provider: LLMProvider | None = None, *, max_tokens: int | None = None) -> None:
        if provider is None:
            raise ConfigError("RAGSPINE_ADAPTIVE=llm needs an LLM provider (set RAGSPINE_LLM), or use RAGSPINE_ADAPTIVE=heuristic")
        self.provider = provider
        self.max_tokens = 8 if max_tokens is None else max(1, min(8, max_tokens))

    def classify(self, question: str) -> Complexity:
        answer = ask_model(self.provider, "adaptive", prompts.adaptive_prompt(question), self.max_tokens)
        if answer is None:
            return Complexity("single", ("degraded",))
        complex_ = prompts.read_adaptive(answer)
        if complex_ is None:
            report_malformed(self.provider, "adaptive", answer)
            return Complexity("single", ("degraded",))
        return Complexity("decompose", ("llm",)) if complex_ else SINGLE
