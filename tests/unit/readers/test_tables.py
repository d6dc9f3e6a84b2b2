"""Tables stay tables (issue 28): a long table is cut at its rows, each row chunk cites the rows
themselves and carries the column names into the index text, and nothing else changes."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path

import pytest

from ragspine import cli
from ragspine.documents import chunk_source, read_document, with_boxes, with_pages
from ragspine.errors import MissingDependencyError
from ragspine.readers.base import TextBuilder
from ragspine.retrieval.chunking.base import make_chunker
from ragspine.retrieval.chunking.tables import TABLE_HEADER, table_row_chunks
from ragspine.retrieval.contextual import contextual_header, contextual_index_text, make_index_text_fn
from ragspine.retrieval.lexical.base import default_index_text
from tests.helpers import needs

HEADER = ["Part number", "Description", "Price (EUR)", "Warehouse"]
ROWS = [[f"PN-{i:04d}", f"{word} bearing assembly", f"{i * 7 % 1000}.{i % 10}5", city]
        for i, (word, city) in enumerate(zip(["steel", "bronze", "ceramic", "nylon", "zirconium"] * 12, ["Lyon", "Graz", "Turin"] * 20, strict=True))]


def parts_csv() -> str:
    return "\n".join(",".join(row) for row in [HEADER, *ROWS]) + "\n"


def _row_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("| PN-")]


def _read(tmp_path: Path, name: str, data: bytes | str):
    path = tmp_path / name
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return read_document(path, tmp_path)


@pytest.mark.parametrize("chunker", ["default", "layout", "parent_child"])
def test_a_long_table_is_cut_at_rows_each_chunk_citing_its_rows(tmp_path, chunker) -> None:
    doc = _read(tmp_path, "parts.csv", parts_csv())
    cutter = make_chunker(chunker, max_chars=300, overlap_chars=40)
    chunks = chunk_source(doc, cutter)
    rows = _row_lines(doc.text)
    assert len(rows) == 60 and len(chunks) > 10
    for i, chunk in enumerate(chunks):
        assert chunk.ordinal == i and chunk.chunk_id == f"parts.csv#{i}"
        assert doc.text[chunk.char_start:chunk.char_end] == chunk.text  # the citation is the document's bytes
        assert chunk.source_locator == f"{tmp_path / 'parts.csv'}#char={chunk.char_start},{chunk.char_end}"
        assert len(chunk.text) <= 300
        if chunk.parent_locator:  # a parent window, when kept, holds the rows
            a, b = map(int, chunk.parent_locator.rsplit("#char=", 1)[1].split(","))
            assert a <= chunk.char_start and chunk.char_end <= b and chunk.window_text == doc.text[a:b]
    # every row is whole in exactly one chunk: none split (the old cut fell at "12.35"'s dot)
    for row in rows:
        assert sum(row in _row_lines(c.text) for c in chunks) == 1, row
    assert sum(len(_row_lines(c.text)) for c in chunks) == len(rows)
    # the first chunk holds the header row itself; every other one names the columns for the index
    assert chunks[0].text.startswith("| Part number | Description | Price (EUR) | Warehouse |\n| --- |")
    assert TABLE_HEADER not in chunks[0].metadata
    for chunk in chunks[1:]:
        assert chunk.metadata[TABLE_HEADER] == "Part number | Description | Price (EUR) | Warehouse"
        assert "Part number" not in chunk.text
        assert default_index_text(chunk) == chunk.text  # RAGSPINE_CONTEXTUAL=none: the text alone
        assert contextual_index_text(chunk) == f"parts\nPart number | Description | Price (EUR) | Warehouse\n{chunk.text}"


def test_the_old_cut_split_rows() -> None:
    """What the row cut fixes: the chunker alone splits rows (at a price's decimal point)."""
    builder = TextBuilder()
    builder.table([HEADER, *ROWS])
    text = builder.text
    chunks = make_chunker("default", max_chars=300, overlap_chars=40).chunk(text, "parts.csv")
    assert any(sum(row in c.text for c in chunks) == 0 for row in _row_lines(text))


def test_unit_packing_makes_one_chunk_per_row(tmp_path) -> None:
    doc = _read(tmp_path, "parts.csv", parts_csv())
    chunks = chunk_source(doc, make_chunker("default", max_chars=300, overlap_chars=40, packing="unit"))
    assert [len(_row_lines(c.text)) for c in chunks] == [1] * 60
    assert chunks[0].text.startswith("| Part number |") and chunks[1].text == _row_lines(doc.text)[1]


def test_a_table_that_fits_the_budget_is_left_to_the_chunker(tmp_path) -> None:
    doc = _read(tmp_path, "small.csv", "Item,EUR\nZirconium bearings,4200\nFreight,12.5\n")
    cutter = make_chunker("default")
    assert doc.structure.tables and chunk_source(doc, cutter) == cutter.chunk(
        doc.text, doc.doc_id, title=doc.title, metadata=doc.metadata, sensitivity=doc.sensitivity, source=doc.source)


def test_a_row_over_the_budget_is_cut_between_cells() -> None:
    builder = TextBuilder()
    wide = [f"{'word ' * 20}cell {i}" for i in range(6)]  # a row of ~660 characters
    builder.table([["a", "b", "c", "d", "e", "f"], ["short", "row", "", "", "", ""], wide])
    structure = builder.build("wide.csv")
    cutter = make_chunker("default", max_chars=200, overlap_chars=20)
    chunks = table_row_chunks(cutter.chunk(structure.text, "wide.csv"), structure, cutter)
    assert all(len(c.text) <= 200 and structure.text[c.char_start:c.char_end] == c.text for c in chunks)
    pieces = [c for c in chunks if "cell" in c.text]
    assert len(pieces) >= 4 and all(c.text.rstrip("|").rstrip().endswith(tuple(f"cell {i}" for i in range(6))) for c in pieces)
    assert all(c.metadata[TABLE_HEADER] == "a | b | c | d | e | f" for c in pieces)


def test_text_before_and_after_a_long_table_keeps_its_chunks(tmp_path) -> None:
    needs("docx")
    import docx

    document = docx.Document()
    document.add_heading("Price list", level=1)
    document.add_paragraph("Prices are in euros and include packaging.")
    table = document.add_table(rows=1 + len(ROWS), cols=len(HEADER))
    for r, row in enumerate([HEADER, *ROWS]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    document.add_paragraph("Orders over 10,000 euros ship free of charge.")
    out = io.BytesIO()
    document.save(out)
    doc = _read(tmp_path, "prices.docx", out.getvalue())
    chunks = chunk_source(doc, make_chunker("layout", max_chars=300, overlap_chars=40))
    assert chunks[0].text == "# Price list\n\nPrices are in euros and include packaging."
    assert chunks[-1].text == "Orders over 10,000 euros ship free of charge."  # the chunker's overlap into the table clipped
    assert all(c.heading == "Price list" for c in chunks)
    assert sum(len(_row_lines(c.text)) for c in chunks) == 60
    assert chunks[1].text.startswith("| Part number |") and all(TABLE_HEADER in c.metadata for c in chunks[2:-1])


def test_a_workbook_sheets_are_pages_and_row_chunks_name_their_sheet_and_columns(tmp_path) -> None:
    needs("openpyxl")
    import openpyxl

    book = openpyxl.Workbook()
    first = book.active
    first.title = "Bearings"
    for row in [HEADER, *ROWS[:30]]:
        first.append(row)
    second = book.create_sheet("Seals")
    for row in [["Seal", "Diameter (mm)", "Stock"], *[[f"S-{i}", 10 + i, i * 3] for i in range(40)]]:
        second.append(row)
    out = io.BytesIO()
    book.save(out)
    doc = _read(tmp_path, "catalogue.xlsx", out.getvalue())
    chunks = chunk_source(doc, make_chunker("layout", max_chars=250, overlap_chars=30))
    by_page = {p: [c for c in chunks if c.metadata["page"] == p] for p in (1, 2)}
    assert all(c.metadata["page"] == c.metadata["page_end"] for c in chunks)
    assert by_page[1][0].text.startswith("# Bearings\n\n| Part number |")  # the sheet's name goes with its rows
    assert by_page[2][0].text.startswith("# Seals\n\n| Seal | Diameter (mm) | Stock |")
    assert {c.heading for c in by_page[1]} == {"Bearings"} and {c.heading for c in by_page[2]} == {"Seals"}
    seal = next(c for c in by_page[2] if "| S-33 | 43 | 99 |" in c.text)
    assert contextual_index_text(seal) == f"catalogue · Seals\nSeal | Diameter (mm) | Stock\n{seal.text}"


def _old_contextual_index_text(chunk) -> str:
    header = contextual_header(chunk)
    return f"{header}\n{chunk.text}" if header else str(chunk.text)


@pytest.mark.parametrize("chunker", ["default", "layout", "parent_child", "book"])
def test_documents_without_long_tables_keep_their_chunks_and_index_texts(chunker) -> None:
    """The demo corpus (Markdown, a PDF, a workbook of two small tables): the same chunks as the
    chunker alone cuts, and the same index text under either RAGSPINE_CONTEXTUAL."""
    corpus = Path(__file__).resolve().parents[3] / "ragspine" / "demo" / "corpus"
    cutter = make_chunker(chunker)
    seen = 0
    for path in sorted(corpus.iterdir()):
        if path.name.endswith(".meta.yaml"):
            continue
        try:
            doc = read_document(path, corpus)
        except MissingDependencyError:  # a PDF or workbook without the documents extra
            continue
        plain = cutter.chunk(doc.text, doc.doc_id, title=doc.title, metadata=doc.metadata, sensitivity=doc.sensitivity,
                             source=doc.source, source_offset=doc.body_offset)
        if doc.structure is not None and doc.structure.paged:
            plain = with_pages(plain, doc.structure, doc.body_offset)
        if doc.structure is not None and doc.structure.line_boxes:  # a PDF's chunks keep their lines' boxes
            plain = with_boxes(plain, doc.structure, doc.body_offset)
        got = chunk_source(doc, cutter)
        assert got == plain, path.name
        for chunk in got:
            assert make_index_text_fn("none")(chunk) == chunk.text
            assert make_index_text_fn("header")(chunk) == _old_contextual_index_text(chunk)
        seen += 1
    assert seen >= 7


def test_a_user_field_named_table_header_is_kept_off_row_chunks_of_another_table() -> None:
    builder = TextBuilder()
    builder.table([HEADER, *ROWS])
    structure = builder.build("parts.csv")
    cutter = make_chunker("default", max_chars=300, overlap_chars=40)
    plain = [replace(c, metadata={TABLE_HEADER: "mine"}) for c in cutter.chunk(structure.text, "parts.csv")]
    chunks = table_row_chunks(plain, structure, cutter)
    assert TABLE_HEADER not in chunks[0].metadata and chunks[1].metadata[TABLE_HEADER].startswith("Part number")


@pytest.fixture
def library(tmp_path, monkeypatch, capsys):
    """Two long CSVs of the same parts (prices, audits), ingested by ``ragspine ingest`` with the
    contextual header on."""
    monkeypatch.setenv("RAGSPINE_EMBEDDING", "none")
    monkeypatch.setenv("RAGSPINE_CHUNK_CHARS", "300")
    monkeypatch.setenv("RAGSPINE_OVERLAP_CHARS", "40")
    monkeypatch.setenv("RAGSPINE_CONTEXTUAL", "header")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "parts.csv").write_text(parts_csv())
    (docs / "audits.csv").write_text("Part number,Auditor,Result\n" + "".join(f"PN-{i:04d},{['Kim', 'Ode', 'Lin'][i % 3]},pass\n" for i in range(60)))
    db = str(tmp_path / "cli.db")
    code = cli.main(["--db", db, "ingest", str(docs), "--library", "parts"])
    assert code == 0, capsys.readouterr().err
    capsys.readouterr()
    return db, docs


def _query(capsys, db: str, text: str) -> list[dict]:
    code = cli.main(["--db", db, "query", text, "--library", "parts", "--top-k", "3", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


@pytest.mark.parametrize("question", ["price in EUR of PN-0031", "which warehouse holds PN-0031"])
def test_a_question_naming_a_column_and_a_cell_finds_the_row(library, capsys, question) -> None:
    """Without the column names in the row chunks' index text, the table's first chunk (the
    only one whose text says "Price (EUR)" and "Warehouse") wins, and it lacks the row."""
    db, docs = library
    top = _query(capsys, db, question)[0]
    assert top["doc_id"] == "parts.csv" and "| PN-0031 | bronze bearing assembly | 217.15 | Graz |" in top["text"].splitlines()
    start, end = map(int, top["source_locator"].rsplit("#char=", 1)[1].split(","))
    assert read_document(docs / "parts.csv", docs).text[start:end] == top["text"]  # the citation is the rows
    assert "Part number" not in top["text"] and "Warehouse" not in top["text"]
