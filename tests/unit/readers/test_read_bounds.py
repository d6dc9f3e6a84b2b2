"""Bad input, bounded (issue 28 item 7): a file whose reading runs past ``RAGSPINE_MAX_READ_SECONDS``,
a PDF page of too many glyphs (``RAGSPINE_MAX_PAGE_CHARS``), too much text in all
(``RAGSPINE_MAX_TEXT_CHARS``) and too much HTML markup (``RAGSPINE_MAX_HTML_BYTES``) are each a
one-line error naming the file and the setting; a request's own deadline stays a deadline."""

from __future__ import annotations

import io
import itertools
import time
from typing import Any, Iterator

import pytest

from ragspine import cli
from ragspine.config import load_settings
from ragspine.deadline import DeadlineExceeded, deadline
from ragspine.errors import ConfigError, IngestError
from ragspine.readers import ReaderLimits, read_bytes
from ragspine.readers import html as html_reader
from ragspine.readers.base import ReadBudget
from ragspine.readers.ocr import OcrLine, shared_ocr_engine
from ragspine.registries import OCR_ENGINES
from ragspine.registry import Entry
from tests.helpers import needs
from tests.unit.readers.conftest import docx_bytes, pptx_bytes, report_pdf
from tests.unit.readers.pdfgen import make_pdf

SECONDS = r"\(RAGSPINE_MAX_READ_SECONDS\); split the file or raise the limit$"


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The read budget's clock, advanced one second each time a reader looks at it (``[0]``: now)."""
    now = [0.0]

    def tick() -> float:
        now[0] += 1.0
        return now[0]

    monkeypatch.setattr(ReadBudget, "clock", staticmethod(tick))
    return now


def _one_line(info: pytest.ExceptionInfo[BaseException]) -> str:
    message = str(info.value)
    assert "\n" not in message
    return message


def many_pages(count: int, text: str = "a line of text") -> bytes:
    return make_pdf([[(72, 700, f"page {n}: {text}")] for n in range(count)])


# -- the time budget, checked between units of work --------------------------------------------------
def test_a_pdf_past_the_read_seconds_stops_between_pages(clock: list[float]) -> None:
    needs("pypdfium2")
    data = many_pages(40)
    with pytest.raises(IngestError, match=r"^slow.pdf: reading ran past the 10-second limit " + SECONDS) as info:
        read_bytes(data, "slow.pdf", ReaderLimits(max_read_seconds=10))
    _one_line(info)
    assert clock[0] < 15  # it stopped at the first check past the limit, not after 40 pages (80 looks)
    assert len(read_bytes(data, "slow.pdf", ReaderLimits(max_read_seconds=1000)).pages) == 40


def test_word_and_powerpoint_past_the_read_seconds(clock: list[float]) -> None:
    needs("docx", "pptx")
    for name, data in (("slow.docx", docx_bytes()), ("slow.pptx", pptx_bytes())):
        with pytest.raises(IngestError, match=rf"^{name}: reading ran past the 2-second limit " + SECONDS):
            read_bytes(data, name, ReaderLimits(max_read_seconds=2))  # not "not a readable Word file"
        assert read_bytes(data, name, ReaderLimits(max_read_seconds=1000)).text


def test_a_workbook_past_the_read_seconds_or_the_text_limit_stops_between_sheets_and_rows(clock: list[float]) -> None:
    needs("openpyxl")
    import io

    import openpyxl

    book = openpyxl.Workbook()
    for number in range(12):
        sheet = book.create_sheet(f"S{number}")
        for row in range(2500):
            sheet.append((row, f"cell {row}"))
    out = io.BytesIO()
    book.save(out)
    data = out.getvalue()
    with pytest.raises(IngestError, match=r"^slow.xlsx: reading ran past the 6-second limit " + SECONDS) as info:
        read_bytes(data, "slow.xlsx", ReaderLimits(max_read_seconds=6))  # not "not a readable Excel file"
    _one_line(info)
    assert clock[0] < 10  # checked per sheet and every 1,000 rows: it stopped a sheet or so past the limit
    with pytest.raises(IngestError, match=r"^big.xlsx: over 5,000 characters of text, the limit \(RAGSPINE_MAX_TEXT_CHARS\)"):
        read_bytes(data, "big.xlsx", ReaderLimits(max_text_chars=5000))
    assert len(read_bytes(data, "ok.xlsx", ReaderLimits(max_read_seconds=1000)).pages) == 13


def test_html_past_the_read_seconds_between_pieces(clock: list[float], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(html_reader, "FEED_CHARS", 64)
    data = ("<html><body>" + "<p>a paragraph of the page</p>" * 100 + "</body></html>").encode()
    with pytest.raises(IngestError, match=r"^big.html: reading ran past the 5-second limit " + SECONDS):
        read_bytes(data, "big.html", ReaderLimits(max_read_seconds=5))
    assert clock[0] < 10


class SleepyOcrEngine:
    """A test engine that takes 10 (fake) seconds a page and reads one line."""

    clock: list[float] = [0.0]

    def __init__(self, *, langs: str) -> None:
        self.langs = langs

    def recognize(self, image: Any) -> list[OcrLine]:
        SleepyOcrEngine.clock[0] += 10
        return [OcrLine("a scanned line", (300, 300, 600, 350), 0.9)]


@pytest.fixture
def sleepy(clock: list[float]) -> Iterator[ReaderLimits]:
    SleepyOcrEngine.clock = clock
    OCR_ENGINES.register("sleepy", Entry(f"{__name__}:SleepyOcrEngine"))
    shared_ocr_engine.cache_clear()
    yield ReaderLimits(ocr="sleepy", max_read_seconds=35)
    OCR_ENGINES.unregister("sleepy")
    shared_ocr_engine.cache_clear()


def test_ocr_past_the_read_seconds_stops_between_ocr_pages(sleepy: ReaderLimits) -> None:
    needs("pypdfium2", "PIL")
    scans = make_pdf([[] for _ in range(8)])  # 8 pages without a text layer: each is OCR'd
    with pytest.raises(IngestError, match=r"^scan.pdf: reading ran past the 35-second limit " + SECONDS):
        read_bytes(scans, "scan.pdf", sleepy)
    assert SleepyOcrEngine.clock[0] < 80  # three or four pages, not eight


def test_an_ocr_image_past_the_read_seconds_stops_between_frames(sleepy: ReaderLimits) -> None:
    needs("PIL")
    from PIL import Image

    out = io.BytesIO()
    frames = [Image.new("L", (850, 1100), 255) for _ in range(8)]
    frames[0].save(out, format="TIFF", save_all=True, append_images=frames[1:], dpi=(100, 100))
    with pytest.raises(IngestError, match=r"^scan.tif: reading ran past the 35-second limit " + SECONDS):
        read_bytes(out.getvalue(), "scan.tif", sleepy)
    assert SleepyOcrEngine.clock[0] < 80


def test_a_request_deadline_stays_a_deadline_not_a_bad_file() -> None:
    needs("pypdfium2", "docx")
    for name, data in (("r.pdf", report_pdf()), ("r.docx", docx_bytes()), ("r.html", b"<p>hello</p>")):
        with deadline(0.0), pytest.raises(DeadlineExceeded, match=rf"reading {name} ran past"):
            read_bytes(data, name)


# -- characters: of one PDF page, of a whole file ----------------------------------------------------
def test_a_page_of_too_many_glyphs_is_refused_naming_the_page_and_the_setting() -> None:
    needs("pypdfium2")
    dense = [(10, 780 - 10 * row, "x" * 200) for row in range(20)]  # 4,000 glyphs (past the page's edge: still text)
    data = make_pdf([[(72, 700, "a normal first page")], dense])
    with pytest.raises(IngestError, match=r"^dense.pdf: page 2 has 4,0\d\d characters, over the 3,000-character limit"
                       r" \(RAGSPINE_MAX_PAGE_CHARS\); split the file or raise the limit$"):
        read_bytes(data, "dense.pdf", ReaderLimits(max_page_chars=3000))
    assert len(read_bytes(data, "dense.pdf", ReaderLimits(max_page_chars=5000)).pages) == 2


def test_too_much_text_in_all_is_refused() -> None:
    needs("pypdfium2", "docx")
    data = many_pages(30, "x" * 80)
    with pytest.raises(IngestError, match=r"^long.pdf: over 1,000 characters of text, the limit \(RAGSPINE_MAX_TEXT_CHARS\)"):
        read_bytes(data, "long.pdf", ReaderLimits(max_text_chars=1000))
    with pytest.raises(IngestError, match=r"^h.docx: over 100 characters of text, the limit \(RAGSPINE_MAX_TEXT_CHARS\)"):
        read_bytes(docx_bytes(), "h.docx", ReaderLimits(max_text_chars=100))
    page = ("<p>" + "word " * 100 + "</p>").encode()
    with pytest.raises(IngestError, match=r"^p.html: over 100 characters of text"):
        read_bytes(page, "p.html", ReaderLimits(max_text_chars=100))
    script = ("<script>" + "var x = 1;" * 100 + "</script><p>short</p>").encode()
    assert read_bytes(script, "s.html", ReaderLimits(max_text_chars=100)).text == "short"  # a script is not text


# -- HTML markup ---------------------------------------------------------------------------------------
def test_html_over_the_markup_limit_is_refused_before_parsing() -> None:
    data = b"<p>" + b"x" * 2000 + b"</p>"
    with pytest.raises(IngestError, match=r"^p.html: 2,007 bytes of HTML is over the 2,000-byte limit \(RAGSPINE_MAX_HTML_BYTES\)"):
        read_bytes(data, "p.html", ReaderLimits(max_html_bytes=2000))
    assert read_bytes(data, "p.html", ReaderLimits(max_html_bytes=2007)).text == "x" * 2000


def test_html_fed_in_pieces_reads_as_it_did_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    page = ("<html><head><title>T</title><style>p{}</style><script>if (a < b) { x = '</p>'; }</script></head><body>"
            "<h1>Main &amp; more</h1><p>caf&eacute; &#233; text</p><table><tr><th>a</th><th>b</th></tr>"
            "<tr><td>1</td><td>2</td></tr></table><noscript>no</noscript><div>end &lt;here&gt;</div></body></html>").encode()
    whole = read_bytes(page, "p.html")
    assert "x = " not in whole.text and "p{}" not in whole.text and "no" not in whole.text.split()  # scripts, styles dropped
    for size in (1, 3, 7, 50):
        monkeypatch.setattr(html_reader, "FEED_CHARS", size)
        assert read_bytes(page, "p.html") == whole


def test_100_mb_of_html_is_refused_quickly_with_one_line(tmp_path: Any) -> None:
    """The markup of a 100 MB page (scripts and all) never reaches the parser: refused by its size."""
    block = b"<script>" + b"document.write('<p>x</p>');" * 30 + b"</script><div><p>filler</p></div>\n"
    data = b"<html><body>" + block * (100_000_000 // len(block)) + b"</body></html>"
    assert len(data) > 99_000_000
    start = time.perf_counter()
    with pytest.raises(IngestError, match=r"^huge.html: [\d,]+ bytes of HTML is over the 10,485,760-byte limit") as info:
        read_bytes(data, "huge.html")
    assert time.perf_counter() - start < 2.0 and len(_one_line(info)) < 200


# -- the settings reach the readers, the CLI skips the bad file and keeps the others ------------------
def test_the_settings_reach_reader_limits() -> None:
    settings = load_settings({"RAGSPINE_MAX_READ_SECONDS": "7.5", "RAGSPINE_MAX_PAGE_CHARS": "123",
                              "RAGSPINE_MAX_TEXT_CHARS": "456", "RAGSPINE_MAX_HTML_BYTES": "789"})
    limits = ReaderLimits.from_settings(settings)
    assert (limits.max_read_seconds, limits.max_page_chars, limits.max_text_chars, limits.max_html_bytes) == (7.5, 123, 456, 789)
    assert ReaderLimits.from_settings(load_settings({})) == ReaderLimits()  # the defaults agree
    for name in ("RAGSPINE_MAX_READ_SECONDS", "RAGSPINE_MAX_PAGE_CHARS", "RAGSPINE_MAX_TEXT_CHARS", "RAGSPINE_MAX_HTML_BYTES"):
        with pytest.raises(ConfigError, match=rf"^{name}=0(\.0)?: must be positive"):
            load_settings({name: "0"})


def test_ingest_skip_bad_names_the_limit_and_keeps_the_other_files(tmp_path: Any, monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    needs("pypdfium2")
    monkeypatch.setenv("RAGSPINE_EMBEDDING", "none")
    monkeypatch.setenv("RAGSPINE_MAX_HTML_BYTES", "1000")
    monkeypatch.setenv("RAGSPINE_MAX_PAGE_CHARS", "3000")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "report.pdf").write_bytes(report_pdf())
    (docs / "dense.pdf").write_bytes(make_pdf([[(10, 780 - 10 * row, "x" * 200) for row in range(20)]]))
    (docs / "big.html").write_bytes(b"<p>" + b"y" * 2000 + b"</p>")
    (docs / "note.md").write_text("# Note\n\nKept whatever the others are.\n")
    db = str(tmp_path / "cli.db")
    code = cli.main(["--db", db, "ingest", str(docs), "--library", "lib"])
    out, err = capsys.readouterr()
    assert code != 0 and "ingested" not in out  # without --skip-bad: nothing written
    assert f"{docs / 'big.html'}: 2,007 bytes of HTML is over the 1,000-byte limit (RAGSPINE_MAX_HTML_BYTES)" in err
    assert f"{docs / 'dense.pdf'}: page 1 has " in err and "(RAGSPINE_MAX_PAGE_CHARS)" in err
    code = cli.main(["--db", db, "ingest", str(docs), "--library", "lib", "--skip-bad"])
    out, err = capsys.readouterr()
    assert code == 0 and "ingested 2 document(s)" in out, err
    assert err.count("(RAGSPINE_MAX_") == 2


def test_the_budget_counts_and_checks_in_order() -> None:
    budget = ReadBudget("f.txt", ReaderLimits(max_text_chars=10, max_read_seconds=60))
    for chars in itertools.repeat(5, 2):
        budget.check(chars)
    with pytest.raises(IngestError, match=r"^f.txt: over 10 characters"):
        budget.check(1)
