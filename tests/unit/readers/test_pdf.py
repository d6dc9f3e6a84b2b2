"""The PDF reader: text, pages, bookmarks as headings, CJK, line boxes, bad PDFs refused."""

from __future__ import annotations

import pytest

from ragspine.errors import IngestError
from ragspine.readers import ReaderLimits, read_bytes
from tests.helpers import needs
from tests.unit.readers.conftest import report_pdf
from tests.unit.readers.pdfgen import make_pdf

needs("pypdfium2")


def test_text_title_metadata_pages_and_headings() -> None:
    doc = read_bytes(report_pdf(), "report.pdf")
    assert doc.format == "pdf" and doc.title == "Plant review 2024" and doc.metadata == {"author": "Ada Byron"}
    assert len(doc.pages) == 3
    page_texts = [doc.text[a:b] for a, b in doc.pages]
    assert page_texts[0].startswith("Introduction") and "northern plants" in page_texts[0]
    assert "xylophone retrofit" in page_texts[1] and "会议纪要：第三季度收入增长百分之十二。" in page_texts[1]
    assert page_texts[2].startswith("Appendix")
    assert [(doc.text[o : o + len(t)], level) for o, level, t in doc.headings] == [
        ("Introduction", 1), ("Findings", 1), ("Appendix", 1)]
    assert [doc.pages_of(o, o + 1) for o, _, _ in doc.headings] == [[1], [2], [3]]
    # a gap wider than a line starts a paragraph: the chunkers see it
    assert "Introduction\n\nKestrel Gearworks" in doc.text


def test_every_line_keeps_its_box_on_its_page() -> None:
    doc = read_bytes(report_pdf(), "report.pdf")
    lines = {doc.text[b.start : b.end]: b for b in doc.line_boxes}
    cjk = lines["会议纪要：第三季度收入增长百分之十二。"]
    assert cjk.page == 2 and 655 < cjk.box[1] < cjk.box[3] < 675 and 70 < cjk.box[0] < 75
    assert lines["Appendix"].page == 3
    assert all(doc.pages[b.page - 1][0] <= b.start < b.end <= doc.pages[b.page - 1][1] for b in doc.line_boxes)


def test_words_of_one_baseline_read_left_to_right() -> None:
    doc = read_bytes(make_pdf([[(300, 700, "right column"), (72, 700, "left column")]]), "cols.pdf")
    assert doc.text == "left column right column"


@pytest.mark.parametrize(("data", "needle"), [
    (make_pdf([[(72, 700, "secret")]], encrypted=True), r"cut.pdf: the PDF is encrypted \(password protected\)"),
    (b"%PDF-1.7\nnot a pdf at all", r"cut.pdf: a corrupt PDF"),
    (make_pdf([[(72, 700, "truncated")]])[:200], r"cut.pdf: a corrupt PDF"),
    (make_pdf([[]]), r"cut.pdf: the document has no text \(a scan needs OCR first\)"),
])
def test_bad_pdfs_are_one_line_errors(data: bytes, needle: str) -> None:
    with pytest.raises(IngestError, match=needle) as info:
        read_bytes(data, "cut.pdf")
    assert "\n" not in str(info.value)


def test_the_page_limit() -> None:
    data = make_pdf([[(72, 700, f"page {n}")] for n in range(4)])
    with pytest.raises(IngestError, match=r"x.pdf: 4 pages is over the 3-page limit \(RAGSPINE_MAX_PDF_PAGES\)"):
        read_bytes(data, "x.pdf", ReaderLimits(max_pdf_pages=3))
    assert len(read_bytes(data, "x.pdf", ReaderLimits(max_pdf_pages=4)).pages) == 4
