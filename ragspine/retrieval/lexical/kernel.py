"""The compiled top-k kernel of the in-process lexical index (``numba``; the ``[fast]`` extra).

:func:`top_k` answers an exact top-k document at a time with **MaxScore** straight over the
index's postings — the base segment's memory-mapped ``rows`` / ``tf`` arrays and a small
per-query copy of the postings added since the base — computing each BM25 term only for the
postings it visits, from the term frequency and the row's norm
``k1 * (1 - b + b * dl / avgdl)``. Nothing per token is precomputed at query time, so a
million-chunk library answers its common tokens without materializing their postings' terms.

Bounds, tight enough to skip most of a common token's postings:

* each block of :data:`BLOCK` consecutive base postings of a token carries its largest term
  frequency and smallest row length (:func:`block_stats`, computed once per token and base,
  kept by the index), so the block's bound is ``idf * tf_max / (tf_max + norm(dl_min))`` —
  no posting of the block scores more (the term grows with ``tf``, falls with ``dl``); the
  postings added since the base share one bound, their largest term;
* a token's bound is its largest block bound; tokens sorted by bound, the smallest ones whose
  bounds sum below the current k-th score are *non-essential*: a row holding only those
  cannot enter the top k, so only rows of the *essential* tokens are visited, and the
  non-essential lists are searched forward (galloping) for just those rows (**block-max
  MaxScore**);
* an essential token's base block whose bound, with every other token's bound, is below the
  k-th score is skipped whole: a row in it that scores through another token is scored
  without it, but could not have reached the top k with it either.

A surviving row is scored exactly as the reference does: each term ``idf * (tf / (tf +
norm))`` with the same IEEE operations as ``bm25_term``, added one occurrence at a time in
query order from 0.0, so the scores are bit-identical to
:func:`~ragspine.retrieval.lexical.bm25.bm25_scores`. Every row tied with the k-th score is
returned (the caller orders ties by chunk id). Pruning compares with a relative margin of
1e-9, so floating-point rounding of the bounds never drops a row that belongs.

The pure-numpy paths of the index stay the reference and the fallback: without ``numba``
(or ``RAGSPINE_LEXICAL_KERNEL=numpy``) the index answers the same rankings, slower.
"""

from __future__ import annotations

import importlib.util
import os
from typing import Any

import numpy as np

from ragspine.errors import MissingDependencyError

#: Postings per block of a token's base list for block-max bounds.
BLOCK = 64
MARGIN = 1e-9

_compiled: dict[str, Any] = {}


def available() -> bool:
    """Whether numba is installed (found, not imported: it loads at the first pruned query)."""
    if _compiled:
        return True
    try:
        return importlib.util.find_spec("numba") is not None
    except (ImportError, ValueError):
        return False


def _jit(fn: Any) -> Any:
    try:
        import numba
    except ImportError as exc:
        raise MissingDependencyError(
            "numba", "fast", "the compiled lexical kernel (or set RAGSPINE_LEXICAL_KERNEL=numpy)"
        ) from exc
    cache = os.access(os.path.dirname(__file__), os.W_OK) or bool(os.environ.get("NUMBA_CACHE_DIR"))
    return numba.njit(cache=cache, nogil=True)(fn)


def load() -> Any:
    """The compiled :func:`top_k` (compiled on first use, cached on disk by numba)."""
    if "top_k" not in _compiled:
        _compiled["top_k"] = _jit(_top_k)
        _compiled["block_stats"] = _jit(_block_stats)
    return _compiled["top_k"]


def block_stats(rows: np.ndarray, tf: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(tf_max, dl_min)`` of each block of :data:`BLOCK` consecutive postings of one token's
    list (``rows`` / ``tf``; ``lengths``: every row's token count)."""
    load()
    n_blocks = (len(rows) + BLOCK - 1) // BLOCK
    tf_max = np.zeros(n_blocks, dtype=np.float64)
    dl_min = np.zeros(n_blocks, dtype=np.float64)
    _compiled["block_stats"](rows, tf, lengths, tf_max, dl_min)
    return tf_max, dl_min


def _block_stats(rows, tf, lengths, tf_max, dl_min):  # type: ignore[no-untyped-def]
    n = len(rows)
    j = 0
    p = 0
    while p < n:
        e = min(p + BLOCK, n)
        mt = 0.0
        md = np.inf
        for q in range(p, e):
            f = float(tf[q])
            if f > mt:
                mt = f
            d = lengths[rows[q]]
            if d < md:
                md = d
        tf_max[j] = mt
        dl_min[j] = md
        j += 1
        p = e


def _top_k(b_rows, b_tf, d_rows, d_tf, norm, spans, idf, d_max, blk_tf, blk_dl, occ, k, mask, use_mask, k1, b, avgdl):  # type: ignore[no-untyped-def]  # noqa: C901 -- one numba-compiled loop: helpers would add calls to the hot path
    """Exact top ``k`` (every tie with the k-th included) over the distinct tokens ``i``:
    ``spans[i] = (base start, base length, delta start, delta length, first block)`` — the
    token's base postings ``b_rows/b_tf[start : start + length]``, then its later postings in
    ``d_rows/d_tf``, its base blocks' ``blk_tf/blk_dl`` from ``first block`` — with ``idf[i]``
    and ``d_max[i]`` (the largest term of its later postings); ``occ`` the query's occurrences
    in order (indexes of distinct tokens). Returns ``(rows, scores)``, unordered."""
    m = len(spans)
    big = np.iinfo(np.int64).max
    # each token's bound: its largest block bound (times its occurrences in the query)
    count = np.zeros(m, dtype=np.int64)
    for j in range(len(occ)):
        count[occ[j]] += 1
    impact = np.zeros(m)
    for t in range(m):
        best = d_max[t]
        nb = (spans[t, 1] + BLOCK - 1) // BLOCK
        first = spans[t, 4]
        for j in range(nb):
            mt = blk_tf[first + j]
            bound = idf[t] * (mt / (mt + k1 * (1.0 - b + b * blk_dl[first + j] / avgdl)))
            if bound > best:
                best = bound
        impact[t] = best * count[t]
    order = np.argsort(impact, kind="mergesort")
    prefix = np.zeros(m + 1)
    for i in range(m):
        prefix[i + 1] = prefix[i] + impact[order[i]]
    length = np.zeros(m, dtype=np.int64)
    for t in range(m):
        length[t] = spans[t, 1] + spans[t, 3]
    pos = np.zeros(m, dtype=np.int64)  # cursor into each token's list (base, then later postings)
    heap = np.empty(k, dtype=np.float64)  # the k best so far (a min-heap of scores)
    n_heap = 0
    cap = 4 * k + 64
    out_rows = np.empty(cap, dtype=np.int64)
    out_scores = np.empty(cap, dtype=np.float64)
    n_out = 0
    theta = 0.0  # the k-th score once k rows were scored
    first_ess = 0  # order[first_ess:] are essential
    total = prefix[m]
    ok_block = np.full(m, -1, dtype=np.int64)  # the base block of each token last found worth reading
    term = np.full(m, -1.0)  # the candidate's term of each essential token (-1: not in its list)
    while True:
        while first_ess < m and n_heap == k and prefix[first_ess + 1] * (1.0 + MARGIN) < theta:
            term[order[first_ess]] = -1.0  # no longer essential: its terms are read in the score loop
            first_ess += 1
        if first_ess >= m:
            break
        # the next candidate: the smallest row under an essential cursor — once k rows are
        # held, after skipping whole base blocks that cannot reach the k-th score
        row = big
        for e in range(first_ess, m):
            t = order[e]
            if n_heap == k:
                others = total - impact[t]
                while pos[t] < spans[t, 1]:
                    blk = pos[t] // BLOCK
                    if blk == ok_block[t]:  # judged on entering it (a later, higher k-th score may skip less)
                        break
                    j = spans[t, 4] + blk
                    mt = blk_tf[j]
                    bb = idf[t] * (mt / (mt + k1 * (1.0 - b + b * blk_dl[j] / avgdl))) * count[t]
                    if (bb + others) * (1.0 + MARGIN) < theta:
                        pos[t] = min((blk + 1) * BLOCK, spans[t, 1])
                    else:
                        ok_block[t] = blk
                        break
            p = pos[t]
            if p < length[t]:
                r = b_rows[spans[t, 0] + p] if p < spans[t, 1] else d_rows[spans[t, 2] + p - spans[t, 1]]
                if r < row:
                    row = r
        if row == big:
            break
        if use_mask and not mask[row]:
            for e in range(first_ess, m):
                t = order[e]
                p = pos[t]
                if p < length[t]:
                    r = b_rows[spans[t, 0] + p] if p < spans[t, 1] else d_rows[spans[t, 2] + p - spans[t, 1]]
                    if r == row:
                        pos[t] += 1
            continue
        nrm = norm[row]
        # bound: the essential tokens' actual terms (kept for the score), the others' block bounds
        bound = 0.0
        for e in range(first_ess, m):
            t = order[e]
            p = pos[t]
            term[t] = -1.0
            if p < length[t]:
                if p < spans[t, 1]:
                    r = b_rows[spans[t, 0] + p]
                    f = float(b_tf[spans[t, 0] + p])
                else:
                    r = d_rows[spans[t, 2] + p - spans[t, 1]]
                    f = float(d_tf[spans[t, 2] + p - spans[t, 1]])
                if r == row:
                    term[t] = idf[t] * (f / (f + nrm))
                    bound += term[t] * count[t]
        if n_heap == k:
            rest = 0.0
            for e in range(first_ess):
                t = order[e]
                n = length[t]
                nb_t = spans[t, 1]
                p = pos[t]
                # gallop forward to the first row >= row
                if p < n:
                    r = b_rows[spans[t, 0] + p] if p < nb_t else d_rows[spans[t, 2] + p - nb_t]
                    if r < row:
                        step = 1
                        lo = p
                        hi = p + 1
                        while hi < n:
                            rh = b_rows[spans[t, 0] + hi] if hi < nb_t else d_rows[spans[t, 2] + hi - nb_t]
                            if rh >= row:
                                break
                            lo = hi
                            step *= 2
                            hi = p + step
                        if hi > n:
                            hi = n
                        while lo < hi:
                            mid = (lo + hi) // 2
                            rm = b_rows[spans[t, 0] + mid] if mid < nb_t else d_rows[spans[t, 2] + mid - nb_t]
                            if rm < row:
                                lo = mid + 1
                            else:
                                hi = mid
                        p = lo
                        pos[t] = p
                if p < n:
                    r = b_rows[spans[t, 0] + p] if p < nb_t else d_rows[spans[t, 2] + p - nb_t]
                    if r == row:
                        if p < nb_t:
                            j = spans[t, 4] + p // BLOCK
                            mt = blk_tf[j]
                            rest += idf[t] * (mt / (mt + k1 * (1.0 - b + b * blk_dl[j] / avgdl))) * count[t]
                        else:
                            rest += d_max[t] * count[t]
            if (bound + rest) * (1.0 + MARGIN) < theta:
                for e in range(first_ess, m):
                    t = order[e]
                    p = pos[t]
                    if p < length[t]:
                        r = b_rows[spans[t, 0] + p] if p < spans[t, 1] else d_rows[spans[t, 2] + p - spans[t, 1]]
                        if r == row:
                            pos[t] += 1
                continue
        else:
            for e in range(first_ess):
                t = order[e]
                n = length[t]
                nb_t = spans[t, 1]
                p = pos[t]
                while p < n:
                    r = b_rows[spans[t, 0] + p] if p < nb_t else d_rows[spans[t, 2] + p - nb_t]
                    if r >= row:
                        break
                    p += 1
                pos[t] = p
        # the exact score, in query order, from 0.0
        score = 0.0
        for j in range(len(occ)):
            t = occ[j]
            if term[t] >= 0.0:  # an essential token's term, computed above
                score += term[t]
                continue
            p = pos[t]
            if p < length[t]:
                if p < spans[t, 1]:
                    r = b_rows[spans[t, 0] + p]
                    f = float(b_tf[spans[t, 0] + p])
                else:
                    r = d_rows[spans[t, 2] + p - spans[t, 1]]
                    f = float(d_tf[spans[t, 2] + p - spans[t, 1]])
                if r == row:
                    score += idf[t] * (f / (f + nrm))
        for e in range(first_ess, m):
            t = order[e]
            p = pos[t]
            if p < length[t]:
                r = b_rows[spans[t, 0] + p] if p < spans[t, 1] else d_rows[spans[t, 2] + p - spans[t, 1]]
                if r == row:
                    pos[t] += 1
        if n_heap == k and score < theta:
            continue
        # keep it, and raise the k-th score
        if n_heap < k:
            heap[n_heap] = score
            i = n_heap
            n_heap += 1
            while i > 0:
                parent = (i - 1) // 2
                if heap[parent] <= heap[i]:
                    break
                heap[parent], heap[i] = heap[i], heap[parent]
                i = parent
        elif score > heap[0]:
            heap[0] = score
            i = 0
            while True:
                left = 2 * i + 1
                small = i
                if left < k and heap[left] < heap[small]:
                    small = left
                if left + 1 < k and heap[left + 1] < heap[small]:
                    small = left + 1
                if small == i:
                    break
                heap[small], heap[i] = heap[i], heap[small]
                i = small
        if n_heap == k:
            theta = heap[0]
        if n_out == cap:  # drop what fell below the k-th score; grow if ties fill it
            w = 0
            for i in range(n_out):
                if out_scores[i] >= theta:
                    out_rows[w] = out_rows[i]
                    out_scores[w] = out_scores[i]
                    w += 1
            n_out = w
            if n_out > cap // 2:
                cap *= 2
                grown_rows = np.empty(cap, dtype=np.int64)
                grown_scores = np.empty(cap, dtype=np.float64)
                grown_rows[:n_out] = out_rows[:n_out]
                grown_scores[:n_out] = out_scores[:n_out]
                out_rows = grown_rows
                out_scores = grown_scores
        out_rows[n_out] = row
        out_scores[n_out] = score
        n_out += 1
    keep = out_scores[:n_out] >= theta
    return out_rows[:n_out][keep], out_scores[:n_out][keep]
