"""``Snippet``: the dict a link exit returns for one result — its keys, exactly.

Built by :func:`~ragspine.retrieval.link.narrative_link.to_snippet` in this key order (the JSON
of ``/v1/retrieve`` follows it byte for byte): the chunk's ``text``, ``doc_id``, ``title``,
``source_locator``, ``chunk_id``, ``sensitivity``, ``library_id``, ``version``, ``valid_as_of``,
``metadata``, ``scores``, then the seed's five metadata fields at top level as text
(:data:`~ragspine.retrieval.metadata.STANDARD_FIELDS`), then the optional keys below.
"""

from __future__ import annotations

from typing import Any, Mapping, TypedDict, cast

__all__ = ["Scores", "Snippet", "page_label", "snippet_pages", "with_fused"]


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
    found only after the filters were dropped; ``page`` (1-based) for a chunk of a paged
    document (PDF, PowerPoint, Excel: :func:`snippet_pages`), with ``page_end`` when its text
    runs onto a later page — never for text, Markdown, CSV or HTML; ``boxes`` only when an
    answer asks for them (:mod:`ragspine.retrieval.boxes`: a PDF's lines the snippet covers)."""

    page: int
    page_end: int
    boxes: list[dict[str, Any]]
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


def snippet_pages(metadata: Mapping[str, Any]) -> tuple[int, int] | None:
    """``(page, page_end)`` of a chunk of a paged document (PDF pages, slides, sheets): the pair
    :func:`ragspine.documents.chunk_source` writes into its metadata — both integers, in order;
    ``None`` otherwise (text, Markdown, CSV, HTML), so those snippets keep their keys."""
    page, end = metadata.get("page"), metadata.get("page_end")
    if type(page) is int and type(end) is int and 1 <= page <= end:
        return page, end
    return None


def page_label(page: int, page_end: int | None = None) -> str:
    """``page 3`` or ``pages 3-4``: where a person finds a passage."""
    return f"pages {page}-{page_end}" if page_end is not None and page_end != page else f"page {page}"
