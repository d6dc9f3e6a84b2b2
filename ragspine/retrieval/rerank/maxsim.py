"""Late interaction (ColBERT's MaxSim): for each query token the best cosine to any of a
candidate's tokens, summed over the query's tokens.

``maxsim(query, doc)`` takes L2-normalized token matrices (``(q, dim)``, ``(d, dim)``); an
empty side scores 0. Pure numpy, reusable by any seam that compares token (or patch) vector
sets.
"""

from __future__ import annotations

import numpy as np


def maxsim(query: np.ndarray, doc: np.ndarray) -> float:
    """``sum_i max_j <query_i, doc_j>`` (see the module docstring)."""
    if query.size == 0 or doc.size == 0:
        return 0.0
    return float((query @ doc.T).max(axis=1).sum())


def maxsim_many(query: np.ndarray, docs: list[np.ndarray]) -> list[float]:
    """:func:`maxsim` of ``query`` against each of ``docs``, in one matrix product."""
    if not docs:
        return []
    sizes = [len(d) for d in docs]
    if query.size == 0 or sum(sizes) == 0:
        return [0.0] * len(docs)
    dim = query.shape[1]
    sims = query @ np.concatenate([d.reshape(-1, dim) for d in docs]).T  # (q, total doc tokens)
    out, pos = [], 0
    for n in sizes:
        out.append(float(sims[:, pos:pos + n].max(axis=1).sum()) if n else 0.0)
        pos += n
    return out
