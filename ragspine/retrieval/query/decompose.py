"""LLM decomposition (``RAGSPINE_QUERY_DECOMPOSE=llm``) and the corrective loop's rewrite.

:class:`LLMQueryDecomposer` asks the model to split a question into at most ``fanout``
self-contained sub-questions (one call). Each sub-question is a probe: the security gate
checks it, then it runs the whole guarded pipeline (both RESTRICTED exits) and the results
are fused deterministically (:mod:`~ragspine.retrieval.reasoning.fuse`). A model that repeats
the question alone, names a single sub-question, fails or answers something unreadable gives
``[]``: the question is searched as it is (an unreadable answer is reported as malformed).

:class:`QueryRewrite` is the corrective loop's second round: the model rewrites a question
whose results graded weak into one search query; without a model, or when it fails, the
deterministic rewrite keeps the question's content words (no stopwords, no punctuation).
"""

from __future__ import annotations

import re

from ragspine.errors import ConfigError
from ragspine.llm.base import LLMProvider
from ragspine.llm.observe import report_malformed
from ragspine.retrieval.query import prompts
from ragspine.retrieval.query.transforms import DEFAULT_FANOUT, MAX_FANOUT, ask_model

__all__ = ["LLMQueryDecomposer", "QueryRewrite", "keyword_query"]


class LLMQueryDecomposer:
    """See the module docstring."""

    def __init__(self, provider: LLMProvider | None = None, *, fanout: int = DEFAULT_FANOUT, max_tokens: int | None = None) -> None:
        if provider is None:
            raise ConfigError("RAGSPINE_QUERY_DECOMPOSE=llm (and RAGSPINE_ADAPTIVE) needs an LLM provider: set RAGSPINE_LLM")
        if not 1 <= fanout <= MAX_FANOUT:
            raise ConfigError(f"RAGSPINE_QUERY_FANOUT must be within 1..{MAX_FANOUT}, got {fanout}")
        self.provider = provider
        self.fanout = fanout
        self.max_tokens = 128 if max_tokens is None else max(1, min(128, max_tokens))

    def decompose(self, question: str) -> list[str]:
        answer = ask_model(self.provider, "decompose", prompts.decompose_prompt(question, self.fanout), self.max_tokens)
        if answer is None:
            return []
        subs = prompts.read_lines(answer, question, self.fanout)
        if subs is None:
            if not any(prompts.same_text(line, question) for line in answer.splitlines() if line.strip()):
                report_malformed(self.provider, "decompose", answer)
            return []
        return subs if len(subs) >= 2 else []


#: Words a keyword query leaves out (English; CJK particles are single characters the
#: tokenizer's bigrams already weigh little).
STOPWORDS = frozenset(
    "a an and are as at be by can could did do does for from had has have how i in is it its of on or tell that the "
    "their there these this those to was were what when where which who whom whose why will with would about me please".split()
)


def keyword_query(question: str) -> str:
    """The question's content words in order (English stopwords and punctuation removed)."""
    words = re.findall(r"[^\W_]+", question)
    kept = [w for w in words if w.casefold() not in STOPWORDS]
    return " ".join(kept)


class QueryRewrite:
    """The corrective rewrite: the model's one-query rewrite, else :func:`keyword_query`.
    ``rewrite`` returns ``(query, source)``, source ``llm`` or ``keywords``; ``None`` when
    neither differs from the question (nothing new to search)."""

    def __init__(self, provider: LLMProvider | None = None, *, max_tokens: int | None = None) -> None:
        self.provider = provider
        self.max_tokens = 64 if max_tokens is None else max(1, min(64, max_tokens))

    def rewrite(self, question: str) -> tuple[str, str] | None:
        if self.provider is not None:
            answer = ask_model(self.provider, "rewrite", prompts.rewrite_prompt(question), self.max_tokens)
            if answer is not None:
                query = prompts.read_question(answer, question)
                if query is not None:
                    return query, "llm"
                report_malformed(self.provider, "rewrite", answer)
        keywords = keyword_query(question)
        if not keywords or prompts.same_text(keywords, question):
            return None
        return keywords, "keywords"
