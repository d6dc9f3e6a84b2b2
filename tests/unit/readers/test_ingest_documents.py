"""``ragspine ingest DIR`` over a PDF, a DOCX and an XLSX, then queries find them, cited."""

from __future__ import annotations

import json

import pytest

from ragspine import cli
from ragspine.documents import read_document
from tests.helpers import needs
from tests.unit.readers.conftest import docx_bytes, report_pdf, xlsx_bytes

needs("pypdfium2", "docx", "openpyxl")


@pytest.fixture
def library(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RAGSPINE_EMBEDDING", "none")
    monkeypatch.setenv("RAGSPINE_CHUNK_CHARS", "100")  # small chunks: the PDF's pages are cut apart
    monkeypatch.setenv("RAGSPINE_OVERLAP_CHARS", "20")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "report.pdf").write_bytes(report_pdf())
    (docs / "handbook.docx").write_bytes(docx_bytes())
    (docs / "plants.xlsx").write_bytes(xlsx_bytes())
    (docs / "bomb.pptx").write_bytes(b"PK\x03\x04 not really a zip")
    db = str(tmp_path / "cli.db")
    code = cli.main(["--db", db, "ingest", str(docs), "--library", "plants", "--skip-bad"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "ingested 3 document(s)" in out
    assert f"skipped: {docs / 'bomb.pptx'}: a corrupt ZIP archive" in err
    return db, docs


def _query(capsys, db: str, text: str) -> list[dict]:
    code = cli.main(["--db", db, "query", text, "--library", "plants", "--top-k", "3", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def test_a_spreadsheet_row_and_a_pdf_passage_are_found_and_cited(library, capsys) -> None:
    db, docs = library
    (row,) = [s for s in _query(capsys, db, "zirconium bearings") if s["doc_id"] == "plants.xlsx"][:1]
    assert "| Zirconium bearings | 4200 |" in row["text"] and row["title"] == "Plant data"
    assert row["source_locator"].startswith(f"{docs / 'plants.xlsx'}#char=")
    (passage,) = [s for s in _query(capsys, db, "xylophone retrofit scrap") if s["doc_id"] == "report.pdf"][:1]
    assert "xylophone retrofit" in passage["text"] and passage["title"] == "Plant review 2024"
    handbook = [s for s in _query(capsys, db, "invoices paid days delivery") if s["doc_id"] == "handbook.docx"]
    assert handbook and "45 days" in handbook[0]["text"]
    for snippet in (row, passage, handbook[0]):  # provenance: the cited span of the text the reader extracted
        start, end = map(int, snippet["source_locator"].rsplit("#char=", 1)[1].split(","))
        assert read_document(docs / snippet["doc_id"], docs).text[start:end] == snippet["text"]


def test_snippets_of_paged_documents_carry_their_pages(library, capsys) -> None:
    """Needs ``ragspine/cli/ingest.py`` to cut documents with ``documents.chunk_source``."""
    db, _ = library
    (passage,) = [s for s in _query(capsys, db, "xylophone retrofit scrap") if s["doc_id"] == "report.pdf"][:1]
    assert (passage["metadata"]["page"], passage["metadata"]["page_end"]) == (2, 2)
    (row,) = [s for s in _query(capsys, db, "zirconium bearings") if s["doc_id"] == "plants.xlsx"][:1]
    # the row is on the second sheet; the chunk's overlap may begin on the first (``page`` is the first page touched)
    assert row["metadata"]["page"] <= row["metadata"]["page_end"] == 2
    (handbook,) = [s for s in _query(capsys, db, "invoices paid days delivery") if s["doc_id"] == "handbook.docx"][:1]
    assert "page" not in handbook["metadata"] and "page_end" not in handbook["metadata"]  # not paged: as before
