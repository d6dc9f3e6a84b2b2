"""Listwise reranking by an LLM judge, with the first RESTRICTED exit and an RRF fallback.

``listwise_rerank(query, results, judge, top_n=10)``:

* RESTRICTED exit #1: candidates whose ``chunk.sensitivity`` is RESTRICTED (any case) are
  never sent to the judge; they keep their RRF positions. If every candidate in the head is
  RESTRICTED the judge is not called at all.
* Only the first ``top_n`` results are judged; the tail keeps its order.
* Any judge exception or malformed answer degrades to the RRF order. It never raises.

The pure helpers ``build_listwise_prompt`` and ``parse_listwise_response`` make the whole
exchange testable without a model.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Protocol, Sequence

from ragspine.errors import ConfigError
from ragspine.llm.observe import report_malformed
from ragspine.retrieval.rerank.base import Reranker, rerank_open_subset
from ragspine.retrieval.sensitivity import RESTRICTED_SENSITIVITY
from ragspine.retrieval.types import RetrievalResult

if TYPE_CHECKING:
    from ragspine.config import Settings
    from ragspine.llm.base import LLMProvider

log = logging.getLogger(__name__)

DEFAULT_TOP_N = 10
MAX_CANDIDATE_CHARS = 1200

__all__ = [
    "DEFAULT_TOP_N",
    "RESTRICTED_SENSITIVITY",
    "ListwiseJudge",
    "ListwiseReranker",
    "ProviderListwiseJudge",
    "Reranker",
    "build_listwise_prompt",
    "listwise_rerank",
    "listwise_reranker",
    "parse_listwise_response",
    "read_listwise_response",
    "rerank_open_subset",
]


class ListwiseJudge(Protocol):
    def judge(self, query: str, candidates: list[str]) -> list[int]: ...


def build_listwise_prompt(query: str, candidates: Sequence[str]) -> str:
    lines = [
        "Rank the passages by how well they answer the question.",
        "Answer with the passage numbers only, best first, comma-separated (e.g. 2, 0, 1).",
        "",
        f"Question: {query}",
        "",
    ]
    for i, text in enumerate(candidates):
        snippet = " ".join(text.split())[:MAX_CANDIDATE_CHARS]
        lines.append(f"[{i}] {snippet}")
    return "\n".join(lines)


def parse_listwise_response(text: str, n_candidates: int) -> list[int]:
    """A permutation of ``range(n_candidates)`` read from ``text``; identity if unusable.

    Numbers are read in order (``[2]``, ``2.``, ``2, 0, 1`` all work); out-of-range and
    repeated numbers are ignored; candidates the answer did not mention follow in their
    original order. An answer naming no valid candidate gives the identity.
    """
    order = read_listwise_response(text, n_candidates)
    return list(range(n_candidates)) if order is None else order


def read_listwise_response(text: object, n_candidates: int) -> list[int] | None:
    """:func:`parse_listwise_response`, but ``None`` for a malformed answer (one naming no
    valid candidate, or not a text) instead of the identity."""
    if n_candidates <= 0 or not isinstance(text, str):
        return None
    order: list[int] = []
    for match in re.finditer(r"\d+", text):
        i = int(match.group())
        if 0 <= i < n_candidates and i not in order:
            order.append(i)
    if not order:
        return None
    return order + [i for i in range(n_candidates) if i not in order]


def listwise_rerank(
    query: str,
    results: Sequence[RetrievalResult],
    judge: ListwiseJudge,
    *,
    top_n: int = DEFAULT_TOP_N,
) -> list[RetrievalResult]:
    """See the module docstring. Never raises."""

    def reorder(items: list[RetrievalResult]) -> list[RetrievalResult]:
        perm = judge.judge(query, [r.chunk.text for r in items])
        if sorted(perm) != list(range(len(items))):
            perm = parse_listwise_response(" ".join(map(str, perm)), len(items))
        return [items[i] for i in perm]

    try:
        return rerank_open_subset(results, reorder, top_n=top_n)
    except Exception as exc:  # defensive: never raise out of the rerank stage
        log.warning("listwise rerank failed, keeping fused order: %s", exc)
        return list(results)


class ListwiseReranker:
    """A :class:`Reranker` around a :class:`ListwiseJudge`."""

    def __init__(self, judge: ListwiseJudge, *, top_n: int = DEFAULT_TOP_N) -> None:
        if top_n < 1:
            raise ValueError(f"top_n must be >= 1, got {top_n}")
        self.judge = judge
        self.top_n = top_n

    def rerank(self, query: str, results: list[RetrievalResult]) -> list[RetrievalResult]:
        return listwise_rerank(query, results, self.judge, top_n=self.top_n)


def listwise_reranker(*, provider: LLMProvider | None = None, top_n: int = DEFAULT_TOP_N, settings: Settings | None = None) -> ListwiseReranker:
    """``RAGSPINE_RERANKER=listwise`` (the registry's factory): the judge is ``provider``.
    ``settings`` (every reranker factory is given the stack's) is not read: the judge is all it needs."""
    if provider is None:
        raise ConfigError("the listwise reranker needs an LLM provider (RAGSPINE_LLM)")
    return ListwiseReranker(ProviderListwiseJudge(provider), top_n=top_n)


class ProviderListwiseJudge:
    """A :class:`ListwiseJudge` over an ``LLMProvider``: one ``chat`` call per judgement.

    Provider errors propagate; ``listwise_rerank`` catches them and keeps the RRF order. An
    answer naming no candidate is reported as malformed and keeps the RRF order too.
    """

    def __init__(self, provider: LLMProvider) -> None:
        self.provider = provider

    def judge(self, query: str, candidates: list[str]) -> list[int]:
        prompt = build_listwise_prompt(query, candidates)
        answer = self.provider.chat([{"role": "user", "content": prompt}])
        order = read_listwise_response(answer, len(candidates))
        if order is None:
            report_malformed(self.provider, "listwise", answer)
            return list(range(len(candidates)))
        return order
