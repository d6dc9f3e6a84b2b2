"""Render a dev set's articles as the files a user ingests: PDF, Word, PowerPoint, Excel, CSV,
HTML, Markdown and text, for ``scripts/bench.py --documents`` (``_bench_documents.py``) and
``tests/unit/readers/test_render_roundtrip.py``.

    python scripts/render_documents.py DATA_DIR OUT_DIR [--formats pdf,docx,txt,...] [--limit N]

``DATA_DIR`` holds an ``articles.jsonl`` (``_id``, ``title``, ``text`` = paragraphs joined by blank
lines, ``paragraphs`` = ``[{_id, start, end}]``; /work/shared/data's xquad-en, xquad-zh, drcd). Each
article ``ID`` becomes:

* ``OUT/pdf/ID.pdf`` (reportlab): the title as a heading (and a bookmark, and the info title),
  then the paragraphs flowing over A5 pages, 10 pt, split across pages where the page ends.
  English in DejaVu Sans when the system has it (else reportlab's bundled Vera), Chinese in
  reportlab's built-in CID fonts (``STSong-Light`` for Simplified, ``MSung-Light`` for
  Traditional: no font file needed) with CJK line breaking;
* ``OUT/pages/ID.json``: where the PDF's text went, as reportlab laid it out (not read back):
  ``{"pages": N, "title_page": 1, "paragraphs": [{"_id", "pages": [[page, offset], ...]}]}`` —
  a paragraph starts on its first ``page``; a later pair says that from its ``offset``-th
  non-whitespace character on, the paragraph is on that ``page``;
* ``OUT/docx/ID.docx`` (python-docx): the title as a Heading 1 and the core title, the paragraphs
  as paragraphs;
* ``OUT/txt/ID.txt``: ``# title``, a blank line, the article text (what the others hold);
* ``OUT/pptx/ID.pptx`` (python-pptx): a title slide, then a slide per paragraph, each titled with
  the article's title (a deck's running title), the paragraph in its body placeholder; the core
  title is the article's. ``OUT/pages-pptx/ID.json``: its layout record, as for the PDF (a
  paragraph is one slide: ``"pages": [[slide, 0]]``) plus ``"marks"``: the heading text that
  opens each page (slide titles), in page order;
* ``OUT/xlsx/ID.xlsx`` (openpyxl): sheets ``Part 1``, ``Part 2``, … of :data:`SHEET_ROWS` rows
  under a header row ``title | text`` (:data:`TABLE_HEADER`: the article's title, the paragraph);
  the core title is the article's. ``OUT/pages-xlsx/ID.json``: its layout record (sheets as pages; the
  marks are the sheet names);
* ``OUT/csv/ID.csv``: the same rows, one table under the same header (not paged);
* ``OUT/html/ID.html``: ``<title>`` and ``<h1>`` the title, a ``<p>`` per paragraph, and a
  ``<style>`` and a ``<script>`` in ``<head>`` and in ``<body>`` whose text (:data:`MARKUP_ONLY`)
  a reader must not keep;
* ``OUT/md/ID.md``: YAML front matter (``title``), ``# title``, the paragraphs.

Offsets in the page records count the characters of :func:`nonspace` (no whitespace, no
hyphens), since wrapped lines put line breaks where the source had spaces (in Chinese, nothing)
and a reader may drop a hyphen that ends a line. CJK characters in an English text are set in
the CID font (``<font>`` runs), as a Latin font has no glyphs for them.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

PAGE_FONT_SIZE, PAGE_LEADING = 10, 13
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_CJK_RUN = re.compile(r"([\u3000-\u303f\u3400-\u9fff\uf900-\ufaff\uff00-\uffef]+)")
_SIMPLIFIED_ONLY = set("们这说时国会对来为发后没过还种经个样还进长东车门问间题亲应")  # frequent, Simplified-only
CID_FONTS = {"zh-Hans": "STSong-Light", "zh-Hant": "MSung-Light"}
#: every form :func:`render_set` writes; the paged ones have a layout record under ``OUT/pages*/``
FORMS = ("txt", "pdf", "docx", "pptx", "xlsx", "csv", "html", "md")
#: paragraph rows on one sheet of the Excel form
SHEET_ROWS = 3
#: a word in the HTML form's scripts and styles only: found in a reader's text, markup leaked
MARKUP_ONLY = "zqxmarkuponly"
LATIN_FONTS = ("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", "/usr/share/fonts/TTF/DejaVuSans.ttf")


def nonspace(text: str) -> str:
    """``text`` without whitespace and hyphens: what survives any line wrapping (a PDF reader
    drops a hyphen that ends a line, as it cannot tell one of the word from a hyphenation)."""
    return "".join(ch for ch in text if kept(ch))


def kept(ch: str) -> bool:
    """Whether :func:`nonspace` keeps ``ch``."""
    return not ch.isspace() and ch != "-"


def language(texts: Iterable[str]) -> str:
    """``en``, ``zh-Hans`` or ``zh-Hant`` by the characters of ``texts``."""
    sample = "".join(texts)[:20000]
    if len(_CJK.findall(sample)) < 0.1 * max(len(sample), 1):
        return "en"
    return "zh-Hans" if sum(ch in _SIMPLIFIED_ONLY for ch in sample) > 0.002 * len(sample) else "zh-Hant"


def article_paragraphs(article: dict[str, Any]) -> list[tuple[str, str]]:
    """``[(paragraph id, text)]`` of an ``articles.jsonl`` row."""
    return [(str(p["_id"]), article["text"][p["start"] : p["end"]]) for p in article["paragraphs"]]


def _font(lang: str) -> str:
    from reportlab.pdfbase import pdfmetrics  # type: ignore[import-untyped]

    if lang in CID_FONTS:
        from reportlab.pdfbase.cidfonts import UnicodeCIDFont  # type: ignore[import-untyped]

        name = CID_FONTS[lang]
        if name not in pdfmetrics.getRegisteredFontNames():
            pdfmetrics.registerFont(UnicodeCIDFont(name))
        return name
    if "RenderLatin" not in pdfmetrics.getRegisteredFontNames():
        from reportlab.pdfbase.ttfonts import TTFont  # type: ignore[import-untyped]

        path = next((p for p in LATIN_FONTS if Path(p).is_file()), "Vera.ttf")  # Vera ships with reportlab
        pdfmetrics.registerFont(TTFont("RenderLatin", path))
    return "RenderLatin"


def _markup(text: str, lang: str) -> str:
    """``text`` as reportlab Paragraph markup: escaped; in an English text, CJK runs in the CID font."""
    if lang in CID_FONTS:
        return escape(text)
    cid = _font("zh-Hans")
    return "".join(f'<font name="{cid}">{escape(part)}</font>' if _CJK_RUN.fullmatch(part) else escape(part)
                   for part in _CJK_RUN.split(text) if part)


def _piece_text(flowable: Any) -> str:
    """The text of a laid-out (possibly split) reportlab Paragraph, from its lines."""
    out: list[str] = []
    for line in flowable.blPara.lines:
        if isinstance(line, tuple):  # (width, [word, ...])
            out.extend(line[1])
        else:
            out.extend(getattr(word, "text", "") for word in line.words)
    return "".join(out)


def render_pdf(title: str, paragraphs: Sequence[tuple[str, str]], path: Path, *, lang: str = "en") -> dict[str, Any]:
    """``paragraphs`` (``[(id, text)]``) under ``title`` as a PDF at ``path``; returns its page record
    (the module docstring's ``OUT/pages/ID.json``)."""
    from reportlab.lib.pagesizes import A5  # type: ignore[import-untyped]
    from reportlab.lib.styles import ParagraphStyle  # type: ignore[import-untyped]
    from reportlab.lib.units import mm  # type: ignore[import-untyped]
    from reportlab.platypus import BaseDocTemplate, Frame, PageTemplate, Paragraph  # type: ignore[import-untyped]

    font = _font(lang)
    wrap = {"wordWrap": "CJK"} if lang in CID_FONTS else {}
    body = ParagraphStyle("body", fontName=font, fontSize=PAGE_FONT_SIZE, leading=PAGE_LEADING, spaceAfter=PAGE_LEADING, **wrap)
    head = ParagraphStyle("head", parent=body, fontSize=16, leading=20, spaceAfter=20)  # a gap the reader sees
    spans: list[list[list[int]]] = [[] for _ in paragraphs]
    seen = [0] * len(paragraphs)

    class Tracked(Paragraph):  # type: ignore[misc]  # remembers which source paragraph a split piece is
        index = -1

        def split(self, width: float, height: float) -> list[Any]:
            parts: list[Any] = super().split(width, height)
            for part in parts:
                part.index = self.index
            return parts

    class Document(BaseDocTemplate):  # type: ignore[misc]
        def afterFlowable(self, flowable: Any) -> None:
            if not isinstance(flowable, Tracked):
                return
            if flowable.index < 0:  # the title: a bookmark, so the reader records it as a heading
                self.canv.bookmarkPage("title")
                self.canv.addOutlineEntry(title, "title", level=0)
                return
            i = flowable.index
            if not spans[i] or spans[i][-1][0] != self.page:
                spans[i].append([self.page, seen[i]])
            seen[i] += len(nonspace(_piece_text(flowable)))

    path.parent.mkdir(parents=True, exist_ok=True)
    doc = Document(str(path), pagesize=A5, leftMargin=14 * mm, rightMargin=14 * mm, topMargin=14 * mm, bottomMargin=14 * mm,
                   title=title, author="RAGSpine render_documents.py")
    doc.addPageTemplates([PageTemplate(id="page", frames=[Frame(doc.leftMargin, doc.bottomMargin, doc.width, doc.height, id="f")])])
    story = [Tracked(_markup(title, lang), head)]
    for i, (_, text) in enumerate(paragraphs):
        piece = Tracked(_markup(text, lang), body)
        piece.index = i
        story.append(piece)
    doc.build(story)
    return {"pages": doc.page, "title_page": 1,
            "paragraphs": [{"_id": pid, "pages": spans[i]} for i, (pid, _) in enumerate(paragraphs)]}


def render_docx(title: str, paragraphs: Sequence[tuple[str, str]], path: Path) -> None:
    """``paragraphs`` under ``title`` (a Heading 1 and the core title) as a Word file at ``path``."""
    import docx

    document = docx.Document()
    document.core_properties.title = title
    document.add_heading(title, level=1)
    for _, text in paragraphs:
        document.add_paragraph(text)
    path.parent.mkdir(parents=True, exist_ok=True)
    document.save(str(path))


def render_txt(title: str, paragraphs: Sequence[tuple[str, str]], path: Path) -> None:
    """``# title``, then the paragraphs separated by blank lines, as a UTF-8 text file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"# {title}\n\n" + "\n\n".join(text for _, text in paragraphs) + "\n", encoding="utf-8")


def render_pptx(title: str, paragraphs: Sequence[tuple[str, str]], path: Path) -> dict[str, Any]:
    """A title slide, then a slide per paragraph titled ``title``; returns the layout record."""
    import pptx

    deck = pptx.Presentation()
    deck.core_properties.title = title
    cover = deck.slides.add_slide(deck.slide_layouts[0])  # "Title Slide"
    cover.shapes.title.text = title
    for placeholder in list(cover.placeholders):  # the empty subtitle: no text, but no stray shape either
        if placeholder.placeholder_format.idx != 0:
            placeholder._element.getparent().remove(placeholder._element)
    for _, text in paragraphs:
        slide = deck.slides.add_slide(deck.slide_layouts[1])  # "Title and Content"
        slide.shapes.title.text = title
        slide.placeholders[1].text_frame.text = text
    path.parent.mkdir(parents=True, exist_ok=True)
    deck.save(str(path))
    return {"pages": len(paragraphs) + 1, "title_page": 1, "marks": [title] * (len(paragraphs) + 1),
            "paragraphs": [{"_id": pid, "pages": [[i + 2, 0]]} for i, (pid, _) in enumerate(paragraphs)]}


#: the header row of the Excel and CSV forms: each row holds the article's title, as an export of
#: a table of paragraphs would (the title is in every other form's text)
TABLE_HEADER = ("title", "text")


def _rows(title: str, paragraphs: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    return [(title, text) for _, text in paragraphs]


def render_xlsx(title: str, paragraphs: Sequence[tuple[str, str]], path: Path, *, rows: int = SHEET_ROWS) -> dict[str, Any]:
    """Sheets of ``rows`` paragraphs under a header row ``title | text``; returns the layout record."""
    import openpyxl  # type: ignore[import-untyped]

    book = openpyxl.Workbook()
    book.properties.title = title
    book.remove(book.active)
    chunks = [paragraphs[k : k + rows] for k in range(0, len(paragraphs), rows)] or [[]]
    for number, chunk in enumerate(chunks, 1):
        sheet = book.create_sheet(f"Part {number}")
        sheet.append(TABLE_HEADER)
        for row in _rows(title, chunk):
            sheet.append(row)
    path.parent.mkdir(parents=True, exist_ok=True)
    book.save(str(path))
    return {"pages": len(chunks), "title_page": 1, "marks": [f"Part {n}" for n in range(1, len(chunks) + 1)],
            "paragraphs": [{"_id": pid, "pages": [[i // rows + 1, 0]]} for i, (pid, _) in enumerate(paragraphs)]}


def render_csv(title: str, paragraphs: Sequence[tuple[str, str]], path: Path) -> None:
    """The Excel form's rows as one CSV table."""
    import csv

    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(TABLE_HEADER)
        writer.writerows(_rows(title, paragraphs))


def render_html(title: str, paragraphs: Sequence[tuple[str, str]], path: Path) -> None:
    """An HTML page: ``<title>``/``<h1>`` the title, a ``<p>`` per paragraph, scripts and styles
    holding :data:`MARKUP_ONLY` (never text)."""
    style = f"<style>/* {MARKUP_ONLY} */ p {{ margin: 0 0 1em; }} .{MARKUP_ONLY} {{ color: red; }}</style>"
    script = f"<script>var {MARKUP_ONLY} = '<p>{MARKUP_ONLY}</p>'; if (1 < 2) {{ console.log({MARKUP_ONLY}); }}</script>"
    body = "\n".join(f"<p>{escape(text)}</p>" for _, text in paragraphs)
    page = (f'<!DOCTYPE html>\n<html lang="und"><head><meta charset="utf-8"><title>{escape(title)}</title>\n{style}\n{script}</head>\n'
            f"<body>\n{script}\n<h1>{escape(title)}</h1>\n{body}\n{style}\n</body></html>\n")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page, encoding="utf-8")


def render_md(title: str, paragraphs: Sequence[tuple[str, str]], path: Path) -> None:
    """YAML front matter holding the title, then the text form."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\ntitle: {json.dumps(title, ensure_ascii=False)}\n---\n# {title}\n\n"
                    + "\n\n".join(text for _, text in paragraphs) + "\n", encoding="utf-8")


def align(text: str, paragraphs: list[str]) -> list[tuple[int, int] | None]:
    """Each paragraph's ``(start, end)`` in ``text``, whitespace aside, in order (``None``: not found)."""
    where = [i for i, ch in enumerate(text) if kept(ch)]
    flat = "".join(text[i] for i in where)
    out: list[tuple[int, int] | None] = []
    pos = 0
    for para in paragraphs:
        key = nonspace(para)
        k = flat.find(key, pos) if key else -1
        if k < 0:
            out.append(None)
            continue
        out.append((where[k], where[k + len(key) - 1] + 1))
        pos = k + len(key)
    return out


def page_at(record: dict[str, Any], paragraph: int, offset: int) -> int:
    """The page (1-based) on which paragraph ``paragraph``'s ``offset``-th non-whitespace character lies."""
    page = record["paragraphs"][paragraph]["pages"][0][0]
    for start_page, start in record["paragraphs"][paragraph]["pages"]:
        if start <= offset:
            page = start_page
    return int(page)


def render_set(data: Path, out: Path, formats: Sequence[str] = FORMS, limit: int | None = None) -> dict[str, Any]:
    """Every article of ``data/articles.jsonl`` (the first ``limit``) in ``formats`` below ``out``;
    ``{"articles": n, "pages": PDF pages, "form_pages": {paged form: pages}, "lang": ...}``."""
    with open(data / "articles.jsonl", encoding="utf-8") as fh:
        articles = [json.loads(line) for line in fh][:limit]
    lang = language(a["text"] for a in articles)
    form_pages = {f: 0 for f in formats if f in ("pdf", "pptx", "xlsx")}
    unpaged = {"docx": render_docx, "txt": render_txt, "csv": render_csv, "html": render_html, "md": render_md}
    for article in articles:
        aid, title, paras = str(article["_id"]), article.get("title", "") or str(article["_id"]), article_paragraphs(article)
        for form in formats:
            path = out / form / f"{aid}.{form}"
            if form in unpaged:
                unpaged[form](title, paras, path)
                continue
            if form == "pdf":
                record, where = render_pdf(title, paras, path, lang=lang), out / "pages"
            elif form == "pptx":
                record, where = render_pptx(title, paras, path), out / "pages-pptx"
            elif form == "xlsx":
                record, where = render_xlsx(title, paras, path), out / "pages-xlsx"
            else:
                raise SystemExit(f"unknown form {form!r}: choose from {', '.join(FORMS)}")
            where.mkdir(parents=True, exist_ok=True)
            (where / f"{aid}.json").write_text(json.dumps(record), encoding="utf-8")
            form_pages[form] += record["pages"]
    return {"articles": len(articles), "pages": form_pages.get("pdf", 0), "form_pages": form_pages, "lang": lang}


def render_long_pdf(articles: Sequence[dict[str, Any]], path: Path, pages: int, *, lang: str = "en") -> int:
    """One PDF of about ``pages`` pages: ``articles``' paragraphs over and over under one title
    (for the reader's memory against page count); returns its page count."""
    paras = [p for a in articles for p in article_paragraphs(a)]
    per_page = max(render_pdf("Long document", paras, path, lang=lang)["pages"], 1) / len(paras)
    want = max(int(pages / per_page), 1)
    for _ in range(3):  # the estimate, corrected: within a page or two of ``pages``
        got = int(render_pdf("Long document", [paras[i % len(paras)] for i in range(want)], path, lang=lang)["pages"])
        if abs(got - pages) <= 2:
            break
        want = max(int(want * pages / got), 1)
    return got


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", type=Path, help="a dev set folder holding articles.jsonl")
    parser.add_argument("out", type=Path)
    parser.add_argument("--formats", default=",".join(FORMS))
    parser.add_argument("--limit", type=int, default=None, help="the first N articles only")
    args = parser.parse_args()
    done = render_set(args.data, args.out, [f for f in args.formats.split(",") if f], args.limit)
    pages = ", ".join(f"{n} {form} pages" for form, n in done["form_pages"].items())
    print(f"{done['articles']} articles ({done['lang']}){', ' + pages if pages else ''} → {args.out}")


if __name__ == "__main__":
    main()
