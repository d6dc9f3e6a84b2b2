"""``PdfiumDocumentReader``: PDF text through pypdfium2 (PDFium; Apache-2.0 or BSD-3-Clause).

Chosen by measurement (``scripts/bench_pdf_readers.py``): on generated 200-page PDFs PDFium
read 16x the pages per second of pypdf, kept every word on its line, and put two text runs of
one baseline in left-to-right order where pypdf glued them in stream order. Both read CJK
through a font's ``ToUnicode`` map.

Each page's lines, in PDFium's order, are a block of the text; a vertical gap wider than a
line's height starts a new paragraph (a blank line), so the paragraph chunkers see the
page's paragraphs. Pages are the structure map's pages; the document outline (bookmarks)
gives headings; every line keeps its box on the page (:class:`~ragspine.readers.base.LineBox`)
so a citation can be highlighted. An encrypted or corrupt PDF, or one over
``RAGSPINE_MAX_PDF_PAGES`` pages, is refused; so is one with a page of more than
``RAGSPINE_MAX_PAGE_CHARS`` characters (a page of a million glyphs), more than
``RAGSPINE_MAX_TEXT_CHARS`` in all, or whose reading (OCR included) runs past
``RAGSPINE_MAX_READ_SECONDS`` — checked between pages (:class:`~ragspine.readers.base.ReadBudget`).

A page whose text layer is (nearly) empty — a scan — contributes nothing, unless
``RAGSPINE_OCR`` names an engine (:mod:`ragspine.readers.ocr`): then it is rendered at
300 dpi and read by OCR, its lines keep their boxes (``LineBox.ocr``), and the document's
metadata says ``ocr: true`` (with ``ocr_pages``, how many pages, and ``ocr_engine``).
"""

from __future__ import annotations

from typing import Any

from ragspine.errors import BackendError, IngestError, MissingDependencyError
from ragspine.readers.base import (
    LineBox,
    ReadBudget,
    ReadDocument,
    ReaderLimits,
    TextBuilder,
    markdown_rows,
    markdown_table,
    one_line,
)
from ragspine.readers.pdf_tables import Box, OpenTable, PageCells, PageTable, find_tables, line_runs, open_table

_ENCRYPTED = 4  # PDFium's FPDF_ERR_PASSWORD
_DROP = dict.fromkeys(map(ord, "\x00\ufffe\uffff\x02"), None)
#: a page whose text layer has fewer non-space characters than this is a scan (a stray page number at most)
OCR_BELOW_CHARS = 4
Lines = list[tuple[str, Any]]


class PdfiumDocumentReader:
    """PDF → text, pages, outline headings and per-line boxes (see the module docstring)."""

    def __init__(self, *, limits: ReaderLimits | None = None, line_boxes: bool = True) -> None:
        self.limits = limits or ReaderLimits()
        self.line_boxes = line_boxes

    def read(self, data: bytes, where: str) -> ReadDocument:
        pdfium = _import()
        try:
            doc = pdfium.PdfDocument(data)
        except pdfium.PdfiumError as exc:
            if getattr(exc, "err_code", None) == _ENCRYPTED:
                raise IngestError(f"{where}: the PDF is encrypted (password protected); decrypt it first") from None
            raise IngestError(f"{where}: a corrupt PDF ({one_line(exc)})") from None
        try:
            count = len(doc)
            if count > self.limits.max_pdf_pages:
                raise IngestError(f"{where}: {count:,} pages is over the {self.limits.max_pdf_pages:,}-page limit"
                                  " (RAGSPINE_MAX_PDF_PAGES); split the file or raise the limit")
            builder, boxes, budget = TextBuilder(), list[LineBox](), ReadBudget(where, self.limits)
            pages: list[Lines] = []
            page_tables: list[list[PageTable]] = []
            carry: OpenTable | None = None  # a table running onto the next page
            for index in range(count):
                budget.check()
                try:
                    lines, tables, carry = _page_lines(pdfium, doc[index], self.line_boxes, self.limits.max_page_chars,
                                                       f"{where}: page {index + 1}", carry)
                except pdfium.PdfiumError as exc:
                    raise IngestError(f"{where}: page {index + 1} is corrupt ({one_line(exc)})") from None
                budget.check(sum(len(text) + 1 for text, _ in lines))
                pages.append(lines)
                page_tables.append(tables)
            scanned = _scanned(pages) if self.limits.ocr != "none" else []
            confidences = _ocr_pages(pdfium, doc, pages, scanned, budget, where)
            for index, lines in enumerate(pages):
                builder.start_page()
                ocr = confidences.get(index)
                _add_page(builder, lines, index + 1, boxes, ocr, page_tables[index] if ocr is None else [])
            builder.end_page()
            headings = _outline(doc, builder)
            info = doc.get_metadata_dict(skip_empty=True)
        finally:
            doc.close()
        builder.headings = sorted(builder.headings + headings)
        metadata: dict[str, Any] = _metadata(info)
        if confidences:
            metadata.update(ocr=True, ocr_pages=len(confidences), ocr_engine=self.limits.ocr)
        return builder.build(where, title=" ".join(info.get("Title", "").split()), metadata=metadata,
                             line_boxes=tuple(boxes), format="pdf")


def _import() -> Any:
    try:
        import pypdfium2 as pdfium  # type: ignore[import-untyped]
    except ModuleNotFoundError:
        raise MissingDependencyError("pypdfium2", "documents", "reading PDF files") from None
    return pdfium


def _scanned(pages: list[Lines]) -> list[int]:
    """The 0-based pages whose text layer is (nearly) empty."""
    return [i for i, lines in enumerate(pages) if sum(len("".join(t.split())) for t, _ in lines) < OCR_BELOW_CHARS]


def _ocr_pages(pdfium: Any, doc: Any, pages: list[Lines], scanned: list[int], budget: ReadBudget,
               where: str) -> dict[int, list[float]]:
    """OCR of the ``scanned`` pages: their lines (in ``pages``) replaced by what the engine reads,
    if it reads anything; page index -> the confidence of each line read. A progress line on
    stderr while it runs; the ``budget`` checked before each page."""
    if not scanned:
        return {}
    from ragspine.progress import progress
    from ragspine.readers.ocr import RENDER_DPI, read_page_image, shared_ocr_engine

    limits = budget.limits
    engine = shared_ocr_engine(limits.ocr, limits.ocr_langs)
    assert engine is not None  # limits.ocr is not "none" here
    scale, confidences = RENDER_DPI / 72, {}
    with progress(desc=f"OCR {where}", unit="page", total=len(scanned), leave=False) as bar:
        for index in scanned:
            budget.check()
            page = doc[index]
            try:
                image = page.render(scale=scale, grayscale=True).to_pil()
                left, _, _, top = page.get_cropbox()
            except pdfium.PdfiumError as exc:
                raise IngestError(f"{where}: page {index + 1} cannot be rendered for OCR ({one_line(exc)})") from None
            image.info["dpi"] = (RENDER_DPI, RENDER_DPI)
            try:
                read = read_page_image(engine, image, scale=scale, left=left, top=top)
            except BackendError as exc:  # the engine failed on this page: the file is bad, not the run
                raise IngestError(f"{where}: page {index + 1}: {exc}") from None
            if read:  # nothing read: the page keeps what its text layer had (a stray page number)
                pages[index] = [(text, box) for text, box, _ in read]
                confidences[index] = [confidence for _, _, confidence in read]
                budget.check(sum(len(text) + 1 for text, _, _ in read))
            bar.update(1)
    return confidences


def _page_lines(pdfium: Any, page: Any, with_boxes: bool, max_chars: int = 0, where: str = "the page",
                carry: OpenTable | None = None) -> tuple[Lines, list[PageTable], OpenTable | None]:
    """The page's non-empty lines, each with its box (the union of PDFium's rectangles of its chars),
    its tables (:func:`~ragspine.readers.pdf_tables.find_tables`, going on with ``carry``: the
    previous page's table that ran to its last line; none without ``with_boxes``) and its own such
    table; a page of more than ``max_chars`` characters (0: no bound) is an :class:`IngestError`
    naming ``where``."""
    textpage = page.get_textpage()
    chars = textpage.count_chars()
    if max_chars and chars > max_chars:
        raise IngestError(f"{where} has {chars:,} characters, over the {max_chars:,}-character limit"
                          " (RAGSPINE_MAX_PAGE_CHARS); split the file or raise the limit")
    raw = textpage.get_text_range()
    out: Lines = []
    runs: list[tuple[Box, ...]] = []
    unit = 0  # offsets in PDFium's text are UTF-16 units
    for line in raw.split("\r\n"):
        width = len(line.encode("utf-16-le")) // 2
        text = " ".join(line.translate(_DROP).split())
        if text:
            rects = _rects(pdfium, textpage, unit, unit + width) if with_boxes else []
            out.append((text, _union(rects)))
            runs.append(line_runs(rects))
        unit += width + 2
    cells = PageCells(textpage, runs, [text for text, _ in out])
    tables = find_tables(cells, carry)
    return out, tables, open_table(tables, cells, carry)


def _rects(pdfium: Any, textpage: Any, start: int, end: int) -> list[tuple[float, float, float, float]]:
    """PDFium's rectangles of the characters at ``[start, end)`` of the page's text (UTF-16 units):
    one per run of text."""
    first = pdfium.raw.FPDFText_GetCharIndexFromTextIndex(textpage.raw, start)
    last = pdfium.raw.FPDFText_GetCharIndexFromTextIndex(textpage.raw, end - 1)
    if first < 0 or last < first:
        return []
    return [textpage.get_rect(i) for i in range(textpage.count_rects(first, last - first + 1))]


def _union(rects: list[tuple[float, float, float, float]]) -> tuple[float, float, float, float] | None:
    if not rects:
        return None
    return (min(r[0] for r in rects), min(r[1] for r in rects), max(r[2] for r in rects), max(r[3] for r in rects))


def _add_page(builder: TextBuilder, lines: Lines, page: int, boxes: list[LineBox], ocr: list[float] | None = None,
              tables: list[PageTable] | None = None) -> None:
    """The page's lines as paragraphs (:func:`_add_lines`), and its ``tables``
    (:func:`_page_lines`) as Markdown rows, each row's line keeping its box; a table going on
    with the previous page's last adds its rows to it. ``ocr``: the lines were read by OCR, with
    these confidences."""
    done = 0
    for table in tables or []:
        _add_lines(builder, lines[done : table.first], page, boxes, ocr[done : table.first] if ocr is not None else None)
        spans: list[tuple[int, int]] = []
        if table.continued and (added := builder.continue_table(table.rows, len(table.rows[0]))):
            offset = added[0]
            for line in markdown_rows(table.rows, len(table.rows[0])):
                spans.append((offset, offset + len(line)))
                offset += len(line) + 1
        else:
            builder.table(table.rows)
            offset = builder.tables[-1][0]
            for number, line in enumerate(markdown_table(table.rows).split("\n")):  # the header, ``| --- |``, a row a line
                if number != 1:
                    spans.append((offset, offset + len(line)))
                offset += len(line) + 1
        for (start, end), number in zip(spans, table.row_lines, strict=True):
            box = lines[number][1]
            if box is not None:
                boxes.append(LineBox(start, end, page, box))
        done = table.past
    _add_lines(builder, lines[done:], page, boxes, ocr[done:] if ocr is not None else None)


def _add_lines(builder: TextBuilder, lines: Lines, page: int, boxes: list[LineBox], ocr: list[float] | None = None) -> None:
    """Lines as paragraphs: a gap wider than the line above's height breaks one.
    ``ocr``: the lines were read by OCR, with these confidences."""
    paragraphs: list[list[tuple[str, Any, float | None]]] = []
    previous = None
    for number, (text, box) in enumerate(lines):
        gap = previous is not None and box is not None and (previous[1] - box[3]) > (previous[3] - previous[1])
        if not paragraphs or gap:
            paragraphs.append([])
        paragraphs[-1].append((text, box, ocr[number] if ocr is not None else None))
        previous = box if box is not None else previous
    for paragraph in paragraphs:
        span = builder.paragraph("\n".join(text for text, _, _ in paragraph))
        offset = span[0] if span else 0
        for text, box, confidence in paragraph:
            if box is not None:
                boxes.append(LineBox(offset, offset + len(text), page, box, ocr is not None, confidence))
            offset += len(text) + 1


def _outline(doc: Any, builder: TextBuilder) -> list[tuple[int, int, str]]:
    """Bookmarks as headings: at their title's first line on their page, else the page's start."""
    text = builder.text
    out = []
    try:
        toc = list(doc.get_toc(max_depth=6))
    except Exception:  # a broken outline is no reason to refuse the text  # noqa: BLE001
        return []
    for item in toc:
        title = " ".join(str(item.get_title() or "").split())
        dest = item.get_dest()
        index = dest.get_index() if dest is not None else None
        if not title or index is None or not 0 <= index < len(builder.pages):
            continue
        start, end = builder.pages[index]
        found = text.find(title, start, end)
        out.append((found if found >= 0 else start, min(item.level + 1, 6), title))
    return out


def _metadata(info: dict[str, str]) -> dict[str, str]:
    """The info dictionary's author, subject, keywords and dates (``D:20240131...`` → ``2024-01-31``)."""
    out = {key.lower(): " ".join(info[key].split()) for key in ("Author", "Subject", "Keywords") if info.get(key, "").strip()}
    for key, name in (("CreationDate", "created"), ("ModDate", "modified")):
        raw = info.get(key, "").removeprefix("D:")
        if len(raw) >= 8 and raw[:8].isdigit():
            out[name] = f"{raw[:4]}-{raw[4:6]}-{raw[6:8]}"
    return out
