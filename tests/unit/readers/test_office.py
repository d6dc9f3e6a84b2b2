"""The Word, PowerPoint and Excel readers, and the ZIP limits checked before any of them parses."""

from __future__ import annotations

import io
import zipfile

import pytest

from ragspine.errors import IngestError
from ragspine.readers import ReaderLimits, read_bytes
from tests.helpers import needs
from tests.unit.readers.conftest import docx_bytes, pptx_bytes, xlsx_bytes

needs("docx", "pptx", "openpyxl")


def test_docx_headings_paragraphs_and_tables_in_body_order() -> None:
    doc = read_bytes(docx_bytes(), "handbook.docx")
    assert doc.format == "docx" and doc.title == "Supplier handbook" and doc.metadata["author"] == "Procurement"
    assert doc.text.startswith("# Scope\n\nEvery supplier signs")
    assert [(level, text) for _, level, text in doc.headings] == [(1, "Scope"), (2, "Payment terms")]
    assert all(doc.text[o:].startswith("#" * level + " " + text) for o, level, text in doc.headings)
    (start, end), = doc.tables
    assert doc.text[start:end] == "| Tier | Days |\n| --- | --- |\n| Gold | 30 |"
    assert doc.text.index("Invoices are paid") < start < doc.text.index("Disputes go")
    assert not doc.paged


def test_pptx_slides_are_pages() -> None:
    doc = read_bytes(pptx_bytes(), "deck.pptx")
    assert doc.format == "pptx" and doc.title == "Q3 review deck"
    first, second = (doc.text[a:b] for a, b in doc.pages)
    assert first == "# Quarter highlights\n\nOrders rose in Shenzhen."
    assert second.startswith("# Next steps\n\nHire two field engineers.") and second.endswith("Notes: Budget approved by the board.")
    (start, end), = doc.tables
    assert doc.text[start:end] == "| Owner | Due |\n| --- | --- |\n| Lin | October |"
    assert doc.pages_of(start, end) == [2]


def test_xlsx_sheets_are_pages_of_markdown_rows() -> None:
    doc = read_bytes(xlsx_bytes(), "plants.xlsx")
    assert doc.format == "xlsx" and doc.title == "Plant data"
    plants, costs = (doc.text[a:b] for a, b in doc.pages)
    assert plants == ("# Plants\n\n| Plant | City | Output |\n| --- | --- | --- |\n| North | Tianjin | 1200 |\n"
                      "| South | Foshan | 950.5 |")
    assert costs.startswith("# Costs\n\n| Item | EUR |") and "| Zirconium bearings | 4200 |" in costs
    assert [t for _, _, t in doc.headings] == ["Plants", "Costs"] and len(doc.tables) == 2


def _zip(entries: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return out.getvalue()


BOMB = _zip({"[Content_Types].xml": b"<Types/>", "word/document.xml": b"<w:document/>", "word/media/pad.bin": b"\0" * 20_000_000})


@pytest.mark.parametrize(("data", "limits", "needle"), [
    (BOMB, ReaderLimits(), r"bomb.docx: compression ratio [\d,]+ is over the 100 limit \(RAGSPINE_MAX_ZIP_RATIO\)"),
    (BOMB, ReaderLimits(max_unzipped_bytes=1_000_000),
     r"bomb.docx: 20,000,021 bytes uncompressed is over the 1,000,000-byte limit \(RAGSPINE_MAX_UNZIPPED_BYTES\)"),
    (_zip({"word/document.xml": b"<x/>", **{f"word/p{i}.xml": b"<x/>" for i in range(20)}}), ReaderLimits(max_zip_entries=10),
     r"bomb.docx: 21 ZIP entries is over the 10-entry limit \(RAGSPINE_MAX_ZIP_ENTRIES\)"),
    (_zip({"word/document.xml": b"<not-word/>"}), ReaderLimits(), r"bomb.docx: not a readable Word file"),
])
def test_zip_limits_and_broken_archives_are_one_line_errors(data: bytes, limits: ReaderLimits, needle: str) -> None:
    with pytest.raises(IngestError, match=needle) as info:
        read_bytes(data, "bomb.docx", limits)
    assert "\n" not in str(info.value)


def test_the_limits_are_checked_before_the_library_parses(monkeypatch) -> None:
    import docx

    def boom(*args: object, **kwargs: object) -> None:
        raise AssertionError("python-docx was called on a ZIP bomb")

    monkeypatch.setattr(docx, "Document", boom)
    with pytest.raises(IngestError, match="RAGSPINE_MAX_ZIP_RATIO"):
        read_bytes(BOMB, "bomb.docx")
