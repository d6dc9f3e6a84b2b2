"""The document reader role: bytes of one file in, the text a library keeps out.

A :class:`DocumentReader` turns a file's bytes into a :class:`ReadDocument`: the text the store
keeps (every chunk is a substring of it and every ``#char=a,b`` locator indexes into it), the
title and metadata the format carries, and a structure map — page (slide, sheet) boundaries,
headings, tables — as character ranges of that text. Readers never write anything; a file
they cannot read safely (encrypted, corrupt, over a limit) is an :class:`IngestError` of one
line naming the file and, for a limit, its setting.

Readers render structure as Markdown (``## Heading`` lines, ``| a | b |`` table rows, a blank
line between blocks), so the layout, parent/child and book chunkers cut at real sections.
"""

from __future__ import annotations

import datetime
import time
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol, Sequence

from ragspine.errors import IngestError

#: Defaults of the reader limits (settings ``RAGSPINE_MAX_PDF_PAGES``, ...: ``ragspine.config``).
MAX_PDF_PAGES = 2000
MAX_ZIP_ENTRIES = 10_000
MAX_UNZIPPED_BYTES = 256 * 1024 * 1024
MAX_ZIP_RATIO = 100.0
MAX_READ_SECONDS = 120.0
MAX_PAGE_CHARS = 200_000
MAX_TEXT_CHARS = 50_000_000
MAX_HTML_BYTES = 10 * 1024 * 1024


@dataclass(frozen=True)
class ReaderLimits:
    """What a reader refuses to open: bounds on work an untrusted file can cause."""

    max_pdf_pages: int = MAX_PDF_PAGES
    max_zip_entries: int = MAX_ZIP_ENTRIES  # entries of a DOCX/PPTX/XLSX (a ZIP archive)
    max_unzipped_bytes: int = MAX_UNZIPPED_BYTES  # their uncompressed size, all entries together
    max_zip_ratio: float = MAX_ZIP_RATIO  # uncompressed / compressed size, all entries together
    #: the OCR engine reading a page without a text layer and an image file (RAGSPINE_OCR, an
    #: ``OCR_ENGINES`` name; "none": such a page contributes nothing, an image is refused)
    ocr: str = "none"
    ocr_langs: str = "eng"  # RAGSPINE_OCR_LANGS: the engine's languages, joined by "+"
    max_read_seconds: float = MAX_READ_SECONDS  # one file's reading, OCR included (checked between pages/blocks)
    max_page_chars: int = MAX_PAGE_CHARS  # characters of one PDF page's text layer (a page of a million glyphs)
    max_text_chars: int = MAX_TEXT_CHARS  # characters a reader extracts from one file, all pages together
    max_html_bytes: int = MAX_HTML_BYTES  # bytes of an HTML file's markup

    @classmethod
    def from_settings(cls, settings: Any) -> ReaderLimits:
        """The limits of a :class:`ragspine.config.Settings`."""
        return cls(settings.max_pdf_pages, settings.max_zip_entries, settings.max_unzipped_bytes, settings.max_zip_ratio,
                   ocr=settings.ocr, ocr_langs=settings.ocr_langs, max_read_seconds=settings.max_read_seconds,
                   max_page_chars=settings.max_page_chars, max_text_chars=settings.max_text_chars,
                   max_html_bytes=settings.max_html_bytes)


@dataclass(frozen=True)
class LineBox:
    """Where one line of a PDF's text is on its page: ``text[start:end]`` lies in
    ``(left, bottom, right, top)``, PDF points from the page's bottom-left corner (an image
    file's page: points at the image's resolution, 72 dpi when it states none). A line an OCR
    engine read has ``ocr`` set and the engine's ``confidence`` (0..1)."""

    start: int
    end: int
    page: int  # 1-based
    box: tuple[float, float, float, float]
    ocr: bool = False
    confidence: float | None = None


@dataclass(frozen=True)
class ReadDocument:
    """What a reader returns. Offsets are into ``text``; pages are 1-based in :meth:`pages_of`."""

    text: str
    title: str = ""  # the format's own title ("" when it has none)
    metadata: Mapping[str, Any] = field(default_factory=dict)  # scalars only (author, created, ...)
    fields: Mapping[str, Any] = field(default_factory=dict)  # front matter of a text file, as written
    body_offset: int = 0  # where ``text`` starts in the file (after front matter); 0 for other formats
    pages: tuple[tuple[int, int], ...] = ()  # page/slide/sheet ranges; empty: not a paged document
    headings: tuple[tuple[int, int, str], ...] = ()  # (offset, level 1-6, heading text)
    tables: tuple[tuple[int, int], ...] = ()
    line_boxes: tuple[LineBox, ...] = ()  # PDF and OCR'd images only
    format: str = "text"

    @property
    def paged(self) -> bool:
        return bool(self.pages)

    def pages_of(self, start: int, end: int) -> list[int]:
        """The 1-based pages that ``text[start:end]`` touches (``[]`` for an unpaged document)."""
        if not self.pages:
            return []
        starts = [a for a, _ in self.pages]
        first = max(bisect_right(starts, start) - 1, 0)
        last = max(bisect_right(starts, max(end - 1, start)) - 1, first)
        return list(range(first + 1, last + 2))


class DocumentReader(Protocol):
    """One format family's reader (see the module docstring)."""

    def read(self, data: bytes, where: str) -> ReadDocument:
        """``data`` (the whole file) as a :class:`ReadDocument`; ``where`` names the file in errors."""
        ...


class TextBuilder:
    """Builds a reader's text block by block, recording the structure map as it goes.

    Blocks are separated by one blank line; a page starts a new block. Nothing is stripped
    from what a block holds but its outer whitespace, so offsets stay exact.
    """

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._size = 0
        self._page_start: int | None = None
        self.pages: list[tuple[int, int]] = []
        self.headings: list[tuple[int, int, str]] = []
        self.tables: list[tuple[int, int]] = []

    @property
    def text(self) -> str:
        """The text so far."""
        return "".join(self._parts)

    def _append(self, text: str) -> tuple[int, int]:
        if self._size:
            self._parts.append("\n\n")
            self._size += 2
        start = self._size
        self._parts.append(text)
        self._size += len(text)
        return start, self._size

    def paragraph(self, text: str) -> tuple[int, int] | None:
        text = text.strip()
        return self._append(text) if text else None

    def heading(self, text: str, level: int) -> None:
        text = " ".join(text.split())
        if text:
            level = min(max(level, 1), 6)
            start, _ = self._append(f"{'#' * level} {text}")
            self.headings.append((start, level, text))

    def table(self, rows: Sequence[Sequence[Any]]) -> None:
        """Rows as Markdown table lines (the first row is the header)."""
        rendered = markdown_table(rows)
        if rendered:
            self.tables.append(self._append(rendered))

    def continue_table(self, rows: Sequence[Sequence[Any]], width: int) -> tuple[int, int] | None:
        """More rows of the table written last (one that runs onto this page), each a line of
        it, with no header and no blank line between; the table's range grows to hold them.
        Returns where the rows are, or ``None`` when there is no such table to go on with."""
        lines = markdown_rows(rows, width)
        if not lines or not self.tables or self.tables[-1][1] != self._size:
            return None
        if self._page_start == self._size + 2:  # the page starts on the next row, one newline on
            self._page_start = self._size + 1
        start = self._size + 1
        added = "\n" + "\n".join(lines)
        self._parts.append(added)
        self._size += len(added)
        self.tables[-1] = (self.tables[-1][0], self._size)
        return start, self._size

    def start_page(self) -> None:
        self.end_page()
        self._page_start = self._size + (2 if self._size else 0)

    def end_page(self) -> None:
        if self._page_start is not None:
            self.pages.append((min(self._page_start, self._size), self._size))
            self._page_start = None

    def build(self, where: str, *, title: str = "", title_from_heading: bool = True, **kwargs: Any) -> ReadDocument:
        """The document; without a ``title`` of its own, its first heading's (``title_from_heading``)."""
        self.end_page()
        text = "".join(self._parts)
        if not text.strip():
            raise IngestError(f"{where}: the document has no text (a scan needs OCR first)")
        if not title and title_from_heading and self.headings:
            title = min(self.headings)[2]
        return ReadDocument(text=text, title=title, pages=tuple(self.pages), headings=tuple(self.headings),
                            tables=tuple(self.tables), **kwargs)


def decode_text(data: bytes, where: str, expected: str) -> str:
    """``data`` as UTF-8 text (a byte-order mark dropped), or :class:`IngestError` naming
    ``where``: NUL bytes (a binary file; ``expected`` says what was expected instead) or bytes
    that are not UTF-8."""
    if b"\x00" in data:
        raise IngestError(f"{where}: looks binary (contains NUL bytes); {expected}")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise IngestError(f"{where}: not valid UTF-8 (byte {exc.start}); convert it to UTF-8") from None


def cell_text(value: Any) -> str:
    """A table cell on one line: ``|`` escaped, whitespace runs as one space."""
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, datetime.datetime) and value.time() == datetime.time():
        value = value.date()
    if isinstance(value, (datetime.date, datetime.time)):
        value = value.isoformat()
    return " ".join(str(value).split()).replace("|", "\\|")


def markdown_table(rows: Sequence[Sequence[Any]]) -> str:
    """``| a | b |`` lines with a ``| --- |`` line under the first row; empty rows and trailing
    empty cells are left out."""
    cells = _table_cells(rows)
    if not cells:
        return ""
    width = max(len(row) for row in cells)
    lines = _rendered(cells, width)
    lines.insert(1, "|" + " --- |" * width)
    return "\n".join(lines)


def markdown_rows(rows: Sequence[Sequence[Any]], width: int = 0) -> list[str]:
    """Each non-empty row as a ``| a | b |`` line (trailing empty cells left out), padded to
    ``width`` cells or the widest row's."""
    cells = _table_cells(rows)
    return _rendered(cells, max([width, *(len(row) for row in cells)]))


def _rendered(cells: list[list[str]], width: int) -> list[str]:
    return ["| " + " | ".join(row + [""] * (width - len(row))) + " |" for row in cells]


def _table_cells(rows: Sequence[Sequence[Any]]) -> list[list[str]]:
    """The non-empty rows' cells as text, trailing empty cells left out."""
    cells = [[cell_text(v) for v in row] for row in rows]
    cells = [row[: max((i + 1 for i, c in enumerate(row) if c), default=0)] for row in cells]
    return [row for row in cells if row]


def one_line(exc: BaseException) -> str:
    """A library's error as one short line."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:200]


class ReadBudget:
    """What reading one file may cost: ``RAGSPINE_MAX_READ_SECONDS`` of time from its start and
    ``RAGSPINE_MAX_TEXT_CHARS`` characters of text. A reader calls :meth:`check` between units of
    work (a PDF page, an OCR page, a slide, a Word block, a chunk of HTML); past a bound it is an
    :class:`IngestError` of one line naming the file and the setting. A request's own deadline
    (:mod:`ragspine.deadline`, the service's ``RAGSPINE_REQUEST_TIMEOUT``) is checked too: the
    file is not to blame for it, so it stays ``DeadlineExceeded`` (504)."""

    clock = staticmethod(time.monotonic)

    def __init__(self, where: str, limits: ReaderLimits) -> None:
        self.where = where
        self.limits = limits
        self.chars = 0
        self._at = self.clock() + limits.max_read_seconds

    def check(self, chars: int = 0) -> None:
        """Count ``chars`` more characters of text read; raise when a bound is passed."""
        from ragspine import deadline

        if self.clock() >= self._at:
            raise IngestError(f"{self.where}: reading ran past the {self.limits.max_read_seconds:g}-second limit"
                              " (RAGSPINE_MAX_READ_SECONDS); split the file or raise the limit")
        self.chars += chars
        if self.chars > self.limits.max_text_chars:
            raise IngestError(f"{self.where}: over {self.limits.max_text_chars:,} characters of text, the limit"
                              " (RAGSPINE_MAX_TEXT_CHARS); split the file or raise the limit")
        deadline.check(f"reading {self.where}")
