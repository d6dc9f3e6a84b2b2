"""Confidence-weighted z-score fusion (``RAGSPINE_FUSION_WEIGHTS=zscore``): a score fusion
where RRF is a rank fusion.

RRF throws the scores away: a chunk BM25 puts far ahead of everything else and a chunk the
dense leg barely prefers both count ``1/(k + 1)``. Here each ranking's scores become z-scores
within that ranking (``(s − mean) / std``: BM25 scores and cosines both become unit-free), and
each ranking is weighted by its *confidence* — the z-score of its own best hit, i.e. how clearly
its first result stands out (times the caller's weight, e.g. a generated probe's ½). A chunk
missing from a ranking takes that ranking's lowest z-score (it was not in its top ``depth``).

So a leg that is sure of its answer leads, whichever leg it is — measured on the dev sets this
gave 0.977 (xquad-zh, e5), 0.975 (drcd, e5), 0.944 (nq-open, MiniLM) where RRF gave 0.970,
0.939, 0.918 (see ``docs/benchmarks.md``). The fused score is scaled so that a chunk first in
every ranking scores exactly ``n`` (the number of rankings): ``score / n`` is in (−∞, 1], 1 =
"first for every ranker", as the Dify endpoint's normalization expects.

Fewer than two rankings, or no ranking whose best hit stands out (every one shorter than 3 or
with no spread), is not this rule's case: :func:`zscore_fuse` returns ``None`` and the caller
keeps RRF.
"""

from __future__ import annotations

import math
from typing import Hashable, Sequence, TypeVar

K = TypeVar("K", bound=Hashable)

#: A ranking needs this many scores for a mean and a spread to mean anything.
MIN_SCORES = 3


def _zscores(scores: Sequence[float]) -> tuple[list[float], float] | None:
    """The z-scores of ``scores`` and that of the best one; ``None`` for too few or no spread."""
    if len(scores) < MIN_SCORES:
        return None
    mean = sum(scores) / len(scores)
    std = math.sqrt(sum((x - mean) ** 2 for x in scores) / len(scores))
    if not std > 0:
        return None
    zs = [(x - mean) / std for x in scores]
    return zs, max(zs)


def zscore_fuse(rankings: Sequence[Sequence[tuple[K, float]]], weights: Sequence[float] | None = None) -> dict[K, float] | None:
    """``{id: fused}`` over ``rankings`` (each ``[(id, score), ...]``, best first), or ``None``
    when the rule does not apply (see the module docstring). ``weights``: one per ranking (1 each
    by default), multiplied with each ranking's confidence."""
    if len(rankings) < 2:
        return None
    if weights is not None and len(weights) != len(rankings):
        raise ValueError(f"{len(weights)} weights for {len(rankings)} rankings")
    normalized: list[tuple[dict[K, float], float, float]] = []  # (z by id, floor, weight × confidence)
    total = 0.0
    for i, ranking in enumerate(rankings):
        stats = _zscores([float(score) for _, score in ranking])
        if stats is None:
            continue
        zs, top = stats
        w = (1.0 if weights is None else float(weights[i])) * top
        if not w > 0:
            continue
        by_id: dict[K, float] = {}
        for key, z in zip((key for key, _ in ranking), zs, strict=True):
            by_id.setdefault(key, z)  # an id repeated in one ranking counts at its best place
        normalized.append((by_id, min(zs), w))
        total += w * top
    if not normalized:
        return None
    ids = list(dict.fromkeys(key for ranking in rankings for key, _ in ranking))
    scale = len(rankings) / total
    return {key: scale * sum(w * by_id.get(key, floor) for by_id, floor, w in normalized) for key in ids}
