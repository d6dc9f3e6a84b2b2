"""``RAGSPINE_POSTPROCESSOR=mmr``: maximal marginal relevance (Carbonell & Goldstein, 1998).

Greedy: among the candidates not yet chosen, take the one maximizing

    λ · rel(d) − (1 − λ) · max over chosen s of sim(d, s)

(no chosen result yet: the second term is 0), until ``top_k`` are chosen; a tie goes to the
earlier candidate, so the first pick is always the most relevant one. ``rel`` is the
pipeline's own score — ``rerank`` when every candidate has one, else ``fused`` — min-max
scaled to [0, 1] over the candidates (all equal: 1). ``sim`` is the cosine of the candidates'
token counts (:func:`~ragspine.retrieval.lexical.tokenizer.tokenize`: words, CJK unigrams and
bigrams; title + text), so it needs no model and reads every language the index does.
λ = ``RAGSPINE_MMR_LAMBDA`` (default 0.5; 1 = relevance order, 0 = diversity only).
"""

from __future__ import annotations

import math
from collections import Counter
from typing import TYPE_CHECKING, Callable

from ragspine.retrieval.lexical.tokenizer import tokenize
from ragspine.retrieval.postprocess.base import open_results
from ragspine.retrieval.rerank.scored import candidate_text
from ragspine.retrieval.types import RetrievalResult

if TYPE_CHECKING:
    from ragspine.config import Settings

DEFAULT_LAMBDA = 0.5


def relevance(results: list[RetrievalResult]) -> list[float]:
    """``rel`` of the module docstring."""
    key = "rerank" if results and all("rerank" in r.scores for r in results) else "fused"
    raw = [float(r.scores.get(key, 0.0)) for r in results]
    lo, hi = min(raw, default=0.0), max(raw, default=0.0)
    return [1.0] * len(raw) if hi <= lo else [(x - lo) / (hi - lo) for x in raw]


def _cosine(a: Counter[str], b: Counter[str], na: float, nb: float) -> float:
    if not na or not nb:
        return 0.0
    if len(a) > len(b):
        a, b = b, a
    return sum(v * b[t] for t, v in a.items() if t in b) / (na * nb)


def mmr_order(rel: list[float], sim: Callable[[int, int], float], top_k: int, lam: float) -> list[int]:
    """Indices chosen by the greedy rule; ``sim(i, j)`` the similarity of candidates i and j."""
    chosen: list[int] = []
    redundancy = [0.0] * len(rel)  # max sim to the chosen ones
    remaining = list(range(len(rel)))
    while remaining and len(chosen) < top_k:
        best = max(remaining, key=lambda i: (lam * rel[i] - (1 - lam) * redundancy[i], -i))
        chosen.append(best)
        remaining.remove(best)
        for i in remaining:
            redundancy[i] = max(redundancy[i], sim(i, best))
    return chosen


class MMRPostprocessor:
    """See the module docstring."""

    def __init__(self, *, mmr_lambda: float = DEFAULT_LAMBDA) -> None:
        if not 0.0 <= mmr_lambda <= 1.0:
            raise ValueError(f"mmr_lambda must be within [0, 1], got {mmr_lambda}")
        self.mmr_lambda = mmr_lambda

    @classmethod
    def from_settings(cls, settings: Settings) -> MMRPostprocessor:
        """λ = ``RAGSPINE_MMR_LAMBDA`` (``settings.ranking.mmr_lambda``)."""
        return cls(mmr_lambda=settings.ranking.mmr_lambda)

    def __repr__(self) -> str:
        return f"MMRPostprocessor(mmr_lambda={self.mmr_lambda})"

    def process(self, query: str, results: list[RetrievalResult], *, top_k: int) -> list[RetrievalResult]:
        candidates = open_results(results)
        counts = [Counter(tokenize(candidate_text(r))) for r in candidates]
        norms = [math.sqrt(sum(v * v for v in c.values())) for c in counts]
        cache: dict[tuple[int, int], float] = {}

        def sim(i: int, j: int) -> float:
            key = (min(i, j), max(i, j))
            if key not in cache:
                cache[key] = _cosine(counts[i], counts[j], norms[i], norms[j])
            return cache[key]

        return [candidates[i] for i in mmr_order(relevance(candidates), sim, top_k, self.mmr_lambda)]
