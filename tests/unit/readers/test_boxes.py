"""Issue 28 item 2: a PDF snippet's line boxes on its page(s), on request (``ragspine query --boxes``),
read again from its file; without the flag the answer is byte for byte what it was."""

from __future__ import annotations

import json

import pytest

from ragspine import cli
from ragspine.readers import ReaderLimits, read_bytes
from ragspine.retrieval.boxes import SourceBoxes, span_boxes
from tests.helpers import needs
from tests.unit.readers.conftest import docx_bytes, report_pdf

needs("pypdfium2", "docx")


def test_a_span_gets_the_boxes_of_the_lines_it_touches() -> None:
    doc = read_bytes(report_pdf(), "r.pdf")
    start = doc.text.index("The Tianjin plant")
    end = doc.text.index("会议纪要") + 3  # into the next line
    boxes = span_boxes(doc, start, end)
    assert [b["page"] for b in boxes] == [2, 2]
    tianjin, cjk = (line for line in doc.line_boxes if line.page == 2 and line.start >= start)
    assert boxes == [{"page": 2, "box": [round(v, 2) for v in tianjin.box]}, {"page": 2, "box": [round(v, 2) for v in cjk.box]}]
    left, bottom, right, top = boxes[0]["box"]
    assert 71 < left < 73 and bottom < 690 < top and right > left  # where the PDF drew it: x=72, baseline 690
    assert span_boxes(doc, start + 1, start + 2) == boxes[:1]  # one character: its line
    assert span_boxes(doc, 0, 0) == [] and span_boxes(doc, len(doc.text), len(doc.text) + 5) == []
    first, last = doc.pages[0][0], doc.pages[-1][1]
    assert [b["page"] for b in span_boxes(doc, first, last)] == [line.page for line in doc.line_boxes]


def test_only_an_unchanged_pdf_gives_boxes(tmp_path) -> None:
    pdf = tmp_path / "r.pdf"
    pdf.write_bytes(report_pdf())
    doc = read_bytes(pdf.read_bytes(), str(pdf))
    start = doc.text.index("Findings")
    locator, text = f"{pdf}#char={start},{start + 8}", "Findings"
    boxes = SourceBoxes()
    assert boxes.boxes(locator, text) == span_boxes(doc, start, start + 8) != []
    assert SourceBoxes().boxes(locator, "Findingz") is None  # not the text at the locator: never wrong boxes
    missing = SourceBoxes()
    assert missing.boxes(f"{tmp_path / 'gone.pdf'}#char=0,8", text) is None and "not there" in missing.why[str(tmp_path / "gone.pdf")]
    (tmp_path / "h.docx").write_bytes(docx_bytes())
    quiet = SourceBoxes()
    assert quiet.boxes(f"{tmp_path / 'h.docx'}#char=0,7", "# Scope") is None and quiet.why == {}  # no boxes in Word: nothing to say
    small = SourceBoxes(ReaderLimits(), max_bytes=100)
    assert small.boxes(locator, text) is None and "RAGSPINE_MAX_FILE_BYTES" in small.why[str(pdf)]


@pytest.fixture
def library(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RAGSPINE_EMBEDDING", "none")
    monkeypatch.setenv("RAGSPINE_CHUNK_CHARS", "100")
    monkeypatch.setenv("RAGSPINE_OVERLAP_CHARS", "20")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "report.pdf").write_bytes(report_pdf())
    (docs / "handbook.docx").write_bytes(docx_bytes())
    db = str(tmp_path / "cli.db")
    assert cli.main(["--db", db, "ingest", str(docs), "--library", "kb"]) == 0
    capsys.readouterr()
    return db, docs


def _query(capsys, db: str, *flags: str) -> tuple[str, str]:
    code = cli.main(["--db", db, "query", "xylophone retrofit scrap invoices", "--library", "kb", "--top-k", "10", *flags])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out, err


def test_query_boxes_adds_them_to_pdf_snippets_only_and_nothing_else(library, capsys) -> None:
    db, docs = library
    plain, _ = _query(capsys, db, "--json")
    boxed, err = _query(capsys, db, "--json", "--boxes")
    assert err == ""
    before, after = json.loads(plain), json.loads(boxed)
    assert [{k: v for k, v in s.items() if k != "boxes"} for s in after] == before  # the rest as it was
    assert all("boxes" not in s for s in before)
    pdf = [s for s in after if s["doc_id"] == "report.pdf"]
    assert pdf and all(s["boxes"] for s in pdf) and all("boxes" not in s for s in after if s["doc_id"] != "report.pdf")
    doc = read_bytes((docs / "report.pdf").read_bytes(), "r.pdf")
    for s in pdf:
        start, end = map(int, s["source_locator"].rsplit("#char=", 1)[1].split(","))
        assert s["boxes"] == span_boxes(doc, start, end)
        assert {b["page"] for b in s["boxes"]} <= set(range(s["page"], s.get("page_end", s["page"]) + 1))
    text, _ = _query(capsys, db, "--boxes")
    assert "   boxes: p2 [" in text
    assert "   boxes: " not in _query(capsys, db)[0]  # the text answer without the flag: as before


def test_boxes_come_from_the_store_even_when_the_file_is_gone(library, capsys) -> None:
    db, docs = library
    want = json.loads(_query(capsys, db, "--json", "--boxes")[0])
    (docs / "report.pdf").unlink()
    out, err = _query(capsys, db, "--json", "--boxes")
    assert json.loads(out) == want and err == ""
    assert any(s.get("boxes") for s in want)


def _forget_stored_boxes(db: str) -> None:
    """The library as an ingest before boxes were kept left it."""
    import sqlite3

    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE narrative_chunk SET boxes = ''")


def test_a_chunk_stored_without_boxes_gets_them_from_its_unchanged_file(library, capsys) -> None:
    db, docs = library
    want = json.loads(_query(capsys, db, "--json", "--boxes")[0])
    _forget_stored_boxes(db)
    assert json.loads(_query(capsys, db, "--json", "--boxes")[0]) == want


def test_a_pdf_changed_since_ingest_gives_no_boxes_and_says_why(library, capsys) -> None:
    db, docs = library
    _forget_stored_boxes(db)
    (docs / "report.pdf").write_bytes(report_pdf().replace(b"xylophone", b"saxophone"))
    out, err = _query(capsys, db, "--json", "--boxes")
    assert all("boxes" not in s for s in json.loads(out))
    assert f"ragspine: note: no boxes for {docs / 'report.pdf'}: the file changed since it was ingested" in err
