"""Leg weights of the fusion (weighted RRF): ``bm25=1,vector=0.5``.

A search's fused score of a chunk is ``sum over rankings of weight(leg) / (k + rank)``
(:func:`~ragspine.retrieval.fusion.rrf.rrf_fuse`). The weights come, most specific first, from
the request (a :class:`~ragspine.retrieval.request.SearchRequest`'s ``weights``, which the
service sets from ``/v1/retrieve``), the library (its pipeline's ``leg_weights``: a service
library's ``fusion_weights``), else ``RAGSPINE_FUSION_WEIGHTS``. Unset everywhere, no weights are applied at all: RRF is computed
exactly as the seed computes it. ``adaptive`` (:class:`AdaptiveWeights`) chooses them per query;
``zscore`` (:class:`ZScoreFusion`) fuses the legs' scores instead of their ranks.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

from ragspine.errors import ConfigError

LEGS = ("bm25", "vector")
#: The most a weight may be (a request cannot make one leg a thousand times the other).
MAX_WEIGHT = 100.0

LegWeights = Mapping[str, float]


class AdaptiveWeights(dict[str, float]):
    """``RAGSPINE_FUSION_WEIGHTS=adaptive``: weights chosen per query from how clearly each
    ranking's best hit stands out of its own list — its z-score, ``(s_1 - mean) / std`` over the
    ranking's scores (BM25 scores or cosines alike: the z-score has no unit). Each ranking's
    weight is its z-score over the mean z-score of the query's rankings (so they sum to the
    number of rankings, as unweighted RRF's); a ranking too short to tell (under 3 scores) or a
    non-positive z-score leaves every weight 1."""

    def weights(self, rankings: Sequence[Sequence[float]]) -> list[float] | None:
        zs = []
        for scores in rankings:
            if len(scores) < 3:
                return None
            mean = sum(scores) / len(scores)
            std = math.sqrt(sum((x - mean) ** 2 for x in scores) / len(scores))
            z = (max(scores) - mean) / std if std > 0 else 0.0
            if z <= 0:
                return None
            zs.append(z)
        total = sum(zs)
        return [len(zs) * z / total for z in zs] if zs else None


ADAPTIVE = AdaptiveWeights()


class ZScoreFusion(dict[str, float]):
    """``RAGSPINE_FUSION_WEIGHTS=zscore``: not RRF weights but another fusion — each ranking's
    scores as z-scores, weighted by how clearly its best hit stands out
    (:func:`~ragspine.retrieval.fusion.zscore.zscore_fuse`). Carried where weights are, so a
    library or a request chooses it the same way."""


ZSCORE = ZScoreFusion()

def parse_weights(spec: str | Mapping[str, object] | None, *, where: str = "RAGSPINE_FUSION_WEIGHTS") -> dict[str, float] | None:
    """``"bm25=1,vector=0.5"`` (or a mapping) as ``{leg: weight}``; ``None``/``""`` → ``None``.
    An unknown leg, a bad number, a negative or too large weight, or all weights zero →
    ``ConfigError`` naming ``where``."""
    if spec is None:
        return None
    if isinstance(spec, AdaptiveWeights):
        return ADAPTIVE
    if isinstance(spec, ZScoreFusion):
        return ZSCORE
    if isinstance(spec, str):
        if not spec.strip() or spec.strip().lower() in ("none", "default"):
            return None
        if spec.strip().lower() == "adaptive":
            return ADAPTIVE
        if spec.strip().lower() == "zscore":
            return ZSCORE
        pairs: list[tuple[str, object]] = []
        for part in spec.split(","):
            if not part.strip():
                continue
            name, sep, value = part.partition("=")
            if not sep:
                raise ConfigError(f"{where}={spec!r}: write leg=weight pairs, e.g. bm25=1,vector=0.5")
            pairs.append((name.strip().lower(), value.strip()))
    else:
        pairs = [(str(k).strip().lower(), v) for k, v in spec.items()]
    out: dict[str, float] = {}
    for name, raw in pairs:
        if name not in LEGS:
            raise ConfigError(f"{where}: unknown leg {name!r}; legs are {', '.join(LEGS)}")
        try:
            weight = float(raw) if isinstance(raw, (int, float, str)) else float("nan")
        except ValueError:
            weight = float("nan")
        if weight != weight:
            raise ConfigError(f"{where}: the weight of {name!r} is not a number: {raw!r}")
        if not math.isfinite(weight) or not 0.0 <= weight <= MAX_WEIGHT:
            raise ConfigError(f"{where}: the weight of {name!r} must be within 0..{MAX_WEIGHT:g}, got {raw!r}")
        out[name] = weight
    if out and not any(out.values()):
        raise ConfigError(f"{where}: at least one leg needs a weight above 0")
    return out or None


def format_weights(weights: LegWeights | None) -> str:
    """``"bm25=1,vector=0.5"`` (``"none"`` for no weights, ``"adaptive"``)."""
    if isinstance(weights, AdaptiveWeights):
        return "adaptive"
    if isinstance(weights, ZScoreFusion):
        return "zscore"
    return ",".join(f"{k}={v:g}" for k, v in weights.items()) if weights else "none"


def canonical_weights(spec: str | None) -> str | None:
    """``RAGSPINE_FUSION_WEIGHTS`` in canonical form (``"bm25=1,vector=0.5"``, ``adaptive``,
    ``zscore``; ``None`` when unset); ``ConfigError`` as :func:`parse_weights` raises it. The
    setting's checker (:attr:`ragspine.config.Setting.check`)."""
    weights = parse_weights(spec)
    return format_weights(weights) if weights is not None else None


def effective_weights(library: LegWeights | None, request: LegWeights | None = None) -> LegWeights | None:
    """The request's weights if it has any, else ``library``'s."""
    return request if request is not None else library
