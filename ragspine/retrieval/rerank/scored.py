"""``ScoreReranker``: a :class:`Reranker` from a model that scores (query, passage) pairs.

``PairScorer.score(query, texts) -> scores`` (one float per text, higher = more relevant) is
all a model reranker implements; this class orders by it and records it:

* the order is by score, ties in the fused order (a stable sort), so equal scores never
  shuffle results;
* each reordered result carries its score as ``scores["rerank"]``; ``fused`` and every
  other score stay as they were;
* a scorer with ``reads(query)`` that says no (an English model, a Chinese query) leaves the
  results as they are: no ``rerank`` score, the fused order;
* a wrong number of scores or a non-finite one is an error — the caller
  (:func:`~ragspine.retrieval.rerank.base.rerank_open_subset`) then keeps the fused order.

The text a model sees is :func:`candidate_text`: the chunk's title and its text. It only ever
sees the open subset of the head (RESTRICTED results never reach ``rerank``), and at index time
(:meth:`ScoreReranker.index`) only open chunks.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Protocol, Sequence, runtime_checkable

from ragspine.retrieval.sensitivity import is_restricted
from ragspine.retrieval.types import RetrievalResult

if TYPE_CHECKING:
    from ragspine.retrieval.chunking.chunking import Chunk


@runtime_checkable
class PairScorer(Protocol):
    def score(self, query: str, texts: Sequence[str]) -> Sequence[float]:
        """One relevance score per text, in order."""
        ...


def candidate_text(result: RetrievalResult) -> str:
    """What a model reranker reads of a result: ``title`` + newline + ``text`` (the text alone
    when there is no title or the text already starts with it)."""
    return chunk_text(result.chunk)


def chunk_text(chunk: Chunk) -> str:
    """:func:`candidate_text` of a stored chunk."""
    text, title = str(chunk.text), str(chunk.title or "").strip()
    if not title or text.lstrip().startswith(title):
        return text
    return f"{title}\n{text}"


class ScoreReranker:
    """See the module docstring; ``name`` is the registry name (``cross_encoder``, ...)."""

    def __init__(self, scorer: PairScorer, *, name: str) -> None:
        self.scorer = scorer
        self.name = name

    def __repr__(self) -> str:
        return f"ScoreReranker({self.scorer!r}, name={self.name!r})"

    def rerank(self, query: str, results: list[RetrievalResult]) -> list[RetrievalResult]:
        reads = getattr(self.scorer, "reads", None)
        if not results or (reads is not None and not reads(query)):
            return list(results)  # a model that cannot read the query keeps the fused order
        scores = [float(s) for s in self.scorer.score(query, [candidate_text(r) for r in results])]
        if len(scores) != len(results):
            raise ValueError(f"{self.name}: {len(scores)} scores for {len(results)} results")
        if not all(math.isfinite(s) for s in scores):
            raise ValueError(f"{self.name}: a non-finite score")
        order = sorted(range(len(results)), key=lambda i: -scores[i])  # stable: ties keep the fused order
        return [results[i].with_scores(rerank=scores[i]) for i in order]


@runtime_checkable
class ForgettingScorer(PairScorer, Protocol):
    """A scorer that keeps per-candidate work in a store as it scores (ColBERT's token states)."""

    def forget(self, texts: Sequence[str]) -> None:
        """Drop the stored work of ``texts``."""
        ...


@runtime_checkable
class StoringScorer(ForgettingScorer, Protocol):
    """A scorer that also computes per-candidate work at index time (SPLADE's term weights)."""

    def index(self, texts: Sequence[str]) -> int:
        """Compute and store what the store lacks; how many texts were computed."""
        ...


class StoringScoreReranker(ScoreReranker):
    """A :class:`ScoreReranker` over a :class:`ForgettingScorer`: a
    :class:`~ragspine.retrieval.rerank.base.StoringReranker`, which forgets a deleted library's chunks."""

    scorer: ForgettingScorer

    def __init__(self, scorer: ForgettingScorer, *, name: str) -> None:
        super().__init__(scorer, name=name)

    def forget(self, chunks: Sequence[Any]) -> None:
        """Drop what was stored for ``chunks``."""
        self.scorer.forget([chunk_text(c) for c in chunks])


class IndexingScoreReranker(StoringScoreReranker):
    """A :class:`StoringScoreReranker` over a :class:`StoringScorer`: an
    :class:`~ragspine.retrieval.rerank.base.IndexingReranker`, which the pipeline hands every
    chunk it writes."""

    scorer: StoringScorer

    def __init__(self, scorer: StoringScorer, *, name: str) -> None:
        super().__init__(scorer, name=name)

    def index(self, chunks: Sequence[Any]) -> int:
        """Compute and store the work of the open ``chunks`` (RESTRICTED ones are never sent);
        how many texts were computed."""
        return int(self.scorer.index([chunk_text(c) for c in chunks if not is_restricted(c.sensitivity)]))
