"""The compiled top-k kernel of the in-process lexical index (``numba``; the ``[fast]`` extra).

``InMemoryLexicalIndex`` keeps, per query token, the live rows holding it (ascending) and each
row's BM25 term — the same arrays its numpy paths use. :func:`top_k` answers an exact top-k
document at a time with **MaxScore** over those arrays, on bounds tight enough to skip most of
a common token's postings:

* every token's bound is the largest BM25 term in its list (``impact``), and each block of
  :data:`BLOCK` postings has its own (``block_max``), so a candidate is dropped as soon as its
  best possible score is below the current k-th score — the common tokens' blocks are only
  read for candidates that survive (**block-max** pruning);
* tokens sorted by bound: the smallest ones whose bounds sum below the k-th score are
  *non-essential* — a row holding only those cannot enter the top k, so only rows of the
  *essential* tokens are visited, and the non-essential lists are searched forward
  (galloping) for just those rows.

A surviving row is scored exactly as the reference does: its terms added one occurrence at a
time in query order, from 0.0, so the scores are bit-identical to ``score_rows`` and to
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

#: Postings per block of a term's list for block-max bounds.
BLOCK = 64
MARGIN = 1e-9

_kernel: Any = None


def available() -> bool:
    """Whether numba is installed (found, not imported: it loads at the first pruned query)."""
    if _kernel is not None:
        return True
    try:
        return importlib.util.find_spec("numba") is not None
    except (ImportError, ValueError):
        return False


def load() -> Any:
    """The compiled ``top_k`` function (compiled on first use, cached on disk by numba)."""
    global _kernel
    if _kernel is None:
        try:
            import numba
        except ImportError as exc:
            raise MissingDependencyError(
                "numba", "fast", "the compiled lexical kernel (or set RAGSPINE_LEXICAL_KERNEL=numpy)"
            ) from exc
        cache = os.access(os.path.dirname(__file__), os.W_OK) or bool(os.environ.get("NUMBA_CACHE_DIR"))
        _kernel = numba.njit(cache=cache, nogil=True)(_top_k)
    return _kernel


def block_maxima(terms: np.ndarray) -> np.ndarray:
    """The largest term of each :data:`BLOCK` consecutive postings."""
    n = len(terms)
    if n == 0:
        return np.zeros(0, dtype=np.float64)
    pad = (-n) % BLOCK
    padded = np.concatenate([terms, np.zeros(pad)]) if pad else terms
    return np.ascontiguousarray(padded.reshape(-1, BLOCK).max(axis=1))


class Arena:
    """The cached tokens' arrays, back to back: a token's rows (ascending), BM25 terms and
    block maxima are slices ``[start, start + n)`` (blocks ``[bstart, ...)``), so the kernel
    reads flat arrays. Bounded: past ``limit`` postings it starts over (the index's cache of
    per-token arrays is dropped the same way when the library changes)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.rows = np.zeros(0, dtype=np.int32)
        self.terms = np.zeros(0, dtype=np.float64)
        self.blocks = np.zeros(0, dtype=np.float64)
        self.used = 0
        self.bused = 0
        #: token id -> (start, n, block start, largest term)
        self.where: dict[int, tuple[int, int, int, float]] = {}

    def clear(self) -> None:
        """Forget every token (the arrays keep their capacity)."""
        self.where.clear()
        self.used = self.bused = 0

    def add(self, tid: int, rows: np.ndarray, terms: np.ndarray) -> tuple[int, int, int, float]:
        n = len(rows)
        blocks = block_maxima(terms)
        if self.used + n > self.limit and self.where:
            self.clear()
        self.rows = _room(self.rows, self.used + n)
        self.terms = _room(self.terms, self.used + n)
        self.blocks = _room(self.blocks, self.bused + len(blocks))
        self.rows[self.used : self.used + n] = rows
        self.terms[self.used : self.used + n] = terms
        self.blocks[self.bused : self.bused + len(blocks)] = blocks
        hit = (self.used, n, self.bused, float(terms.max()) if n else 0.0)
        self.used += n
        self.bused += len(blocks)
        self.where[tid] = hit
        return hit


def _room(arr: np.ndarray, size: int) -> np.ndarray:
    if size <= len(arr):
        return arr
    grown = np.zeros(max(size, 2 * len(arr), 1024), dtype=arr.dtype)
    grown[: len(arr)] = arr
    return grown


def _top_k(rows_a, terms_a, blocks_a, starts, lens, bstarts, occ, impact, k, mask, use_mask):  # type: ignore[no-untyped-def]
    """Exact top ``k`` (every tie with the k-th included) over the distinct tokens whose
    postings are ``rows_a/terms_a[starts[i] : starts[i] + lens[i]]`` (block maxima from
    ``blocks_a[bstarts[i]]``), ``occ`` the query's occurrences in order (indexes of distinct
    tokens), ``impact`` each distinct token's largest term times its occurrences.
    Returns ``(rows, scores)``, unordered."""
    m = len(starts)
    # distinct tokens by bound, ascending; prefix sums decide the essential ones
    order = np.argsort(impact, kind="mergesort")
    prefix = np.zeros(m + 1)
    for i in range(m):
        prefix[i + 1] = prefix[i] + impact[order[i]]
    count = np.zeros(m, dtype=np.int64)
    for j in range(len(occ)):
        count[occ[j]] += 1
    pos = np.zeros(m, dtype=np.int64)  # cursor into each token's list
    # the k best so far (a min-heap of scores) and every row that scored >= the k-th then
    heap = np.empty(k, dtype=np.float64)
    n_heap = 0
    cap = 4 * k + 64
    out_rows = np.empty(cap, dtype=np.int64)
    out_scores = np.empty(cap, dtype=np.float64)
    n_out = 0
    theta = 0.0  # the k-th score once k rows were scored
    first_ess = 0  # order[first_ess:] are essential
    big = np.iinfo(np.int64).max
    while True:
        while first_ess < m and n_heap == k and prefix[first_ess + 1] * (1.0 + MARGIN) < theta:
            first_ess += 1
        if first_ess >= m:
            break
        # the next candidate: the smallest row under an essential cursor
        row = big
        for e in range(first_ess, m):
            t = order[e]
            if pos[t] < lens[t]:
                r = rows_a[starts[t] + pos[t]]
                if r < row:
                    row = r
        if row == big:
            break
        if use_mask and not mask[row]:
            for e in range(first_ess, m):
                t = order[e]
                if pos[t] < lens[t] and rows_a[starts[t] + pos[t]] == row:
                    pos[t] += 1
            continue
        # bound: the essential tokens' actual terms, the others' block maxima
        bound = 0.0
        for e in range(first_ess, m):
            t = order[e]
            if pos[t] < lens[t] and rows_a[starts[t] + pos[t]] == row:
                bound += terms_a[starts[t] + pos[t]] * count[t]
        if n_heap == k:
            rest = 0.0
            for e in range(first_ess):
                t = order[e]
                base = starts[t]
                p = pos[t]
                n = lens[t]
                if p < n and rows_a[base + p] < row:  # gallop forward to the first row >= row
                    step = 1
                    lo = p
                    hi = p + 1
                    while hi < n and rows_a[base + hi] < row:
                        lo = hi
                        step *= 2
                        hi = p + step
                    if hi > n:
                        hi = n
                    while lo < hi:
                        mid = (lo + hi) // 2
                        if rows_a[base + mid] < row:
                            lo = mid + 1
                        else:
                            hi = mid
                    p = lo
                    pos[t] = p
                if p < n and rows_a[base + p] == row:
                    rest += blocks_a[bstarts[t] + p // BLOCK] * count[t]
            if (bound + rest) * (1.0 + MARGIN) < theta:
                for e in range(first_ess, m):
                    t = order[e]
                    if pos[t] < lens[t] and rows_a[starts[t] + pos[t]] == row:
                        pos[t] += 1
                continue
        else:
            for e in range(first_ess):
                t = order[e]
                base = starts[t]
                p = pos[t]
                n = lens[t]
                while p < n and rows_a[base + p] < row:
                    p += 1
                pos[t] = p
        # the exact score, in query order, from 0.0
        score = 0.0
        for j in range(len(occ)):
            t = occ[j]
            p = pos[t]
            if p < lens[t] and rows_a[starts[t] + p] == row:
                score += terms_a[starts[t] + p]
        for e in range(first_ess, m):
            t = order[e]
            if pos[t] < lens[t] and rows_a[starts[t] + pos[t]] == row:
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
