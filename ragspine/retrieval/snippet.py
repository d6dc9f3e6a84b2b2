"""``Snippet``: the dict a link exit returns for one result — its keys, exactly.

Built by :func:`~ragspine.retrieval.link.narrative_link.to_snippet` in this key order (the JSON
of ``/v1/retrieve`` follows it byte for byte): the chunk's ``text``, ``doc_id``, ``title``,
``source_locator``, ``chunk_id``, ``sensitivity``, ``library_id``, ``version``, ``valid_as_of``,
``metadata``, ``scores``, then the seed's five metadata fields at top level as text
(:data:`~ragspine.retrieval.metadata.STANDARD_FIELDS`), then the optional keys below.
"""

from __future__ import annotations

from typing import Any, TypedDict, cast

__all__ = ["Scores", "Snippet", "with_fused"]


class _Scores(TypedDict):
    bm25: float
    vector: float
    fused: float


class Scores(_Scores, total=False):
    """The legs' best scores of the chunk, its fused score, and the reranker's when one ran."""

    rerank: float


class _Snippet(TypedDict):
    text: str
    doc_id: str
    title: str
    source_locator: str
    chunk_id: str
    sensitivity: str
    library_id: str
    version: int
    valid_as_of: str
    metadata: dict[str, Any]
    scores: Scores
    topic: str
    entity: str
    geography: str
    period: str
    language: str


class Snippet(_Snippet, total=False):
    """One result of a link exit (see the module docstring). The optional keys:
    ``parent_id``/``heading`` when the chunker set them; ``parent_locator`` when the chunk has a
    parent or window text, with ``prompt_text`` (that text, or a compression, for generation
    only), ``prompt_text_in`` (the ``chunk_id`` of the snippet above carrying the same block)
    or ``expansion_withheld`` (it overlaps RESTRICTED text); ``filters_dropped`` when it was
    found only after the filters were dropped."""

    parent_id: str
    heading: str
    parent_locator: str
    expansion_withheld: bool
    prompt_text: str
    prompt_text_in: str
    filters_dropped: bool


def with_fused(snippet: Snippet, fused: float) -> Scores:
    """A copy of ``snippet``'s scores with ``fused`` as its fused score (in the same place)."""
    return cast(Scores, {**snippet.get("scores", {}), "fused": fused})
