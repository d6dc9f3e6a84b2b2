"""``LayoutAwareChunker`` (``RAGSPINE_CHUNKER=layout``): sections at headings, then the default's
packing inside each section.

Contract:

1. The document is cut into *sections* at heading lines (:meth:`LayoutAwareChunker.headings`,
   by default Markdown ``#`` headings outside code fences, numbered ``1.`` / ``1.2`` /
   ``2.3.1 Title`` lines and Chinese ``一、`` / ``（一）`` / ``(一)`` lines; see
   :mod:`~ragspine.retrieval.chunking.headings`). A section runs from the start of its
   heading line to the start of the next one, trimmed; the text before the first heading is a
   section without a heading. The heading line belongs to its section: the section's first
   chunk starts with it.
2. Each section's units (:meth:`~LayoutAwareChunker.unit_spans`: its blank-line paragraphs)
   are packed (or, ``packing="unit"``, each kept its own chunk) with the default's budget,
   overlap and sentence-terminator split
   (:func:`~ragspine.retrieval.chunking.chunking.pack_spans` on the section's text, offsets
   shifted), so a chunk never crosses a section boundary and an overlap never reaches into the
   previous section.
3. Every chunk's ``heading`` is its section's heading text (Markdown marks removed; ``""``
   before the first heading). A section that is only its heading line (a heading followed
   directly by another) is one chunk of that line: never merged, never empty.
4. ``_child_extra(section, chunk_span)`` adds fields per chunk (nothing here; the
   parent-child chunkers set the parent). Presets override the heading detection
   (``heading_pattern`` or ``headings``) and, at most, ``unit_spans``.

Offsets are exact for ``\\n`` and ``\\r\\n`` line ends; time is linear in the document.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar, Iterable, Iterator

from ragspine.retrieval.chunking.assemble import ChunkExtra, Doc, Piece, SpanChunker
from ragspine.retrieval.chunking.chunking import (
    DEFAULT_CHUNK_CHARS,
    DEFAULT_OVERLAP_CHARS,
    check_packing,
    pack_spans,
    paragraph_spans,
)
from ragspine.retrieval.chunking.headings import (
    CHINESE,
    MARKDOWN,
    NUMBERED,
    fenced_ranges,
    heading_pattern,
    heading_text,
    in_a_list,
)


@dataclass(frozen=True)
class Section:
    """``doc.text[start:end]`` (trimmed, non-empty), opened by its heading line."""

    doc: Doc
    start: int
    end: int
    heading: str  # "" for the text before the first heading
    text: str  # doc.text[start:end]


class LayoutAwareChunker(SpanChunker):
    """See the module docstring."""

    name = "layout"
    #: Heading lines (see :mod:`~ragspine.retrieval.chunking.headings` for the conventions).
    heading_pattern: ClassVar[re.Pattern[str]] = heading_pattern(MARKDOWN, NUMBERED, CHINESE)

    def __init__(
        self, *, max_chars: int = DEFAULT_CHUNK_CHARS, overlap_chars: int = DEFAULT_OVERLAP_CHARS, packing: str = "pack"
    ) -> None:
        super().__init__(max_chars=max_chars, overlap_chars=overlap_chars)
        self.packing = check_packing(packing)

    def __repr__(self) -> str:
        tail = f", packing={self.packing!r}" if self.packing != "pack" else ""
        return f"{super().__repr__()[:-1]}{tail})"

    def headings(self, text: str) -> Iterator[tuple[int, str]]:
        """``(line start, heading text)`` of every heading line, in document order: the
        matches of ``heading_pattern`` outside Markdown code fences."""
        fences = fenced_ranges(text)
        i = 0
        for match in self.heading_pattern.finditer(text):
            pos = match.start()
            while i < len(fences) and fences[i][1] <= pos:
                i += 1
            if i < len(fences) and fences[i][0] <= pos:
                continue
            if in_a_list(text, pos):  # "1. Install" followed by "2. Run": a list, not sections
                continue
            yield pos, heading_text(match)

    def sections(self, doc: Doc) -> list[Section]:
        """The document's sections, in order (see the module docstring)."""
        text = doc.text
        bounds: list[tuple[int, str]] = [(0, "")]
        for pos, heading in self.headings(text):
            if pos == bounds[-1][0]:
                bounds[-1] = (pos, heading)
            elif pos > bounds[-1][0]:
                bounds.append((pos, heading))
        sections: list[Section] = []
        for i, (pos, heading) in enumerate(bounds):
            start, end = pos, bounds[i + 1][0] if i + 1 < len(bounds) else len(text)
            while start < end and text[start].isspace():
                start += 1
            while end > start and text[end - 1].isspace():
                end -= 1
            if end > start:
                sections.append(Section(doc, start, end, heading, text[start:end]))
        return sections

    def unit_spans(self, section: Section) -> Iterable[tuple[int, int]]:
        """The units a section's chunks are packed from, as trimmed spans of ``section.text``:
        its blank-line paragraphs."""
        return paragraph_spans(section.text)

    def _child_extra(self, section: Section, chunk_span: tuple[int, int]) -> ChunkExtra:
        """Extra :class:`Chunk` fields of the chunk at ``chunk_span`` (offsets into the
        document's text) of ``section``; none here."""
        return {}

    def section_spans(self, section: Section) -> list[tuple[int, int]]:
        """The chunk spans of one section, in offsets of ``section.text``: its units packed
        like the default chunker's paragraphs, or (``packing="unit"``) each unit its own
        chunk, split like the default when over the budget — a section's heading line goes
        with its first paragraph when both fit."""
        units = list(self.unit_spans(section))
        keep = self.packing == "unit"
        if keep and len(units) > 1 and self._heading_only(section, units[0]) and units[1][1] - units[0][0] <= self.max_chars:
            units[:2] = [(units[0][0], units[1][1])]  # a heading line is never a chunk alone when text follows
        return pack_spans(section.text, units, max_chars=self.max_chars, overlap_chars=self.overlap_chars, keep_units=keep)

    @staticmethod
    def _heading_only(section: Section, unit: tuple[int, int]) -> bool:
        """Whether ``unit`` is the section's heading line and nothing else (a Markdown or
        numbered heading; not a statute's ``第一条 ……`` line, which holds the article's text)."""
        text = section.text[unit[0]:unit[1]]
        return bool(section.heading) and "\n" not in text and text.strip("# \t") == section.heading

    def pieces(self, doc: Doc) -> Iterator[Piece]:
        for section in self.sections(doc):
            spans = self.section_spans(section)
            for start, end in spans:
                span = (section.start + start, section.start + end)
                extra: ChunkExtra = {"heading": section.heading}
                extra.update(self._child_extra(section, span))
                yield span[0], span[1], extra
