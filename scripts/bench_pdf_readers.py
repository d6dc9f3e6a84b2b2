"""Measure PDF text extractors for ``ragspine/readers/pdf.py``: pypdfium2 vs pypdf.

    python scripts/bench_pdf_readers.py [--pages 200] [--rounds 3]

Generated PDFs (``tests/unit/readers/pdfgen.py``, no font files): pages of 40 lines whose
words are separate text objects (as many producers write them), a page whose lines are
written bottom-up (reading order must follow the page, top to bottom), and CJK lines
(ToUnicode). Reports pages/s (the two libraries interleaved, best of ``--rounds``), whether
each page's words come back on their lines, the reading order, and the CJK text.
"""

from __future__ import annotations

import argparse
import io
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.unit.readers.pdfgen import make_pdf  # noqa: E402

WORDS = "quarterly revenue grew in the northern region while costs fell after the merger closed".split()


def word_page(n: int) -> list[tuple[float, float, str]]:
    out = []
    for line in range(40):
        x = 72.0
        for w in range(10):
            word = f"{WORDS[(n + line + w) % len(WORDS)]}{line}"
            out.append((x, 760.0 - 18 * line, word))
            x += 6.2 * len(word) + 6
    return out


def expected_lines(page: list[tuple[float, float, str]]) -> list[str]:
    by_y: dict[float, list[tuple[float, str]]] = {}
    for x, y, text in page:
        by_y.setdefault(y, []).append((x, text))
    return [" ".join(t for _, t in sorted(items)) for _, items in sorted(by_y.items(), reverse=True)]


def pdfium_pages(data: bytes) -> list[str]:
    import pypdfium2 as pdfium

    doc = pdfium.PdfDocument(data)
    try:
        return [page.get_textpage().get_text_range().replace("\r\n", "\n") for page in doc]
    finally:
        doc.close()


def pypdf_pages(data: bytes) -> list[str]:
    import pypdf

    return [page.extract_text() for page in pypdf.PdfReader(io.BytesIO(data)).pages]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pages", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    pages = [word_page(n) for n in range(args.pages)]
    data = make_pdf(pages)
    readers = {"pypdfium2": pdfium_pages, "pypdf": pypdf_pages}
    best = {name: float("inf") for name in readers}
    for _ in range(args.rounds):  # interleaved: the machine is shared, so both see the same load
        for name, read in readers.items():
            start = time.perf_counter()
            read(data)
            best[name] = min(best[name], time.perf_counter() - start)
    want = [expected_lines(p) for p in pages[:5]]
    bottom_up = make_pdf([[(72, 100, "third line"), (72, 400, "second line"), (72, 700, "first line")]])
    columns = make_pdf([[(300, 700, "right column top"), (72, 700, "left column top"), (72, 680, "left column next")]])
    cjk = make_pdf([[(72, 700, "会议纪要：第三季度收入增长百分之十二。"), (72, 680, "東京の売上は増加した")]])
    for name, read in readers.items():
        got = read(data)[:5]
        lines_ok = all([ln.strip() for ln in g.split("\n") if ln.strip()] == w for g, w in zip(got, want, strict=True))
        print(f"{name:10s} {args.pages / best[name]:8.0f} pages/s  words on their lines: {lines_ok}")
        print(f"{'':10s} bottom-up page: {read(bottom_up)[0]!r}")
        print(f"{'':10s} two columns:    {read(columns)[0]!r}")
        print(f"{'':10s} CJK:            {read(cjk)[0]!r}")


if __name__ == "__main__":
    main()
