"""Sniffing picks a reader by content; the HTML and CSV readers; today's text path unchanged."""

from __future__ import annotations

import pytest

from ragspine.errors import IngestError
from ragspine.readers import DOCUMENT_READERS, read_bytes, sniff_format
from tests.unit.readers.pdfgen import make_pdf


@pytest.mark.parametrize(("data", "name", "fmt"), [
    (make_pdf([[(72, 700, "x")]]), "report.pdf", "pdf"),
    (make_pdf([[(72, 700, "x")]]), "notes.txt", "pdf"),  # the content wins over a lying extension
    (b"junk before the header %PDF-1.4 ...", "a.md", "pdf"),
    (b"# Title\n\ntext", "a.md", "text"),
    (b"<!DOCTYPE html><p>x</p>", "a.md", "text"),  # Markdown may hold HTML
    (b"<html><body>x</body></html>", "page.htm", "html"),
    (b"\xef\xbb\xbf  <!-- c --> <html>", "page", "html"),
    (b"a,b\n1,2\n", "t.csv", "csv"),
    (b"a\tb\n", "t.TSV", "csv"),
])
def test_sniff_format(data: bytes, name: str, fmt: str) -> None:
    assert sniff_format(data, name) == fmt
    assert fmt in DOCUMENT_READERS


@pytest.mark.parametrize(("data", "name", "needle"), [
    (b"just text", "report.pdf", r"report.pdf: not a PDF file \(no %PDF- header\): its extension does not match its content"),
    (b"just text", "deck.pptx", r"deck.pptx: not a PPTX file \(no ZIP header\)"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1rest", "old.docx", r"old.docx: a legacy Office file"),
    (b"\x89PNG\r\n", "scan.pdf", r"scan.pdf: a PNG image"),
    (b"PK\x03\x04broken", "a.xlsx", r"a.xlsx: a corrupt ZIP archive"),
])
def test_what_no_reader_takes_is_a_one_line_error(data: bytes, name: str, needle: str) -> None:
    with pytest.raises(IngestError, match=needle):
        sniff_format(data, name)


def test_a_zip_that_is_not_office() -> None:
    import io
    import zipfile

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("readme.txt", "x")
    with pytest.raises(IngestError, match=r"x.docx: a ZIP archive, not a Word, PowerPoint or Excel file"):
        sniff_format(out.getvalue(), "x.docx")


HTML = b"""<!DOCTYPE html><html><head><title>Field guide</title><meta name="author" content="Lin Wei">
<style>p { color: red }</style><script>var secret = "do not index";</script></head>
<body><nav>Home</nav><h1>Gearbox care</h1><p>Change the oil every <b>500</b> hours.</p>
<h2>Parts</h2><table><tr><th>Part</th><th>Life</th></tr><tr><td>Seal</td><td>2 years</td></tr></table>
<p>Questions &amp; answers go to the desk.</p></body></html>"""


def test_html_text_headings_tables_title_and_meta() -> None:
    doc = read_bytes(HTML, "guide.html")
    assert doc.format == "html" and doc.title == "Field guide" and doc.metadata == {"author": "Lin Wei"}
    assert doc.text == ("Home\n\n# Gearbox care\n\nChange the oil every 500 hours.\n\n## Parts\n\n"
                        "| Part | Life |\n| --- | --- |\n| Seal | 2 years |\n\nQuestions & answers go to the desk.")
    assert "secret" not in doc.text and "color" not in doc.text
    assert [(level, t) for _, level, t in doc.headings] == [(1, "Gearbox care"), (2, "Parts")]
    (start, end), = doc.tables
    assert doc.text[start:end].startswith("| Part | Life |")


def test_html_charset_from_meta() -> None:
    data = '<html><head><meta charset="gb18030"></head><body><p>会议纪要</p></body></html>'.encode("gb18030")
    assert read_bytes(data, "cn.html").text == "会议纪要"


def test_csv_is_one_unpaged_table() -> None:
    doc = read_bytes("\ufeffcity;output\nTianjin;1200\nFoshan;950\n".encode(), "plants.csv")
    assert doc.text == "| city | output |\n| --- | --- |\n| Tianjin | 1200 |\n| Foshan | 950 |"
    assert doc.tables == ((0, len(doc.text)),) and not doc.paged and doc.title == ""
    with pytest.raises(IngestError, match=r"bad.csv: not valid UTF-8 \(byte 2\)"):
        read_bytes(b"a,\xff\n", "bad.csv")


def test_text_keeps_front_matter_offset_and_markdown_headings() -> None:
    raw = "---\ntitle: T\n---\n# One\n\ntext\n\n## Two\n".encode()
    doc = read_bytes(raw, "a.md")
    assert doc.fields == {"title": "T"} and doc.body_offset == 17 and doc.text == "# One\n\ntext\n\n## Two\n"
    assert doc.headings == ((0, 1, "One"), (13, 2, "Two")) and doc.title == "One" and not doc.paged
    assert read_bytes(b"intro\n# not a title here", "a.txt").headings == ()
