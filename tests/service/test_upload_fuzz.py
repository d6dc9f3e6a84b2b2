"""Fuzzing the file upload with real formats (issue 28 item 7): schemathesis sends the upload
route arbitrary bytes under arbitrary names (``test_schemathesis.py``), which never get past
sniffing; here Hypothesis sends PDF, Word, PowerPoint, Excel, HTML, CSV, text and image files —
whole, truncated, with bytes flipped, spliced into each other, or garbage — under names and
media types that are right, wrong or lying, against limits set low so every one of them is hit
(file size, PDF pages and page characters, HTML markup, ZIP ratio, text, read time).

Whatever arrives, the answer is 202 (and its job succeeds) or 413/415/422 with a one-line
message naming the file, never a 5xx; a refused upload leaves nothing behind (no job, no
document, the library's other documents as they were).
"""

from __future__ import annotations

import io
import os
import zipfile

import pytest

from tests.helpers import needs

needs("fastapi", "pypdfium2", "docx", "pptx", "openpyxl")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from ragspine.service.ingest import MEDIA_FORMATS  # noqa: E402
from tests.service.conftest import ok_job, open_service, wait_jobs_idle  # noqa: E402
from tests.unit.readers.conftest import docx_bytes, pptx_bytes, report_pdf, xlsx_bytes  # noqa: E402
from tests.unit.readers.pdfgen import make_pdf  # noqa: E402
from tests.unit.service.conftest import doc, ingest, new_library, new_tenant, wait_job  # noqa: E402

MAX_EXAMPLES = int(os.environ.get("RAGSPINE_TEST_UPLOAD_EXAMPLES", "60"))
UPLOAD = "/v1/libraries/kb/documents/upload"
#: limits low enough that the generated files reach each of them
LIMITS = {
    "RAGSPINE_MAX_FILE_BYTES": "60000", "RAGSPINE_MAX_PDF_PAGES": "3", "RAGSPINE_MAX_PAGE_CHARS": "3000",
    "RAGSPINE_MAX_HTML_BYTES": "4000", "RAGSPINE_MAX_TEXT_CHARS": "20000", "RAGSPINE_MAX_READ_SECONDS": "30",
}


def zip_bomb() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("word/document.xml", "0" * 2_000_000)
    return out.getvalue()


def png() -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("L", (40, 30), 255).save(out, format="PNG")
    return out.getvalue()


def documents() -> list[bytes]:
    dense = make_pdf([[(10, 780 - 10 * row, "x" * 200) for row in range(20)]])  # 4,000 glyphs on one page
    return [
        report_pdf(), docx_bytes(), pptx_bytes(), xlsx_bytes(), dense,
        make_pdf([[(72, 700, f"page {n}")] for n in range(5)]),  # over the page limit
        make_pdf([[(72, 700, "secret")]], encrypted=True), make_pdf([[]]), zip_bomb(),
        b"<html><head><title>T</title><script>alert('x')</script><style>p{}</style></head>"
        b"<body><h1>Gearbox</h1><p>The warranty lasts 36 months.</p></body></html>",
        b"<p>" + b"markup " * 1000 + b"</p>",  # over the HTML limit
        b"Plant,City\nNorth,Tianjin\nSouth,Foshan\n", "# Note\n\nKestrel's gearbox, 会议纪要.\n".encode(),
        b"---\ndoc_id: fm\nsensitivity: RESTRICTED\n---\nA restricted note.\n", b"x" * 70_000, b"",
        b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 64,  # a legacy .doc
    ] + ([png()] if _has_pil() else [])


def _has_pil() -> bool:
    try:
        import PIL  # noqa: F401
    except ImportError:
        return False
    return True


@st.composite
def payloads(draw: st.DrawFn, bases: list[bytes]) -> bytes:
    """A real document as it is, cut short, with bytes changed, spliced with another, or garbage."""
    how = draw(st.sampled_from(["whole", "whole", "cut", "flip", "splice", "garbage"]))
    if how == "garbage":
        return draw(st.binary(max_size=2000))
    data = draw(st.sampled_from(bases))
    if how == "cut" and data:
        return data[: draw(st.integers(0, len(data) - 1))]
    if how == "flip" and data:
        out = bytearray(data)
        for _ in range(draw(st.integers(1, 8))):
            out[draw(st.integers(0, len(out) - 1))] = draw(st.integers(0, 255))
        return bytes(out)
    if how == "splice":
        other = draw(st.sampled_from(bases))
        return data[: draw(st.integers(0, len(data)))] + other[draw(st.integers(0, len(other))):]
    return data


NAMES = st.tuples(
    st.sampled_from(["report", "a b", "会议", "..", "x" * 200]),
    st.sampled_from([".pdf", ".docx", ".pptx", ".xlsx", ".html", ".htm", ".csv", ".tsv", ".txt", ".md", ".png", ".doc", ".exe", ""]),
).map("".join)
MEDIA = st.sampled_from([*MEDIA_FORMATS, "", "application/octet-stream", "application/zip", "text/x-nonsense", "image/gif"])


@pytest.fixture
def limited(stack_environ, tmp_path):
    stack, environ = stack_environ
    with open_service(stack, {**environ, **LIMITS}, tmp_path) as service:
        yield service


def test_no_upload_is_a_server_error_and_a_refused_one_writes_nothing(limited) -> None:
    client = limited.client
    headers = new_tenant(client, "acme")
    new_library(client, headers, "kb")
    ok_job(limited, ingest(client, headers, "kb", doc("kept", "The gearbox warranty lasts 36 months.")))
    bases = documents()
    seen: dict[int, int] = {}

    @given(data=payloads(bases), name=NAMES, media=MEDIA)
    @settings(max_examples=MAX_EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    def fuzz(data: bytes, name: str, media: str) -> None:
        jobs = client.get("/v1/jobs?limit=500", headers=headers).json()
        docs = client.get("/v1/libraries/kb/documents", headers=headers).json()["doc_ids"]
        r = client.post(UPLOAD, files={"file": (name, data, media)}, headers=headers)
        seen[r.status_code] = seen.get(r.status_code, 0) + 1
        assert r.status_code in (202, 413, 415, 422), (r.status_code, r.text[:500])
        if r.status_code == 202:
            job = wait_job(client, headers, r.json()["job_id"])
            assert job["state"] == "succeeded" or job["error"].startswith("superseded"), job
            return
        body = r.json()
        message = body.get("message") or body.get("detail")
        assert isinstance(message, str) and "\n" not in message and message, body
        assert client.get("/v1/jobs?limit=500", headers=headers).json() == jobs  # no job
        assert client.get("/v1/libraries/kb/documents", headers=headers).json()["doc_ids"] == docs  # nothing written

    fuzz()
    wait_jobs_idle(limited, headers)
    assert "kept" in client.get("/v1/libraries/kb/documents", headers=headers).json()["doc_ids"]
    print(f"upload answers: {dict(sorted(seen.items()))}")
    assert seen.get(202) and seen.get(422) and seen.get(415), seen  # the cases reached each answer
