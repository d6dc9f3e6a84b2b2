"""A PDF's tables (cells in aligned columns) read as Markdown rows; prose, even in two columns, as before."""

from __future__ import annotations

import pytest

from ragspine.readers.registry import read_bytes
from tests.helpers import needs
from tests.unit.readers.pdfgen import make_pdf

needs("pypdfium2")

COLUMNS = (72, 200, 330)
PARTS = [("Part", "Warehouse", "Price"), ("PN-0001", "Tianjin", "12.50"), ("PN-0002", "Foshan", "8.00"),
         ("PN-0003", "Ningbo", "130.25"), ("PN-0004", "Xiamen", "4.75")]


def table_page(rows=PARTS, top: float = 600, above: str = "Spare parts price list, valid from May.") -> list:
    lines = [(72, 700, above)] if above else []
    for number, row in enumerate(rows):
        lines += [(x, top - 18 * number, cell) for x, cell in zip(COLUMNS, row, strict=True)]
    lines.append((72, top - 18 * len(rows) - 40, "Prices exclude freight and are quoted in euros."))
    return lines


def test_a_table_is_read_as_markdown_rows_and_each_row_keeps_its_box() -> None:
    doc = read_bytes(make_pdf([table_page()]), "parts.pdf")
    table = "\n".join(["| Part | Warehouse | Price |", "| --- | --- | --- |", "| PN-0001 | Tianjin | 12.50 |",
                       "| PN-0002 | Foshan | 8.00 |", "| PN-0003 | Ningbo | 130.25 |", "| PN-0004 | Xiamen | 4.75 |"])
    assert doc.text == f"Spare parts price list, valid from May.\n\n{table}\n\nPrices exclude freight and are quoted in euros."
    (start, end), = doc.tables
    assert doc.text[start:end] == table
    rows = [b for b in doc.line_boxes if start <= b.start < end]
    assert [doc.text[b.start:b.end] for b in rows] == [line for line in table.split("\n") if "---" not in line]
    assert all(b.page == 1 for b in rows)
    lefts = [b.box[0] for b in rows]
    assert max(lefts) - min(lefts) < 1 and rows[0].box[1] > rows[-1].box[1]  # each row's line, top to bottom
    assert rows[0].box[2] > COLUMNS[2]  # the whole row, to its last cell


def test_a_long_pdf_table_is_cut_at_its_rows_with_its_column_names() -> None:
    from ragspine.documents import with_structure
    from ragspine.retrieval.chunking.chunking import ParagraphChunker

    rows = [PARTS[0]] + [(f"PN-{n:04d}", f"depot {n % 7}", f"{n}.25") for n in range(1, 31)]
    doc = read_bytes(make_pdf([table_page(rows, top=640)]), "parts.pdf")
    chunker = ParagraphChunker(max_chars=200, overlap_chars=0)
    chunks = with_structure(chunker.chunk(doc.text, "parts.pdf", source="parts.pdf"), doc, chunker)
    row_chunks = [c for c in chunks if c.metadata.get("table_header")]
    assert len(row_chunks) >= 3 and {c.metadata["table_header"] for c in row_chunks} == {"Part | Warehouse | Price"}
    for chunk in chunks:
        assert doc.text[chunk.char_start:chunk.char_end] == chunk.text
        for line in chunk.text.split("\n"):
            assert not line.startswith("|") or line.endswith("|")  # never a row cut in two


@pytest.mark.parametrize("rows", [1, 2])
def test_fewer_than_three_lines_are_no_table(rows: int) -> None:
    doc = read_bytes(make_pdf([table_page(PARTS[: rows])]), "short.pdf")
    assert doc.tables == () and "|" not in doc.text


def test_prose_in_two_columns_stays_lines() -> None:
    left = "The northern plant reviewed its safety record this year and found"
    right = "that the retrofit cut scrap by fourteen percent over the quarter,"
    page = [(x, 700 - 14 * n, text) for n in range(12) for x, text in ((72, left), (320, right))]
    doc = read_bytes(make_pdf([page], size=(640, 792), font_size=8), "paper.pdf")
    assert doc.tables == () and "|" not in doc.text
    assert doc.text.split("\n")[0] == f"{left} {right}"  # as before: the runs of a line, left to right


def test_a_pdf_without_tables_reads_as_before() -> None:
    from tests.unit.readers.conftest import report_pdf

    doc = read_bytes(report_pdf(), "report.pdf")
    assert doc.tables == () and "|" not in doc.text
    assert doc.text.startswith("Introduction\n\nKestrel Gearworks reviewed its northern plants this year.")


def _rows_page(rows, top: float = 700, after: str = "") -> list:
    lines = [(x, top - 18 * n, cell) for n, row in enumerate(rows) for x, cell in zip(COLUMNS, row, strict=True)]
    return lines + ([(72, top - 18 * len(rows) - 40, after)] if after else [])


@pytest.mark.parametrize("repeat_header", [True, False])
def test_a_table_running_onto_the_next_page_is_one_table(repeat_header: bool) -> None:
    first = [PARTS[0]] + [(f"PN-{n:04d}", f"depot {n}", f"{n}.50") for n in range(1, 5)]
    second = ([PARTS[0]] if repeat_header else []) + [(f"PN-{n:04d}", f"depot {n}", f"{n}.50") for n in range(5, 8)]
    doc = read_bytes(make_pdf([_rows_page(first), _rows_page(second, after="End of the price list.")]), "parts.pdf")
    (start, end), = doc.tables
    rows = [f"| PN-{n:04d} | depot {n} | {n}.50 |" for n in range(1, 8)]
    assert doc.text[start:end] == "\n".join(["| Part | Warehouse | Price |", "| --- | --- | --- |", *rows])  # the header once
    assert doc.text.endswith("\n\nEnd of the price list.")
    assert doc.pages_of(start, end) == [1, 2]
    at = doc.text.index("| PN-0005 |")
    assert doc.pages_of(at, at + 5) == [2] and doc.pages_of(start, start + 5) == [1]
    boxed = {doc.text[b.start:b.end]: b.page for b in doc.line_boxes if start <= b.start < end}
    assert boxed == {"| Part | Warehouse | Price |": 1, **{row: 1 if n < 5 else 2 for n, row in enumerate(rows, 1)}}


def test_a_page_starting_with_prose_starts_no_table() -> None:
    first = [PARTS[0]] + [(f"PN-{n:04d}", f"depot {n}", f"{n}.50") for n in range(1, 5)]
    second = [(72, 700, "Notes on the price list follow here.")] + _rows_page([(f"PN-{n:04d}", f"depot {n}", f"{n}.50") for n in range(5, 8)], top=660)
    doc = read_bytes(make_pdf([_rows_page(first), second]), "parts.pdf")
    (start, end), (start2, _) = doc.tables  # the second page's rows are a table of their own
    assert doc.pages_of(start, end) == [1] and doc.text[start2:].startswith("| PN-0005 | depot 5 | 5.50 |\n| --- |")


def test_prose_in_columns_is_judged_on_a_few_lines_without_reading_every_cell(monkeypatch) -> None:
    """Linear in a page's lines: a page of two-column prose reads the texts of its first
    ``SAMPLE_LINES`` lines' runs, not of all of them (the runs' geometry places the rest)."""
    from ragspine.readers import pdf_tables

    read: list[int] = []
    real = pdf_tables.PageCells.cells

    def counting(self, line):
        read.append(line)
        return real(self, line)

    monkeypatch.setattr(pdf_tables.PageCells, "cells", counting)
    left = "The northern plant reviewed its safety record this year and found"
    right = "that the retrofit cut scrap by fourteen percent over the quarter,"
    page = [(x, 760 - 12 * n, text) for n in range(60) for x, text in ((40, left), (320, right))]
    doc = read_bytes(make_pdf([page, page], size=(640, 792), font_size=8), "paper.pdf")
    assert doc.tables == ()
    assert len(set(read)) <= pdf_tables.SAMPLE_LINES and len(read) <= 2 * pdf_tables.SAMPLE_LINES  # per page, cached
