"""The ``Reranker`` role, and the RESTRICTED exit #1 every reranker goes through.

``rerank(query, results) -> results`` returns the same results in a new order. Callers never
call it directly: :func:`rerank_open_subset` hands a reranker only the non-RESTRICTED results
of the head (a model reranker is a prompt sink too), keeps RESTRICTED ones at their
positions, and falls back to the fused order on any failure. Rerankers are chosen by name
(``RAGSPINE_RERANKER``, :func:`make_reranker`).
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Protocol, Sequence, TypeVar, runtime_checkable

from ragspine.retrieval.sensitivity import is_restricted
from ragspine.retrieval.types import RetrievalResult

log = logging.getLogger(__name__)

T = TypeVar("T")

#: Fused candidates a reranker sees (``RAGSPINE_RERANK_DEPTH``); ``top_k`` are kept after it.
DEFAULT_RERANK_DEPTH = 50


@runtime_checkable
class Reranker(Protocol):
    def rerank(self, query: str, results: list[RetrievalResult]) -> list[RetrievalResult]:
        """The same results in a new order (it may raise: the caller keeps the fused order)."""
        ...


@runtime_checkable
class StoringReranker(Protocol):
    """A reranker that keeps per-candidate work in a store (SPLADE's expansions, ColBERT's token
    states): a deleted library's chunks are handed to it to forget."""

    def forget(self, chunks: Sequence[Any]) -> None:
        """Drop what was stored for ``chunks``."""
        ...


@runtime_checkable
class IndexingReranker(StoringReranker, Protocol):
    """A storing reranker that does part of its work at index time (SPLADE's document expansion):
    the pipeline hands it every chunk it writes."""

    def index(self, chunks: Sequence[Any]) -> int:
        """Precompute and store what ``chunks`` need (RESTRICTED ones skipped); how many were computed."""
        ...


def _sensitivity(result: Any) -> str:
    return str(result.chunk.sensitivity)


def _identity(result: Any) -> Any:
    chunk = getattr(result, "chunk", None)
    return (chunk.chunk_id, chunk.version) if chunk is not None else id(result)


def rerank_open_subset(
    results: Sequence[T],
    reorder: Callable[[list[T]], list[T]],
    *,
    top_n: int | None = None,
    sensitivity: Callable[[T], str] = _sensitivity,
    identity: Callable[[T], Any] = _identity,
) -> list[T]:
    """Apply ``reorder`` to the non-RESTRICTED results of the head; RESTRICTED ones keep
    their positions and are never passed to ``reorder``. Any error → the input order.
    ``reorder`` may return new objects (a result with a ``rerank`` score) but never another
    set of results: ``identity`` (a result's chunk id and version) must match one to one."""
    results = list(results)
    head_len = len(results) if top_n is None else min(top_n, len(results))
    head, tail = results[:head_len], results[head_len:]
    open_pos = [i for i, r in enumerate(head) if not is_restricted(sensitivity(r))]
    if len(open_pos) < 2:
        return results
    open_items = [head[i] for i in open_pos]
    try:
        reordered = reorder(list(open_items))
    except Exception as exc:  # the judge/reranker failed: keep RRF order
        log.warning("reranker failed, keeping fused order: %s", exc)
        return results
    if sorted(map(identity, reordered)) != sorted(map(identity, open_items)):
        log.warning("reranker returned a different set of results, keeping fused order")
        return results
    merged = list(head)
    for pos, item in zip(open_pos, reordered, strict=True):
        merged[pos] = item
    return merged + tail


def make_reranker(spec: str = "none", **options: Any) -> Reranker | None:
    """The reranker named ``spec`` (the caller's ``RAGSPINE_RERANKER``; default ``none``, the
    seed's: no reranker); ``None`` for ``none``. ``options`` go to its factory (``provider=``
    for ``listwise``; ``settings=`` for the model rerankers' directories)."""
    from ragspine.registries import RERANKERS

    reranker: Reranker | None = RERANKERS.build(spec, **options)
    return reranker
