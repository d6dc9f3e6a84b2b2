"""``ragspine show LOCATOR``: a cited passage from the store with its page and context;
snippets of paged documents carry ``page`` (txt/md snippets keep exactly their keys);
RESTRICTED text is never printed."""

from __future__ import annotations

import json

import pytest

from ragspine import cli
from ragspine.retrieval.snippet import Snippet, snippet_pages
from tests.helpers import needs
from tests.unit.readers.conftest import REPORT_PAGES, report_pdf

NOTES = "---\ntitle: Field notes\n---\n# Field notes\n\nThe Foshan crane was serviced on Tuesday.\n\nIts brakes were replaced.\n"
SECRET = "---\nsensitivity: RESTRICTED\n---\nThe merger with Orbis closes in March.\n"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def library(tmp_path, monkeypatch, capsys):
    needs("pypdfium2")
    monkeypatch.setenv("RAGSPINE_EMBEDDING", "none")
    monkeypatch.setenv("RAGSPINE_CHUNK_CHARS", "100")  # the PDF's pages are cut apart
    monkeypatch.setenv("RAGSPINE_OVERLAP_CHARS", "20")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "report.pdf").write_bytes(report_pdf())
    (docs / "notes.md").write_text(NOTES, encoding="utf-8")
    (docs / "secret.md").write_text(SECRET, encoding="utf-8")
    db = str(tmp_path / "show.db")
    code, _, err = run(capsys, "--db", db, "ingest", str(docs), "--library", "plants")
    assert code == 0, err
    return db, docs


def _query(capsys, db: str, text: str) -> list[dict]:
    code, out, err = run(capsys, "--db", db, "query", text, "--library", "plants", "--top-k", "3", "--json")
    assert code == 0, err
    return json.loads(out)


def test_a_pdf_snippet_carries_its_page_and_a_text_snippet_keeps_its_keys(library, capsys) -> None:
    db, _ = library
    passage = next(s for s in _query(capsys, db, "xylophone retrofit scrap") if s["doc_id"] == "report.pdf")
    assert passage["page"] == 2 and "page_end" not in passage  # one page: page_end only when it differs
    assert (passage["metadata"]["page"], passage["metadata"]["page_end"]) == (2, 2)
    note = next(s for s in _query(capsys, db, "Foshan crane serviced") if s["doc_id"] == "notes.md")
    assert "page" not in note and "page_end" not in note and "page" not in note["metadata"]
    assert set(note) == set(Snippet.__required_keys__)  # the seed's JSON, unchanged
    code, out, _ = run(capsys, "--db", db, "query", "xylophone retrofit scrap", "--library", "plants", "--top-k", "1")
    assert code == 0 and "#char=" in out and "(page 2)" in out


def test_snippet_pages_needs_the_pair_chunk_source_writes() -> None:
    assert snippet_pages({"page": 2, "page_end": 3}) == (2, 3)
    for meta in ({"page": 2}, {"page": "2", "page_end": 2}, {"page": True, "page_end": True}, {"page": 3, "page_end": 2}, {}):
        assert snippet_pages(meta) is None, meta


def test_show_prints_the_passage_with_its_page_and_context(library, capsys) -> None:
    db, docs = library
    passage = next(s for s in _query(capsys, db, "xylophone retrofit scrap") if s["doc_id"] == "report.pdf")
    code, out, err = run(capsys, "--db", db, "show", passage["source_locator"], "--library", "plants", "--context", "30")
    assert code == 0, err
    header, _, body = out.partition("\n\n")
    assert header.startswith(passage["source_locator"]) and "Plant review 2024" in header and header.endswith("page 2")
    before, _, rest = body.partition(">>>")
    text, _, after = rest.partition("<<<")
    assert text == passage["text"]
    assert before.startswith("…") and 0 < len(before.replace("…", "")) <= 30  # the document goes on before the context
    assert after.endswith("…\n") and 0 < len(after.replace("…", "").rstrip("\n")) <= 30
    assert "output and cost.…" in before  # the paragraph before, up to the gap between chunks
    code, out, err = run(capsys, "--db", db, "show", passage["source_locator"], "--json", "--context", "0")
    shown = json.loads(out)
    assert code == 0 and (shown["text"], shown["before"], shown["after"], shown["page"]) == (passage["text"], "…", "…", 2)
    assert shown["chunk_id"] == passage["chunk_id"] and shown["library_id"] == "plants" and shown["doc_id"] == "report.pdf"


def test_show_a_span_inside_a_chunk_a_chunk_id_and_a_text_file(library, capsys) -> None:
    db, docs = library
    note = next(s for s in _query(capsys, db, "Foshan crane serviced") if s["doc_id"] == "notes.md")
    start = NOTES.index("Foshan crane")
    locator = f"{docs / 'notes.md'}#char={start},{start + len('Foshan crane')}"  # a span of the file itself
    code, out, err = run(capsys, "--db", db, "show", locator)
    assert code == 0, err
    header, _, body = out.partition("\n\n")
    assert "page" not in header and "Field notes" in header
    assert ">>>Foshan crane<<<" in body and "The " in body and "serviced" in body
    code, out, _ = run(capsys, "--db", db, "show", note["chunk_id"], "--json")
    assert code == 0 and json.loads(out)["text"] == note["text"] and json.loads(out)["page"] is None
    # a span on the third page, not a chunk's exact span: the pages of the chunk holding it (the store keeps no
    # page boundaries; that chunk runs from page 2 onto page 3)
    pdf = docs / "report.pdf"
    from ragspine.documents import read_document

    text = read_document(pdf).text
    start = text.index(REPORT_PAGES[2][1][2])
    code, out, err = run(capsys, "--db", db, "show", f"{pdf}#char={start},{start + 6}", "--json")
    assert code == 0 and (json.loads(out)["page"], json.loads(out)["page_end"]) == (2, 3), err


def test_restricted_text_is_never_printed(library, capsys) -> None:
    db, docs = library
    start = SECRET.index("The merger")
    for span in ((start, start + 10), (start + 4, start + 30)):
        code, out, err = run(capsys, "--db", db, "show", f"{docs / 'secret.md'}#char={span[0]},{span[1]}")
        assert code == 2 and out == "" and "RESTRICTED" in err and "merger" not in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("locator, needle", [
    ("nowhere.pdf#char=0,10", "no document cited this way"),
    ("no-such-chunk", "no document cited this way"),
    ("{notes}#char=9000,9010", "holds no contiguous text at char=9000,9010"),
])
def test_a_locator_that_does_not_resolve_is_one_line(library, capsys, locator, needle) -> None:
    db, docs = library
    code, out, err = run(capsys, "--db", db, "show", locator.format(notes=docs / "notes.md"), "--library", "plants")
    assert code == 2 and out == "" and needle in err and len(err.splitlines()) == 1, err


def test_show_asks_for_a_library_when_two_hold_the_locator(library, capsys) -> None:
    db, docs = library
    assert run(capsys, "--db", db, "ingest", str(docs / "notes.md"), "--library", "other")[0] == 0
    start = NOTES.index("Its brakes")
    locator = f"{docs / 'notes.md'}#char={start},{start + 10}"
    code, _, err = run(capsys, "--db", db, "show", locator)
    assert code == 2 and "choose one with --library" in err
    code, out, _ = run(capsys, "--db", db, "show", locator, "--library", "other")
    assert code == 0 and ">>>Its brakes<<<" in out
    code, _, err = run(capsys, "--db", db, "show", locator, "--library", "nosuch")
    assert code == 2 and "unknown library 'nosuch'" in err
