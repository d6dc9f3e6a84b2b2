"""OCR of pages without a text layer: an image-only PDF page and a PNG read by each engine, with
known text (CER bound), boxes on the page and ``ocr`` in the metadata; OCR off is as before."""

from __future__ import annotations

import io
import os
import shutil
from typing import Any, Iterator

import pytest

from ragspine.errors import ConfigError, IngestError
from ragspine.readers import ReaderLimits, read_bytes
from ragspine.readers.ocr import OcrLine, TesseractOcrEngine, check_langs, shared_ocr_engine, tesseract_lines
from ragspine.readers.sniff import UnsupportedFormat, sniff_format
from ragspine.registries import OCR_ENGINES
from ragspine.registry import Entry
from ragspine.testing.ocr_text import character_error_rate
from tests.helpers import needs
from tests.unit.readers.pdfgen import make_pdf

needs("pypdfium2", "PIL")

SCAN = ["Invoice 58213 covers a replacement pump,", "two filters and the labour for installation.",
        "The warranty runs for twenty-four months."]
TEXT_PAGE = [(72, 720, "Cover letter"), (72, 690, "The scanned invoice follows on the next page.")]
CER_BOUND = 0.05  # both engines read these clean 200-dpi renders with 0-1% CER; 5% leaves room for other builds
ON = ReaderLimits(ocr="tesseract", ocr_langs="eng")


@pytest.fixture(params=["rapidocr", "tesseract"])
def on(request: pytest.FixtureRequest) -> ReaderLimits:
    """OCR on, by each engine (skipped when it is not installed)."""
    if request.param == "rapidocr":
        needs("rapidocr")
    else:
        needs_tesseract()
    return ReaderLimits(ocr=request.param, ocr_langs="eng")


def needs_tesseract() -> None:
    """Skip without the ``tesseract`` binary (apt) — a failure under ``RAGSPINE_REQUIRE_BACKENDS=1``."""
    if shutil.which("tesseract") is None:
        message = "the tesseract binary is not installed (apt-get install tesseract-ocr)"
        if os.environ.get("RAGSPINE_REQUIRE_BACKENDS") == "1":
            pytest.fail(message + " (RAGSPINE_REQUIRE_BACKENDS=1 makes this a failure)", pytrace=False)
        pytest.skip(message)


def scan_image(dpi: int = 200) -> Any:
    """A US-Letter page at ``dpi`` with the :data:`SCAN` lines in 14 pt, black on white."""
    from PIL import Image, ImageDraw, ImageFont

    image = Image.new("L", (round(8.5 * dpi), round(11 * dpi)), 255)
    draw, font = ImageDraw.Draw(image), ImageFont.load_default(size=round(14 * dpi / 72))
    for number, line in enumerate(SCAN):
        draw.text((dpi, dpi + number * round(28 * dpi / 72)), line, font=font, fill=0)
    return image


def png_bytes(dpi: int = 200) -> bytes:
    out = io.BytesIO()
    scan_image(dpi).save(out, format="PNG", dpi=(dpi, dpi))
    return out.getvalue()


def mixed_pdf() -> bytes:
    """Page 1 with a text layer, page 2 an image only (a scan)."""
    import pypdfium2 as pdfium

    scanned = io.BytesIO()
    scan_image().save(scanned, format="PDF", resolution=200)
    doc = pdfium.PdfDocument(make_pdf([TEXT_PAGE]))
    doc.import_pages(pdfium.PdfDocument(scanned.getvalue()))
    out = io.BytesIO()
    doc.save(out)
    return out.getvalue()


def test_ocr_off_an_image_only_page_contributes_nothing_as_before() -> None:
    data = mixed_pdf()
    doc = read_bytes(data, "mixed.pdf")
    assert doc == read_bytes(data, "mixed.pdf", ReaderLimits(ocr="none"))
    assert len(doc.pages) == 2 and doc.text[slice(*doc.pages[1])] == ""
    assert doc.text == "Cover letter\n\nThe scanned invoice follows on the next page."
    assert "ocr" not in doc.metadata and not any(box.ocr for box in doc.line_boxes)
    with pytest.raises(IngestError, match="no text"):  # a PDF of scans only: refused, as before
        scanned = io.BytesIO()
        scan_image().save(scanned, format="PDF", resolution=200)
        read_bytes(scanned.getvalue(), "scan.pdf")


def test_an_image_file_without_ocr_is_refused_naming_the_setting() -> None:
    assert sniff_format(png_bytes(), "scan.png") == "image"
    with pytest.raises(UnsupportedFormat, match=r"^scan.png: a PNG image; .*set RAGSPINE_OCR"):
        read_bytes(png_bytes(), "scan.png")
    with pytest.raises(UnsupportedFormat, match="scan.pdf: a PNG image"):  # a lying extension stays refused
        sniff_format(png_bytes(), "scan.pdf")


def test_an_image_only_pdf_page_is_read_by_ocr_with_boxes(on: ReaderLimits) -> None:
    doc = read_bytes(mixed_pdf(), "mixed.pdf", on)
    first, second = (doc.text[a:b] for a, b in doc.pages)
    assert first == "Cover letter\n\nThe scanned invoice follows on the next page."  # the text layer is kept as is
    assert character_error_rate("\n".join(SCAN), second) < CER_BOUND, second
    assert doc.metadata["ocr"] is True and doc.metadata["ocr_pages"] == 1 and doc.metadata["ocr_engine"] == on.ocr
    ocr_boxes = [box for box in doc.line_boxes if box.ocr]
    assert [box.page for box in ocr_boxes] == [2, 2, 2] and not any(box.ocr for box in doc.line_boxes if box.page == 1)
    for box in ocr_boxes:
        left, bottom, right, top = box.box
        assert 0 <= left < right <= 612 and 0 <= bottom < top <= 792  # inside the Letter page, in points
        assert box.confidence is not None and 0.5 < box.confidence <= 1
        assert doc.pages_of(box.start, box.end) == [2] and doc.text[box.start : box.end] in second
    # lines top to bottom, the first one inch (72 pt) below the page's top edge, at the left margin
    assert [b.box[3] for b in ocr_boxes] == sorted((b.box[3] for b in ocr_boxes), reverse=True)
    assert abs(ocr_boxes[0].box[0] - 72) < 6 and 792 - 72 - 20 < ocr_boxes[0].box[3] <= 792 - 72 + 6


def test_a_png_is_read_by_ocr_with_boxes_in_points(on: ReaderLimits) -> None:
    doc = read_bytes(png_bytes(dpi=200), "scan.png", on)
    assert doc.format == "image" and doc.metadata == {"ocr": True, "ocr_pages": 1, "ocr_engine": on.ocr}
    assert character_error_rate("\n".join(SCAN), doc.text) < CER_BOUND, doc.text
    assert len(doc.pages) == 1 and len(doc.line_boxes) == 3
    for box in doc.line_boxes:  # 200 dpi: the page is 612 x 792 points
        left, bottom, right, top = box.box
        assert box.ocr and 0 <= left < right <= 612 and 0 <= bottom < top <= 792
        assert doc.text[box.start : box.end] in doc.text.split("\n\n")


def test_ocr_on_leaves_a_pdf_with_a_text_layer_as_it_was() -> None:
    plain = make_pdf([TEXT_PAGE])
    assert read_bytes(plain, "a.pdf", ON) == read_bytes(plain, "a.pdf")  # no text-less page: no engine is even built


def test_a_page_of_fewer_than_4_characters_is_ocrd_in_place() -> None:
    needs_tesseract()  # RapidOCR's detector finds no line on this page: the next test's case
    data = make_pdf([TEXT_PAGE, [(300, 40, "12")]], font_size=24)  # a stray page number on a scan
    off, on = read_bytes(data, "a.pdf"), read_bytes(data, "a.pdf", ON)
    assert off.text.endswith("page.\n\n12") and "ocr" not in off.metadata
    assert on.text == off.text and on.metadata["ocr_pages"] == 1  # the rendered "12" is read back
    assert [(b.page, b.ocr) for b in on.line_boxes] == [(1, False), (1, False), (2, True)]
    (left, bottom, right, top), = (b.box for b in on.line_boxes if b.ocr)
    assert 295 < left < right < 340 and 30 < bottom < top < 70  # where the PDF drew it


class FixedOcrEngine:
    """A test engine: every page reads as ``lines`` (boxes in pixels)."""

    lines: list[OcrLine] = []

    def __init__(self, *, langs: str) -> None:
        self.langs = langs

    def recognize(self, image: Any) -> list[OcrLine]:
        assert abs(image.width - 2550) <= 1 and abs(image.height - 3300) <= 1 and image.mode == "L"  # Letter at 300 dpi
        return list(self.lines)


@pytest.fixture
def fixed() -> Iterator[ReaderLimits]:
    OCR_ENGINES.register("fixed", Entry(f"{__name__}:FixedOcrEngine"))
    shared_ocr_engine.cache_clear()
    yield ReaderLimits(ocr="fixed")
    OCR_ENGINES.unregister("fixed")
    shared_ocr_engine.cache_clear()


def test_pixel_boxes_become_points_from_the_bottom_left_and_an_empty_read_keeps_the_text_layer(fixed: ReaderLimits) -> None:
    FixedOcrEngine.lines = [OcrLine("Scanned  line", (300, 300, 600, 350), 0.9), OcrLine("second", (300, 400, 450, 450), 0.8)]
    doc = read_bytes(mixed_pdf(), "mixed.pdf", fixed)
    assert doc.text[slice(*doc.pages[1])] == "Scanned line\nsecond"  # whitespace runs as one space
    assert [(b.page, tuple(round(v, 6) for v in b.box), b.ocr, b.confidence) for b in doc.line_boxes if b.ocr] == [
        (2, (72.0, 792 - 84.0, 144.0, 792 - 72.0), True, 0.9), (2, (72.0, 792 - 108.0, 108.0, 792 - 96.0), True, 0.8)]
    FixedOcrEngine.lines = []
    data = make_pdf([TEXT_PAGE, [(300, 40, "12")]])
    assert read_bytes(data, "a.pdf", fixed) == read_bytes(data, "a.pdf")  # nothing read: "12" stays, no "ocr"

def test_a_multi_page_tiff_is_one_page_a_frame_and_a_blank_image_is_refused(on: ReaderLimits) -> None:
    from PIL import Image

    out = io.BytesIO()
    scan_image().save(out, format="TIFF", save_all=True, append_images=[scan_image()], dpi=(200, 200))
    doc = read_bytes(out.getvalue(), "scan.tif", on)
    assert doc.format == "image" and len(doc.pages) == 2 and doc.metadata["ocr_pages"] == 2
    assert sorted({box.page for box in doc.line_boxes}) == [1, 2]
    for a, b in doc.pages:
        assert character_error_rate("\n".join(SCAN), doc.text[a:b]) < CER_BOUND
    blank = io.BytesIO()
    Image.new("L", (400, 300), 255).save(blank, format="JPEG")
    with pytest.raises(IngestError, match=rf"^blank.jpg: OCR \({on.ocr}\) read no text in the image$"):
        read_bytes(blank.getvalue(), "blank.jpg", on)


def test_tesseract_tsv_becomes_lines() -> None:
    header = "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext"
    rows = [
        "5\t1\t1\t1\t1\t1\t10\t20\t30\t10\t90\tHello", "5\t1\t1\t1\t1\t2\t45\t18\t40\t14\t70\tworld",
        "4\t1\t1\t1\t2\t0\t10\t40\t60\t12\t-1\t", "5\t1\t1\t1\t2\t1\t10\t40\t12\t12\t96\t中", "5\t1\t1\t1\t2\t2\t24\t40\t12\t12\t94\t文",
        "5\t1\t1\t1\t2\t3\t38\t40\t30\t12\t-1\tOK", "5\t1\t2\t1\t1\t1\t0\t0\t5\t5\t50\t ",
    ]
    lines = tesseract_lines("\n".join([header, *rows]))
    assert [(line.text, line.box) for line in lines] == [("Hello world", (10.0, 18.0, 85.0, 32.0)), ("中文 OK", (10.0, 40.0, 68.0, 52.0))]
    assert lines[0].confidence == 0.8 and lines[1].confidence == round((96 + 94 + 0) / 300, 4)


def test_a_missing_binary_or_language_is_one_line_naming_the_apt_package() -> None:
    with pytest.raises(ConfigError, match=r"no 'no-such-tesseract' binary on PATH; apt-get install tesseract-ocr tesseract-ocr-eng$"):
        TesseractOcrEngine(binary="no-such-tesseract")
    needs_tesseract()
    with pytest.raises(ConfigError, match=r"RAGSPINE_OCR_LANGS=eng\+xxx: tesseract has no data for xxx; .*tesseract-ocr-xxx$"):
        TesseractOcrEngine(langs="eng+xxx")


def test_settings_name_the_engines_and_canonical_languages(monkeypatch: pytest.MonkeyPatch) -> None:
    from ragspine.config import load_settings

    assert (load_settings().ocr, load_settings().ocr_langs) == ("none", "eng")
    monkeypatch.setenv("RAGSPINE_OCR_LANGS", " eng, chi_sim+jpn ")
    monkeypatch.setenv("RAGSPINE_OCR", "Tesseract")
    settings = load_settings()
    assert (settings.ocr, settings.ocr_langs) == ("tesseract", "eng+chi_sim+jpn")
    assert ReaderLimits.from_settings(settings) == ReaderLimits(ocr="tesseract", ocr_langs="eng+chi_sim+jpn")
    monkeypatch.setenv("RAGSPINE_OCR", "abbyy")
    with pytest.raises(ConfigError, match=r"unknown OCR engine 'abbyy' \(RAGSPINE_OCR\); choose one of none, rapidocr, tesseract"):
        load_settings()
    assert check_langs("jpn") == "jpn"
    with pytest.raises(ConfigError, match="RAGSPINE_OCR_LANGS"):
        check_langs("eng;rm -rf")
