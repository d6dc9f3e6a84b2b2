"""Tables in a PDF's text layer: lines whose text runs stand in aligned columns.

A PDF has no tables, only text placed on a page; PDFium groups a line's characters into
rectangles, one per run of text, and a table's cells are runs set apart by a wide gap. A line
with two or more such runs has *cells* (:func:`line_runs`, :class:`PageCells`); a run of at least
:data:`MIN_ROWS` consecutive lines of a page whose cells stand in the columns of the first
line's (each cell overlapping one column, no column twice) is a *table* (:func:`find_tables`),
its first line the header. The reader renders a table as Markdown rows, as it does a Word or
Excel table, so long ones are cut at their rows with their column names
(:mod:`ragspine.retrieval.chunking.tables`). A table that runs to its page's last line goes on
at the next page's first lines that stand in its columns — after the header, when the page
repeats it, which is then dropped — as one table over both pages (:class:`OpenTable`).

Two guards keep prose out: a gap between runs must be wider than :data:`GAP_HEIGHTS` times the
line's height (the space between words is a fraction of it), and a run of lines whose cells
are mostly long — the two columns of a page of prose — is no table (:data:`MAX_MEDIAN_CELL_CHARS`,
judged on its first :data:`SAMPLE_LINES` lines before the rest of its texts are read, then on
all of them). A line whose cells do not give back its text exactly is left as it was, and ends a
table above it.
"""

from __future__ import annotations

from statistics import median
from typing import Any, NamedTuple, Sequence

Box = tuple[float, float, float, float]

#: fewest lines (the header and two rows) that make a table
MIN_ROWS = 3
#: a gap between two runs of one line wider than this many line heights separates cells
GAP_HEIGHTS = 1.2
#: a table's cells are short: a run of lines whose median cell is longer is prose in columns
MAX_MEDIAN_CELL_CHARS = 30


#: a run of aligned lines whose first lines' cells are long is prose: decided on this many lines
#: before the rest of the run's cells are read
SAMPLE_LINES = MIN_ROWS


def line_runs(rects: Sequence[Box]) -> tuple[Box, ...]:
    """The boxes of a line's runs of text — its characters' rectangles ``rects`` joined where the
    gap between them is narrow — when there are two or more; ``()`` for a line of one run."""
    if len(rects) < 2:
        return ()
    ordered = sorted(rects)
    groups: list[list[Box]] = [[ordered[0]]]
    for rect in ordered[1:]:
        previous = groups[-1][-1]
        height = max(previous[3] - previous[1], rect[3] - rect[1], 1.0)
        if rect[0] - previous[2] > GAP_HEIGHTS * height:
            groups.append([rect])
        else:
            groups[-1].append(rect)
    if len(groups) < 2:
        return ()
    return tuple((min(r[0] for r in g), min(r[1] for r in g), max(r[2] for r in g), max(r[3] for r in g)) for g in groups)


class PageCells:
    """A page's lines' runs (:func:`line_runs`: geometry, cheap) and their cells' texts, read from
    the PDFium text page only for the lines a table may hold (``textpage`` must stay open while
    :func:`find_tables` runs)."""

    def __init__(self, textpage: Any, runs: Sequence[tuple[Box, ...]], texts: Sequence[str]) -> None:
        self.runs = runs
        self._textpage = textpage
        self._texts = texts
        self._cells: dict[int, tuple[str, ...] | None] = {}

    def __len__(self) -> int:
        return len(self.runs)

    def cells(self, line: int) -> tuple[str, ...] | None:
        """The texts of the line's runs; ``None`` when they do not give the line's text back (it
        stays a line)."""
        if line not in self._cells:
            cells = tuple(" ".join(self._textpage.get_text_bounded(*box).split()) for box in self.runs[line])
            self._cells[line] = cells if all(cells) and " ".join(cells) == self._texts[line] else None
        return self._cells[line]


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


def find_tables(page: PageCells, carry: OpenTable | None = None) -> list[PageTable]:
    """The tables among a page's lines (see the module docstring); ``carry``: the previous page's
    table that ran to its last line — the page's first lines in its columns (after a repeat of
    its header, which is dropped) go on with it. Linear in the lines: a run of lines is placed in
    columns by geometry, and its texts are read only when it may be a table."""
    out: list[PageTable] = []
    n, i = len(page), 0
    if carry is not None and n:
        j = 1 if page.runs[0] and page.cells(0) == tuple(carry.header) else 0
        rows, row_lines = [], []
        while j < n and (row := _row(page, j, carry.columns)) is not None:
            rows.append(row)
            row_lines.append(j)
            j += 1
        if rows:
            out.append(PageTable(0, j, rows, row_lines, continued=True))
            i = j
    while i < n:
        columns = list(page.runs[i])
        if len(columns) < 2:
            i += 1
            continue
        past = i + 1
        while past < n and _placed(page.runs[past], columns) is not None:
            past += 1
        if past - i < MIN_ROWS:
            i += 1
            continue
        if _long(page, range(i, min(past, i + SAMPLE_LINES)), columns):  # prose in columns: no table anywhere in it
            i = past
            continue
        rows = []
        for line in range(i, past):
            row = _row(page, line, columns)
            if row is None:  # its runs do not give its text back: the table ends above it
                break
            rows.append(row)
        if len(rows) >= MIN_ROWS and median(len(c) for row in rows for c in row if c) <= MAX_MEDIAN_CELL_CHARS:
            out.append(PageTable(i, i + len(rows), rows, list(range(i, i + len(rows)))))
            i += len(rows)
        else:
            i += 1
    return out


def open_table(tables: Sequence[PageTable], page: PageCells, carry: OpenTable | None) -> OpenTable | None:
    """The table of ``tables`` that runs to the page's last line, for the next page (``carry``:
    the one this page went on with)."""
    if not tables or tables[-1].past != len(page):
        return None
    last = tables[-1]
    if last.continued:
        return carry
    return OpenTable(list(page.runs[last.first]), last.rows[0])


def _long(page: PageCells, lines: range, columns: list[Box]) -> bool:
    """Whether the median cell of ``lines`` (those whose runs give their text back) is longer
    than :data:`MAX_MEDIAN_CELL_CHARS`."""
    lengths = [len(c) for line in lines if (row := _row(page, line, columns)) is not None for c in row if c]
    return bool(lengths) and median(lengths) > MAX_MEDIAN_CELL_CHARS


def _row(page: PageCells, line: int, columns: list[Box]) -> list[str] | None:
    """The line's cells' texts in ``columns`` (``""`` where it has none), or ``None`` when it is no
    row of them (:func:`_placed`) or its runs do not give its text back."""
    placed = _placed(page.runs[line], columns)
    texts = page.cells(line) if placed is not None else None
    if placed is None or texts is None:
        return None
    row = [""] * len(columns)
    for column, text in zip(placed, texts, strict=True):
        row[column] = text
    return row


def _placed(runs: tuple[Box, ...], columns: list[Box]) -> list[int] | None:
    """The column of each of ``runs`` (by horizontal overlap, else alignment), or ``None`` when the
    line is no row of ``columns``: fewer than two runs, a run over no column or two in one."""
    if len(runs) < 2:
        return None
    placed: list[int] = []
    for box in runs:
        overlaps = [min(box[2], col[2]) - max(box[0], col[0]) for col in columns]
        best = max(range(len(columns)), key=overlaps.__getitem__)
        if overlaps[best] <= 0 and not _aligned(box, columns[best]):
            nearest = min(range(len(columns)), key=lambda k: abs(_centre(box) - _centre(columns[k])))
            if not _aligned(box, columns[nearest]):
                return None
            best = nearest
        if best in placed:
            return None
        placed.append(best)
    return placed


def _centre(box: Box) -> float:
    return (box[0] + box[2]) / 2


def _aligned(box: Box, column: Box, tolerance: float = 2.0) -> bool:
    """Left, right or centre edges within ``tolerance`` points (a short number under a wide header)."""
    return (abs(box[0] - column[0]) <= tolerance or abs(box[2] - column[2]) <= tolerance
            or abs(_centre(box) - _centre(column)) <= tolerance)
