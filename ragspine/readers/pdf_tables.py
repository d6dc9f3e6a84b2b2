"""Tables in a PDF's text layer: lines whose text runs stand in aligned columns.

A PDF has no tables, only text placed on a page; PDFium groups a line's characters into
rectangles, one per run of text, and a table's cells are runs set apart by a wide gap. A line
with two or more such runs has *cells* (:func:`line_cells`); a run of at least
:data:`MIN_ROWS` consecutive lines of a page whose cells stand in the columns of the first
line's (each cell overlapping one column, no column twice) is a *table* (:func:`find_tables`),
its first line the header. The reader renders a table as Markdown rows, as it does a Word or
Excel table, so long ones are cut at their rows with their column names
(:mod:`ragspine.retrieval.chunking.tables`). A table that runs to its page's last line goes on
at the next page's first lines that stand in its columns — after the header, when the page
repeats it, which is then dropped — as one table over both pages (:class:`OpenTable`).

Two guards keep prose out: a gap between runs must be wider than :data:`GAP_HEIGHTS` times the
line's height (the space between words is a fraction of it), and a run of lines whose cells
are mostly long — the two columns of a page of prose — is no table (:data:`MAX_MEDIAN_CELL_CHARS`).
A line whose cells do not give back its text exactly is left as it was.
"""

from __future__ import annotations

from statistics import median
from typing import Any, NamedTuple, Sequence

Box = tuple[float, float, float, float]
Cell = tuple[str, Box]

#: fewest lines (the header and two rows) that make a table
MIN_ROWS = 3
#: a gap between two runs of one line wider than this many line heights separates cells
GAP_HEIGHTS = 1.2
#: a table's cells are short: a run of lines whose median cell is longer is prose in columns
MAX_MEDIAN_CELL_CHARS = 30


def line_cells(textpage: Any, rects: Sequence[Box], text: str) -> tuple[Cell, ...]:
    """The cells of a line of ``textpage`` whose characters' rectangles are ``rects`` and whose
    text, whitespace collapsed, is ``text``: ``()`` for a line of one run of text."""
    if len(rects) < 2:
        return ()
    rects = sorted(rects)
    groups: list[list[Box]] = [[rects[0]]]
    for rect in rects[1:]:
        previous = groups[-1][-1]
        height = max(previous[3] - previous[1], rect[3] - rect[1], 1.0)
        if rect[0] - previous[2] > GAP_HEIGHTS * height:
            groups.append([rect])
        else:
            groups[-1].append(rect)
    if len(groups) < 2:
        return ()
    cells = []
    for group in groups:
        box = (min(r[0] for r in group), min(r[1] for r in group), max(r[2] for r in group), max(r[3] for r in group))
        cell = " ".join(textpage.get_text_bounded(*box).split())
        if not cell:
            return ()
        cells.append((cell, box))
    if " ".join(c for c, _ in cells) != text:  # the runs do not give the line back: leave it a line
        return ()
    return tuple(cells)


class PageTable(NamedTuple):
    """A table among a page's lines: ``lines[first:past]``; ``rows`` the cell texts of the lines
    ``row_lines`` (a row per line, in the header's columns, ``""`` where a line has none).
    ``continued``: more rows of the previous page's last table (``rows`` without a header; a
    header the page repeats is in no row)."""

    first: int
    past: int
    rows: list[list[str]]
    row_lines: list[int]
    continued: bool = False


class OpenTable(NamedTuple):
    """A table that ran to its page's last line: the next page's first lines may go on with it."""

    columns: list[Box]
    header: list[str]


def find_tables(cells: Sequence[tuple[Cell, ...]], carry: OpenTable | None = None) -> list[PageTable]:
    """The tables among a page's lines, given each line's :func:`line_cells` (see the module
    docstring); ``carry``: the previous page's table that ran to its last line — the page's
    first lines in its columns (after a repeat of its header, which is dropped) go on with it."""
    out: list[PageTable] = []
    i = 0
    if carry is not None and cells:
        j = 1 if [text for text, _ in cells[0]] == carry.header else 0
        rows, row_lines = [], []
        while j < len(cells) and (row := _in_columns(cells[j], carry.columns)) is not None:
            rows.append(row)
            row_lines.append(j)
            j += 1
        if rows:
            out.append(PageTable(0, j, rows, row_lines, continued=True))
            i = j
    while i < len(cells):
        header = cells[i]
        if len(header) < 2:
            i += 1
            continue
        columns = [box for _, box in header]
        rows = [[text for text, _ in header]]
        j = i + 1
        while j < len(cells) and (row := _in_columns(cells[j], columns)) is not None:
            rows.append(row)
            j += 1
        lengths = [len(c) for row in rows for c in row if c]
        if j - i >= MIN_ROWS and median(lengths) <= MAX_MEDIAN_CELL_CHARS:
            out.append(PageTable(i, j, rows, list(range(i, j))))
            i = j
        else:
            i += 1
    return out


def open_table(tables: Sequence[PageTable], cells: Sequence[tuple[Cell, ...]], carry: OpenTable | None) -> OpenTable | None:
    """The table of ``tables`` that runs to the page's last line, for the next page (``carry``:
    the one this page went on with)."""
    if not tables or tables[-1].past != len(cells):
        return None
    last = tables[-1]
    if last.continued:
        return carry
    return OpenTable([box for _, box in cells[last.first]], last.rows[0])


def _in_columns(cells: tuple[Cell, ...], columns: list[Box]) -> list[str] | None:
    """``cells`` placed in ``columns`` (by horizontal overlap), or ``None`` when the line is no
    row of them: fewer than two cells, a cell over no column or two cells in one."""
    if len(cells) < 2:
        return None
    row = [""] * len(columns)
    for text, box in cells:
        overlaps = [min(box[2], col[2]) - max(box[0], col[0]) for col in columns]
        best = max(range(len(columns)), key=overlaps.__getitem__)
        if overlaps[best] <= 0 and not _aligned(box, columns[best]):
            nearest = min(range(len(columns)), key=lambda k: abs(_centre(box) - _centre(columns[k])))
            if not _aligned(box, columns[nearest]):
                return None
            best = nearest
        if row[best]:
            return None
        row[best] = text
    return row


def _centre(box: Box) -> float:
    return (box[0] + box[2]) / 2


def _aligned(box: Box, column: Box, tolerance: float = 2.0) -> bool:
    """Left, right or centre edges within ``tolerance`` points (a short number under a wide header)."""
    return (abs(box[0] - column[0]) <= tolerance or abs(box[2] - column[2]) <= tolerance
            or abs(_centre(box) - _centre(column)) <= tolerance)
