"""Fixture files for the reader tests, written by the tests themselves (no binary fixtures)."""

from __future__ import annotations

import io
from typing import Any

import pytest

from tests.unit.readers.pdfgen import make_pdf

REPORT_PAGES = [
    [(72, 720, "Introduction"), (72, 690, "Kestrel Gearworks reviewed its northern plants this year."),
     (72, 670, "The review covered safety, output and cost.")],
    [(72, 720, "Findings"), (72, 690, "The Tianjin plant cut scrap by 14 percent after the xylophone retrofit."),
     (72, 660, "会议纪要：第三季度收入增长百分之十二。")],
    [(72, 720, "Appendix"), (72, 690, "Method notes and the list of sites visited.")],
]


def report_pdf(**kwargs: Any) -> bytes:
    """A 3-page PDF with a title, an author, bookmarks and a CJK line on page 2."""
    return make_pdf(REPORT_PAGES, title="Plant review 2024", author="Ada Byron",
                    outline=[("Introduction", 0), ("Findings", 1), ("Appendix", 2)], **kwargs)


def docx_bytes() -> bytes:
    import docx

    document = docx.Document()
    document.core_properties.title = "Supplier handbook"
    document.core_properties.author = "Procurement"
    document.add_heading("Scope", level=1)
    document.add_paragraph("Every supplier signs the quality charter before the first order.")
    document.add_heading("Payment terms", level=2)
    document.add_paragraph("Invoices are paid within 45 days of delivery.")
    table = document.add_table(rows=2, cols=2)
    for (r, c), value in {(0, 0): "Tier", (0, 1): "Days", (1, 0): "Gold", (1, 1): "30"}.items():
        table.cell(r, c).text = value
    document.add_paragraph("Disputes go to the regional buyer.")
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def pptx_bytes() -> bytes:
    import pptx
    from pptx.util import Inches

    presentation = pptx.Presentation()
    presentation.core_properties.title = "Q3 review deck"
    for title, body in (("Quarter highlights", "Orders rose in Shenzhen."), ("Next steps", "Hire two field engineers.")):
        slide = presentation.slides.add_slide(presentation.slide_layouts[1])
        slide.shapes.title.text = title
        slide.placeholders[1].text_frame.text = body
    table = presentation.slides[1].shapes.add_table(2, 2, Inches(1), Inches(4), Inches(4), Inches(1)).table
    for (r, c), value in {(0, 0): "Owner", (0, 1): "Due", (1, 0): "Lin", (1, 1): "October"}.items():
        table.cell(r, c).text = value
    presentation.slides[1].notes_slide.notes_text_frame.text = "Budget approved by the board."
    out = io.BytesIO()
    presentation.save(out)
    return out.getvalue()


def xlsx_bytes() -> bytes:
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Plants"
    for row in (("Plant", "City", "Output"), ("North", "Tianjin", 1200), ("South", "Foshan", 950.5)):
        sheet.append(row)
    costs = book.create_sheet("Costs")
    for row in (("Item", "EUR"), ("Zirconium bearings", 4200), (None, None), ("Freight", "=1+1")):
        costs.append(row)
    book.properties.title = "Plant data"
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


@pytest.fixture
def write(tmp_path):
    def _write(name: str, data: bytes | str) -> Any:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data.encode() if isinstance(data, str) else data)
        return path

    return _write
