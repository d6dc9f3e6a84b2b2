"""Parent-child ("small to big") chunking and its domain presets.

:class:`ParentChildChunker` (``RAGSPINE_CHUNKER=parent_child``, alias ``small_to_big``) is the
layout chunker whose chunks (the children, small, for matching) name their section (the
parent, for generation): ``parent_id`` ``f"{doc_id}#sec={start},{end}"`` (the section's
offsets in the source, so re-ingesting the same text gives the same ids), ``window_text`` the
section's text and ``parent_locator`` its real extent (``window_text == document[extent]``).
Every child of a section shares its parent.

A parent has a bounded size: at most ``parent_chars`` characters (``RAGSPINE_PARENT_CHARS``;
default :data:`PARENT_CHUNKS` times the child budget ``max_chars``: 1,920 for 480). A section
over the bound — a heading-less ``.txt`` file is one section — is cut into parents
(:func:`~ragspine.retrieval.chunking.units.bounded_spans`): its units (paragraphs; a statute's
lines) packed up to ``parent_chars``; a unit over it cut at sentence terminators, then line
breaks, then whitespace (inside a word only when the word itself is longer); no overlap
between parents. Each such parent is then chunked like a section (its children never
cross it) and keeps the section's heading. A section within the bound is one parent, its
children cut exactly as ``layout`` cuts them.

The presets change only what a section is (heading detection, and for statutes the units
inside one):

* :class:`LawsChunker` (``laws``) — a parent per article: ``第N条`` at a line start (Chinese
  numerals or digits; Japanese ``第N条の2`` too, with the caption line ``（目的）`` above it),
  followed by whitespace, a bracket or a colon, so a cross-reference such as
  ``依照本法第三十条的规定`` never opens one, even where a line break puts it at a line start.
  The children are the article's 款/项 units — its lines: unnumbered 款 paragraphs, ``（一）``
  items, Japanese 項 lines ``２　…`` — packed to the budget (a unit over it is cut at sentence
  terminators). ``第N编/章/节/款`` division lines (Japanese ``編/節`` too) are headings of
  their own sections, not articles.
* :class:`QAChunker` (``qa``) — a parent per question and its answer: a line starting with
  ``Q:`` / ``Q：`` / ``问：`` / ``問：`` / ``質問`` / ``Question:`` or ending in ``?`` / ``？``
  opens a pair that runs to the next question (or Markdown heading).
* :class:`BookChunker` (``book``) — ``第N章/节/節/篇/回/卷/部`` and ``Chapter N`` / ``Part N``
  lines, Markdown and numbered headings.
"""

from __future__ import annotations

import re
from typing import ClassVar, Iterable

from ragspine.limits import PARENT_CHUNKS  # a parent holds at most this many child budgets by default
from ragspine.retrieval.chunking.assemble import ChunkExtra, Doc
from ragspine.retrieval.chunking.chunking import DEFAULT_CHUNK_CHARS, DEFAULT_OVERLAP_CHARS
from ragspine.retrieval.chunking.headings import MARKDOWN, NUMBERED, NUMERALS, SP, heading_pattern, short_line
from ragspine.retrieval.chunking.layout import LayoutAwareChunker, Section
from ragspine.retrieval.chunking.units import bounded_spans, line_spans


def parent_id_for(doc_id: str, start: int, end: int) -> str:
    """The id of the parent at ``[start, end)`` of the source (``source_offset`` included)."""
    return f"{doc_id}#sec={start},{end}"




def default_parent_chars(max_chars: int) -> int:
    """The default parent bound for a child budget of ``max_chars``."""
    return PARENT_CHUNKS * max_chars


class ParentChildChunker(LayoutAwareChunker):
    """See the module docstring."""

    name = "parent_child"

    def __init__(
        self, *, max_chars: int = DEFAULT_CHUNK_CHARS, overlap_chars: int = DEFAULT_OVERLAP_CHARS, packing: str = "pack",
        parent_chars: int | None = None,
    ) -> None:
        super().__init__(max_chars=max_chars, overlap_chars=overlap_chars, packing=packing)
        bound = default_parent_chars(max_chars) if parent_chars is None else parent_chars
        if bound < max_chars:
            raise ValueError(f"parent_chars ({bound}) must be >= max_chars ({max_chars}): a parent holds its children")
        self.parent_chars = bound

    def __repr__(self) -> str:
        return f"{super().__repr__()[:-1]}, parent_chars={self.parent_chars})"

    def sections(self, doc: Doc) -> list[Section]:
        """The layout's sections, each over ``parent_chars`` cut into parents of its units
        (see the module docstring)."""
        out: list[Section] = []
        for section in super().sections(doc):
            if len(section.text) <= self.parent_chars:
                out.append(section)
                continue
            for start, end in bounded_spans(section.text, self.unit_spans(section), self.parent_chars):
                out.append(Section(doc, section.start + start, section.start + end, section.heading, section.text[start:end]))
        return out

    def _child_extra(self, section: Section, chunk_span: tuple[int, int]) -> ChunkExtra:
        doc = section.doc
        extra = doc.extent(section.start, section.end, section.text)
        extra["parent_id"] = parent_id_for(doc.doc_id, section.start + doc.offset, section.end + doc.offset)
        return extra


_CAPTION = SP + "*（[^（）\\n]{1,30}）" + SP + "*\\r?\\n"
ARTICLE = "(?:" + _CAPTION + ")?" + SP + "*(第[" + NUMERALS + "]+条(?:の[" + NUMERALS + "]+)*)(?=[\\s（(【：:]|$)"
LAW_DIVISION = short_line("第[" + NUMERALS + "]+[编編章节節款]", bare=True)
QUESTION = (
    SP + "*((?:(?:Q\\d*|Question" + SP + "*\\d*|[问問])" + SP + "*[:：]|質問)[^\\n]*?|[^\\s][^\\n]*?[?？])" + SP + "*\\r?$"
)
BOOK_DIVISION = short_line("第[" + NUMERALS + "]+[章节節篇回卷部]", bare=True)
CHAPTER = short_line("(?:Chapter|CHAPTER|Part|PART)" + SP + "+(?:\\d+|[IVXLCDM]+)\\b", bare=True)


class LawsChunker(ParentChildChunker):
    """Statutes: a parent per article, its lines (款/项) the children."""

    name = "laws"
    heading_pattern: ClassVar[re.Pattern[str]] = heading_pattern(ARTICLE, LAW_DIVISION)

    def unit_spans(self, section: Section) -> Iterable[tuple[int, int]]:
        """An article's 款/项 units: its non-blank lines."""
        return line_spans(section.text)


class QAChunker(ParentChildChunker):
    """FAQs: a parent per question with its answer."""

    name = "qa"
    heading_pattern: ClassVar[re.Pattern[str]] = heading_pattern(MARKDOWN, QUESTION)


class BookChunker(ParentChildChunker):
    """Books: a parent per chapter, section or numbered heading."""

    name = "book"
    heading_pattern: ClassVar[re.Pattern[str]] = heading_pattern(MARKDOWN, BOOK_DIVISION, CHAPTER, NUMBERED)
