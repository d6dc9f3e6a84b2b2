"""``POST /v1/libraries/{name}/documents/upload`` takes every format ``ragspine ingest`` reads,
through the same readers and limits: too large → 413, an unsupported or lying type → 415, a
corrupt, encrypted or over-limit file → 422, never a 5xx; form fields are the front matter."""

from __future__ import annotations

import json

import pytest

from tests.helpers import needs
from tests.unit.readers.conftest import docx_bytes, pptx_bytes, report_pdf, xlsx_bytes
from tests.unit.readers.pdfgen import make_pdf
from tests.unit.service.conftest import make_settings, new_library, new_tenant, retrieve, wait_job

needs("fastapi", "pypdfium2", "docx", "pptx", "openpyxl")

from fastapi.testclient import TestClient  # noqa: E402

from ragspine.service.app import create_app  # noqa: E402

PDF = "application/pdf"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
UPLOAD = "/v1/libraries/hb/documents/upload"


@pytest.fixture
def headers(client):
    headers = new_tenant(client)
    new_library(client, headers, "hb", embedding_model="none")
    return headers


def upload(client, headers, name: str, data: bytes, media: str = "application/octet-stream", **form: str):
    return client.post(UPLOAD, files={"file": (name, data, media)}, data=form, headers=headers)


def uploaded(client, headers, name: str, data: bytes, media: str = "application/octet-stream", **form: str) -> dict:
    r = upload(client, headers, name, data, media, **form)
    assert r.status_code == 202, r.text
    job = wait_job(client, headers, r.json()["job_id"])
    assert job["state"] == "succeeded", job
    return job


def test_a_pdf_upload_is_cited_with_its_page_in_retrieve_and_dify(client, headers) -> None:
    uploaded(client, headers, "report.pdf", report_pdf(), PDF, sensitivity="INTERNAL", metadata=json.dumps({"team": "ops"}))
    s = retrieve(client, headers, "xylophone retrofit scrap").json()["snippets"][0]
    assert (s["doc_id"], s["title"], s["sensitivity"]) == ("report.pdf", "Plant review 2024", "INTERNAL")
    assert s["source_locator"].startswith("report.pdf#char=") and "xylophone retrofit" in s["text"]
    assert s["metadata"]["team"] == "ops" and s["metadata"]["author"] == "Ada Byron"
    assert s["page"] == s["metadata"]["page"] and s["metadata"]["page_end"] >= 2
    body = {"knowledge_id": "hb", "query": "xylophone retrofit", "retrieval_setting": {"top_k": 3, "score_threshold": 0}}
    record = client.post("/retrieval", json=body, headers=headers).json()["records"][0]
    assert record["metadata"]["page"] == s["page"] and "page_end" in record["metadata"]
    assert record["metadata"]["source_locator"] == s["source_locator"]


@pytest.mark.parametrize("name, build, media, query, needle", [
    ("handbook.docx", docx_bytes, DOCX, "invoices paid days delivery", "45 days"),
    ("deck.pptx", pptx_bytes, "application/octet-stream", "field engineers", "field engineers"),
    ("plants.xlsx", xlsx_bytes, "", "zirconium bearings", "Zirconium bearings"),
    ("table.csv", lambda: b"plant,city\nNorth,Tianjin\n", "text/csv", "Tianjin", "Tianjin"),
    ("page.html", lambda: b"<html><title>Site</title><body><p>Quokka survey results.</p></body></html>", "text/html",
     "quokka survey", "Quokka survey"),
])
def test_every_format_of_ingest_uploads(client, headers, name, build, media, query, needle) -> None:
    uploaded(client, headers, name, build(), media)
    s = retrieve(client, headers, query).json()["snippets"][0]
    assert s["doc_id"] == name and needle in s["text"]
    assert ("page" in s) == name.endswith((".pptx", ".xlsx"))


def test_a_text_upload_is_as_before(client, headers) -> None:
    content = "---\ndoc_id: policy-7\nsensitivity: PUBLIC\n---\n# Travel policy\n\nTrains are preferred over flights.\n"
    uploaded(client, headers, "travel.md", content.encode(), "text/markdown")
    s = retrieve(client, headers, "trains flights").json()["snippets"][0]
    assert (s["doc_id"], s["title"], s["sensitivity"]) == ("policy-7", "Travel policy", "PUBLIC") and "page" not in s
    job = client.get("/v1/jobs", headers=headers).json()[0]
    assert job["state"] == "succeeded"


@pytest.mark.parametrize("name, data, media, status, needle", [
    ("scan.png", b"\x89PNG\r\n\x1a\n....", "image/png", 415, "set RAGSPINE_OCR"),
    ("photo.pdf", b"\x89PNG\r\n\x1a\n....", PDF, 415, "a PNG image"),
    ("old.doc", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 64, "application/msword", 415, "legacy Office"),
    ("fake.docx", b"just some text", DOCX, 415, "its extension does not match its content"),
    ("notes.txt", b"plain text, sent as a PDF", PDF, 415, "the media type does not match the content"),
    ("a.pdf", b"%PDF-1.4", PDF, 422, "a.pdf"),
    ("locked.pdf", None, PDF, 422, "encrypted"),
    ("broken.xlsx", b"PK\x03\x04 not really a zip", "", 422, "corrupt ZIP"),
    ("a.txt", b"\xff\xfe bad", "text/plain", 422, "UTF-8"),
    ("empty.pdf", make_pdf([[]]), PDF, 422, "no text"),
])
def test_bad_files_are_4xx_before_a_job_exists(client, headers, name, data, media, status, needle) -> None:
    data = make_pdf([[(72, 720, "secret")]], encrypted=True) if data is None else data
    r = upload(client, headers, name, data, media)
    assert r.status_code == status and needle in r.json().get("message", r.json().get("detail", "")), r.text
    assert client.get("/v1/jobs", headers=headers).json() == []


@pytest.mark.parametrize("form, needle", [
    ({"sensitivity": "Restricted\u200b"}, None),
    ({"metadata": json.dumps({"tags": ["a", "b"]})}, "tags"),
    ({"metadata": json.dumps({"sensitivity": "PUBLIC"})}, "document field"),
])
def test_form_fields_follow_the_front_matter_rules(client, headers, form, needle) -> None:
    r = upload(client, headers, "report.pdf", report_pdf(), PDF, **form)
    if needle is None:  # a lookalike label fails closed: RESTRICTED, never shown
        assert r.status_code == 202 and wait_job(client, headers, r.json()["job_id"])["state"] == "succeeded"
        assert retrieve(client, headers, "xylophone retrofit").json()["snippets"] == []
        return
    assert r.status_code == 422 and needle in r.json()["message"], r.text


def test_limits_come_from_the_settings(tmp_path) -> None:
    settings = make_settings(tmp_path, RAGSPINE_MAX_FILE_BYTES="20000", RAGSPINE_MAX_PDF_PAGES="2")
    with TestClient(create_app(settings)) as client:
        headers = new_tenant(client)
        new_library(client, headers, "hb", embedding_model="none")
        r = upload(client, headers, "big.txt", b"x" * 20_001, "text/plain")
        assert r.status_code == 413 and "RAGSPINE_MAX_FILE_BYTES" in r.json()["detail"]
        r = upload(client, headers, "long.pdf", make_pdf([[(72, 720, f"page {i}")] for i in range(3)]), PDF)
        assert r.status_code == 422 and "RAGSPINE_MAX_PDF_PAGES" in r.json()["message"], r.text


def test_a_reader_librarys_own_error_is_422_not_500(client, headers, monkeypatch) -> None:
    from ragspine.readers.pdf import PdfiumDocumentReader

    def boom(self, data, where):
        raise KeyError("/Root")

    monkeypatch.setattr(PdfiumDocumentReader, "read", boom)
    r = upload(client, headers, "report.pdf", report_pdf(), PDF)
    assert r.status_code == 422 and "cannot read this pdf file" in r.json()["message"], r.text


def test_a_long_sheet_upload_is_cut_at_its_rows_as_ingest_cuts_it(client, headers, tmp_path) -> None:
    """The upload job cuts a long table at its rows, with its column names for the index, as
    ``ragspine ingest`` does: the same chunks from the same file."""
    import io

    import openpyxl

    from ragspine.documents import chunk_source, read_document
    from ragspine.retrieval.chunking.chunking import ParagraphChunker

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Parts"
    sheet.append(("Part number", "Description", "Warehouse"))
    for n in range(60):
        sheet.append((f"PN-{n:04d}", f"spare part number {n} for the pump line", f"depot-{n % 7}"))
    out = io.BytesIO()
    book.save(out)
    uploaded(client, headers, "parts.xlsx", out.getvalue())
    path = tmp_path / "parts.xlsx"
    path.write_bytes(out.getvalue())
    expected = {c.text: c for c in chunk_source(read_document(path, tmp_path), ParagraphChunker())}
    found = [s for s in retrieve(client, headers, "PN-0031 depot", top_k=10).json()["snippets"] if s["doc_id"] == "parts.xlsx"]
    assert any("| PN-0031 |" in s["text"] for s in found)
    for s in found:
        assert s["text"] in expected, s["text"][:80]  # a chunk ingest cuts too
        assert all(line.startswith(("|", "# ")) and (line.endswith("|") or line.startswith("# ")) for line in s["text"].splitlines() if line.strip())
        assert s["metadata"].get("table_header") == expected[s["text"]].metadata.get("table_header")
    assert any(s["metadata"].get("table_header") == "Part number | Description | Warehouse" for s in found)


def test_boxes_on_request_come_from_the_upload_and_nothing_changes_without(client, headers) -> None:
    """``"boxes": true`` gives each PDF snippet its lines' boxes, kept at upload from the bytes
    sent (no path is ever read again); without it the answer is as before, and a text
    document's snippets never get the field."""
    from ragspine.readers.registry import read_bytes
    from ragspine.retrieval.boxes import span_boxes

    uploaded(client, headers, "report.pdf", report_pdf(), PDF)
    uploaded(client, headers, "notes.md", b"# Notes\n\nThe xylophone retrofit is explained here.\n", "text/markdown")
    plain = retrieve(client, headers, "xylophone retrofit scrap", top_k=10).json()
    boxed = retrieve(client, headers, "xylophone retrofit scrap", top_k=10, boxes=True).json()
    assert all("boxes" not in s for s in plain["snippets"])
    assert [{k: v for k, v in s.items() if k != "boxes"} for s in boxed["snippets"]] == plain["snippets"]
    doc = read_bytes(report_pdf(), "report.pdf")
    pdf = [s for s in boxed["snippets"] if s["doc_id"] == "report.pdf"]
    assert pdf and any(s["doc_id"] == "notes.md" for s in boxed["snippets"])
    for s in boxed["snippets"]:
        if s["doc_id"] != "report.pdf":
            assert "boxes" not in s
            continue
        start, end = map(int, s["source_locator"].rsplit("#char=", 1)[1].split(","))
        assert s["boxes"] == span_boxes(doc, start, end) and s["boxes"]
        assert {b["page"] for b in s["boxes"]} <= set(range(s["page"], s.get("page_end", s["page"]) + 1))
