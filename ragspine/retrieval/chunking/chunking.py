"""Paragraph chunker with a character budget (no tokenizer, offline, deterministic).

Every chunk's ``text`` is ``source[char_start:char_end]`` — a contiguous substring of the
document — and ``source_locator`` points at exactly that span (RFC 5147 ``#char=start,end``),
so citations stay honest.

Algorithm:

1. Paragraphs are runs of text separated by blank lines (surrounding whitespace trimmed).
2. Consecutive paragraphs are packed into one chunk while the span fits ``max_chars``. A new
   packed chunk starts up to ``overlap_chars`` before its first paragraph (snapped forward to
   a word start when the overlap region has whitespace), so adjacent chunks share context.
3. A paragraph longer than ``max_chars`` is split at sentence terminators ``。！？；.!?;`` and
   its sentences packed greedily; a sentence still longer than ``max_chars`` is hard-cut.
   These sub-chunks never overlap each other.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Mapping

from ragspine.retrieval.metadata import Scalar, validate_metadata
from ragspine.retrieval.sensitivity import DEFAULT_SENSITIVITY

DEFAULT_CHUNK_CHARS = 480
DEFAULT_OVERLAP_CHARS = 80
SENTENCE_TERMINATORS = "。！？；.!?;"

_PARAGRAPH_BREAK = re.compile(r"\n[^\S\n]*\n\s*")
_SENTENCE_END = re.compile("[" + re.escape(SENTENCE_TERMINATORS) + r"]+[\"'”’」』)）\]]*")


@dataclass(frozen=True)
class Chunk:
    """One retrievable piece of a document, with its provenance."""

    chunk_id: str
    doc_id: str
    text: str
    title: str = ""
    source_locator: str = ""
    ordinal: int = 0
    char_start: int = 0
    char_end: int = 0
    metadata: Mapping[str, Scalar] = field(default_factory=dict)
    sensitivity: str = DEFAULT_SENSITIVITY
    parent_id: str = ""
    heading: str = ""
    window_text: str = ""
    parent_locator: str = ""
    #: where the chunk's lines are on its PDF's (or OCR'd image's) pages: compact JSON of
    #: ``[page, left, bottom, right, top(, 1 when OCR'd)]`` per line (:mod:`ragspine.retrieval.boxes`);
    #: ``""`` for every other document. Never in a snippet unless an answer asks for boxes.
    boxes: str = ""

    # The seed's first-class metadata fields, read from ``metadata``.
    @property
    def topic(self) -> str:
        return _as_text(self.metadata.get("topic"))

    @property
    def entity(self) -> str:
        return _as_text(self.metadata.get("entity"))

    @property
    def geography(self) -> str:
        return _as_text(self.metadata.get("geography"))

    @property
    def period(self) -> str:
        return _as_text(self.metadata.get("period"))

    @property
    def language(self) -> str:
        return _as_text(self.metadata.get("language"))


def _as_text(value: object) -> str:
    return "" if value is None else str(value)


def make_locator(source: str, start: int, end: int) -> str:
    """RFC 5147 text fragment: ``source#char=start,end`` (end exclusive)."""
    return f"{source}#char={start},{end}"


def chunk_id_for(doc_id: str, ordinal: int) -> str:
    return f"{doc_id}#{ordinal}"


def chunk_document(
    text: str,
    doc_id: str = "doc",
    *,
    title: str = "",
    metadata: Mapping[str, object] | None = None,
    sensitivity: str = DEFAULT_SENSITIVITY,
    source: str | None = None,
    source_offset: int = 0,
    max_chars: int = DEFAULT_CHUNK_CHARS,
    overlap_chars: int = DEFAULT_OVERLAP_CHARS,
    keep_units: bool = False,
) -> list[Chunk]:
    """Split ``text`` into chunks of at most ``max_chars`` characters.

    ``source`` names the document in locators (default ``doc_id``); ``source_offset`` is
    added to every offset when ``text`` is a slice of a larger file (e.g. after front matter).
    ``keep_units``: every paragraph is its own chunk (see :func:`pack_spans`).
    """
    check_budget(max_chars, overlap_chars)
    meta = validate_metadata(metadata)
    where = source if source is not None else doc_id
    chunks: list[Chunk] = []
    for start, end in chunk_spans(text, max_chars=max_chars, overlap_chars=overlap_chars, keep_units=keep_units):
        ordinal = len(chunks)
        chunks.append(
            Chunk(
                chunk_id=chunk_id_for(doc_id, ordinal),
                doc_id=doc_id,
                text=text[start:end],
                title=title,
                source_locator=make_locator(where, start + source_offset, end + source_offset),
                ordinal=ordinal,
                char_start=start + source_offset,
                char_end=end + source_offset,
                metadata=dict(meta),
                sensitivity=sensitivity,
            )
        )
    return chunks


#: ``RAGSPINE_CHUNK_PACKING``: ``pack`` a section's units (paragraphs; a statute's lines) up to
#: the budget, or keep every ``unit`` its own chunk.
PACKINGS = ("pack", "unit")


def check_packing(packing: str) -> str:
    """``packing`` if it is one of :data:`PACKINGS`, else a ``ValueError`` naming them."""
    if packing not in PACKINGS:
        raise ValueError(f"packing must be one of {', '.join(PACKINGS)}, got {packing!r}")
    return packing


def check_budget(max_chars: int, overlap_chars: int) -> None:
    """The budget rules every chunker shares: ``ValueError`` naming the bad option."""
    if max_chars <= 0:
        raise ValueError(f"max_chars must be > 0, got {max_chars}")
    if overlap_chars < 0:
        raise ValueError(f"overlap_chars must be >= 0, got {overlap_chars}")
    if overlap_chars >= max_chars:
        raise ValueError(
            f"overlap_chars ({overlap_chars}) must be smaller than max_chars ({max_chars})"
        )


def chunk_spans(text: str, *, max_chars: int, overlap_chars: int, keep_units: bool = False) -> list[tuple[int, int]]:
    """The ``(start, end)`` spans :func:`chunk_document` cuts, in document order."""
    return pack_spans(text, paragraph_spans(text), max_chars=max_chars, overlap_chars=overlap_chars, keep_units=keep_units)


def pack_spans(
    text: str, units: Iterable[tuple[int, int]], *, max_chars: int, overlap_chars: int, keep_units: bool = False
) -> list[tuple[int, int]]:
    """Steps 2 and 3 of the module's algorithm over ``units``: trimmed, ordered, disjoint
    spans of ``text`` (the paragraphs, for :func:`chunk_spans`).

    ``keep_units`` (``RAGSPINE_CHUNK_PACKING=unit``): no packing — every unit is its own
    chunk, and a unit over ``max_chars`` is split exactly as packing splits it."""
    spans: list[tuple[int, int]] = []
    if keep_units:
        for p_start, p_end in units:
            if p_end - p_start > max_chars:
                spans.extend(_split_oversize(text, p_start, p_end, max_chars))
            else:
                spans.append((p_start, p_end))
        return spans
    current: tuple[int, int] | None = None  # packed units being accumulated
    last_packed_end: int | None = None  # end of the previous packed chunk (overlap source)

    for p_start, p_end in units:
        if p_end - p_start > max_chars:
            if current is not None:
                spans.append(current)
                current = None
            spans.extend(_split_oversize(text, p_start, p_end, max_chars))
            last_packed_end = None
            continue
        if current is not None and p_end - current[0] <= max_chars:
            current = (current[0], p_end)
            continue
        if current is not None:
            spans.append(current)
            last_packed_end = current[1]
        start = p_start
        if last_packed_end is not None and overlap_chars > 0:
            start = _overlap_start(text, last_packed_end, p_start, p_end, max_chars, overlap_chars)
        current = (start, p_end)
    if current is not None:
        spans.append(current)
    return spans


def paragraph_spans(text: str) -> Iterator[tuple[int, int]]:
    """Non-empty paragraphs as trimmed ``(start, end)`` spans."""
    pos = 0
    for match in _PARAGRAPH_BREAK.finditer(text):
        yield from _trimmed(text, pos, match.start())
        pos = match.end()
    yield from _trimmed(text, pos, len(text))


def _trimmed(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if end > start:
        yield start, end


def _overlap_start(
    text: str, prev_end: int, p_start: int, p_end: int, max_chars: int, overlap_chars: int
) -> int:
    start = max(prev_end - overlap_chars, p_end - max_chars)
    if start >= p_start:
        return p_start
    region = text[start:prev_end]
    # Start at a word boundary when the overlap region has whitespace (not for CJK runs).
    cut = next((i for i, ch in enumerate(region) if ch.isspace()), None)
    if cut is not None and start > 0 and not text[start - 1].isspace():
        start += cut
    while start < p_start and text[start].isspace():
        start += 1
    return start


def _split_oversize(text: str, start: int, end: int, max_chars: int) -> list[tuple[int, int]]:
    """Sentence-packed, then hard-cut, non-overlapping sub-spans of one long paragraph."""
    pieces: list[tuple[int, int]] = []
    for s_start, s_end in _sentence_spans(text, start, end):
        if s_end - s_start > max_chars:
            pieces.extend(hard_cut(text, s_start, s_end, max_chars))
        elif pieces and s_end - pieces[-1][0] <= max_chars:
            pieces[-1] = (pieces[-1][0], s_end)
        else:
            pieces.append((s_start, s_end))
    return pieces


def hard_cut(text: str, start: int, end: int, max_chars: int) -> list[tuple[int, int]]:
    """``text[start:end]`` cut every ``max_chars`` characters, each piece trimmed (none empty)."""
    pieces = []
    for cut in range(start, end, max_chars):
        piece = _hard_piece(text, cut, min(cut + max_chars, end))
        if piece[1] > piece[0]:
            pieces.append(piece)
    return pieces


def _hard_piece(text: str, start: int, end: int) -> tuple[int, int]:
    return next(iter(_trimmed(text, start, end)), (start, start))


def sentence_spans(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    """Trimmed sentences of ``text[start:end]``: cut after each run of terminators
    ``。！？；.!?;`` and the closing quotes or brackets that follow it."""
    return _sentence_spans(text, start, end)


def _sentence_spans(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    pos = start
    for match in _SENTENCE_END.finditer(text, start, end):
        yield from _trimmed(text, pos, match.end())
        pos = match.end()
    yield from _trimmed(text, pos, end)


class ParagraphChunker:
    """The seed's chunker as a :class:`~ragspine.retrieval.chunking.base.Chunker`
    (``RAGSPINE_CHUNKER=default``): :func:`chunk_document` with one budget."""

    name = "default"

    def __init__(
        self, *, max_chars: int = DEFAULT_CHUNK_CHARS, overlap_chars: int = DEFAULT_OVERLAP_CHARS, packing: str = "pack"
    ) -> None:
        chunk_document("", max_chars=max_chars, overlap_chars=overlap_chars)  # the seed's ValueErrors, now
        self.max_chars = max_chars
        self.overlap_chars = overlap_chars
        self.packing = check_packing(packing)

    def __repr__(self) -> str:
        tail = f", packing={self.packing!r}" if self.packing != "pack" else ""
        return f"ParagraphChunker(max_chars={self.max_chars}, overlap_chars={self.overlap_chars}{tail})"

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
        return chunk_document(
            text, doc_id, title=title, metadata=metadata, sensitivity=sensitivity, source=source,
            source_offset=source_offset, max_chars=self.max_chars, overlap_chars=self.overlap_chars,
            keep_units=self.packing == "unit",
        )
