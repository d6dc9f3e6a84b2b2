"""``SpanChunker``: the provenance contract in one place, for chunkers that choose spans.

A span chunker only says *which* spans of the document become chunks (``pieces``: ``(start,
end, extra)`` in document order, offsets into the text as given); this base builds the
:class:`~ragspine.retrieval.chunking.chunking.Chunk` objects exactly as
:func:`~ragspine.retrieval.chunking.chunking.chunk_document` does: ``text == document[start:
end]``, offsets shifted by ``source_offset``, ``source_locator`` over that span, ids
``chunk_id_for(doc_id, ordinal)`` with ordinals ``0..n-1``, title, validated metadata (a copy
per chunk) and sensitivity on every chunk. ``extra`` sets the optional fields (``heading``,
``parent_id``, ``window_text``, ``parent_locator``); :meth:`Doc.extent` builds the window
pair so that ``window_text`` is always the document at ``parent_locator``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, TypedDict

from ragspine.retrieval.chunking.chunking import (
    DEFAULT_CHUNK_CHARS,
    DEFAULT_OVERLAP_CHARS,
    Chunk,
    check_budget,
    chunk_id_for,
    make_locator,
)
from ragspine.retrieval.metadata import validate_metadata
from ragspine.retrieval.sensitivity import DEFAULT_SENSITIVITY


class ChunkExtra(TypedDict, total=False):
    """The optional :class:`Chunk` fields a chunker may set per chunk."""

    heading: str
    parent_id: str
    window_text: str
    parent_locator: str


Piece = tuple[int, int, ChunkExtra]


@dataclass(frozen=True)
class Doc:
    """The document being chunked: its text and how its locators are written."""

    text: str
    doc_id: str
    where: str  # the locators' source name (``source``, else ``doc_id``)
    offset: int = 0  # ``source_offset``: added to every offset of ``text``

    def locator(self, start: int, end: int) -> str:
        """The locator of ``text[start:end]`` (offsets into ``text``)."""
        return make_locator(self.where, start + self.offset, end + self.offset)

    def extent(self, start: int, end: int, text: str | None = None) -> ChunkExtra:
        """``window_text`` and ``parent_locator`` of the extent ``text[start:end]``
        (``text``: that slice, when the caller already holds it)."""
        window = self.text[start:end] if text is None else text
        return {"window_text": window, "parent_locator": self.locator(start, end)}


class SpanChunker:
    """Base of the span chunkers (see the module docstring); subclasses define ``pieces``."""

    name = ""

    def __init__(self, *, max_chars: int = DEFAULT_CHUNK_CHARS, overlap_chars: int = DEFAULT_OVERLAP_CHARS) -> None:
        check_budget(max_chars, overlap_chars)
        self.max_chars = max_chars
        self.overlap_chars = overlap_chars

    def __repr__(self) -> str:
        return f"{type(self).__name__}(max_chars={self.max_chars}, overlap_chars={self.overlap_chars})"

    def pieces(self, doc: Doc) -> Iterable[Piece]:
        """The chunks' spans in document order: trimmed, non-empty, at most ``max_chars``."""
        raise NotImplementedError

    def chunk(
        self,
        text: str,
        doc_id: str,
        *,
        title: str = "",
        metadata: Mapping[str, object] | None = None,
        sensitivity: str = DEFAULT_SENSITIVITY,
        source: str | None = None,
        source_offset: int = 0,
    ) -> list[Chunk]:
        """See :class:`~ragspine.retrieval.chunking.base.Chunker`."""
        meta = validate_metadata(metadata)
        doc = Doc(text, doc_id, source if source is not None else doc_id, source_offset)
        chunks: list[Chunk] = []
        for start, end, extra in self.pieces(doc):
            ordinal = len(chunks)
            chunks.append(
                Chunk(
                    chunk_id=chunk_id_for(doc_id, ordinal),
                    doc_id=doc_id,
                    text=text[start:end],
                    title=title,
                    source_locator=doc.locator(start, end),
                    ordinal=ordinal,
                    char_start=start + source_offset,
                    char_end=end + source_offset,
                    metadata=dict(meta),
                    sensitivity=sensitivity,
                    **extra,
                )
            )
        return chunks
