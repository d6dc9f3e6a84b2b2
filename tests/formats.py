"""One document in every format a reader reads, from the same paragraphs (no binary fixtures).

``FORMATS[name](title, paragraphs)`` returns the bytes of a file of that format holding the
paragraphs in order: a PDF page, a slide, a spreadsheet row or an HTML ``<p>`` each; ``.md``
and ``.txt`` with no front matter. ``png`` draws them as an image (read only through OCR).
The conformance packs ingest these beside each other, so every reader's text goes through
the same invariants (provenance, pages, RESTRICTED, rankings across stores).
"""

from __future__ import annotations

import csv
import html
import io
import textwrap
from typing import Callable, Sequence

from tests.unit.readers.pdfgen import make_pdf

Builder = Callable[[str, Sequence[str]], bytes]


def pdf(title: str, paragraphs: Sequence[str]) -> bytes:
    pages = [[(72, 720 - 16 * i, line) for i, line in enumerate(textwrap.wrap(p, 80))] for p in paragraphs]
    return make_pdf(pages, title=title)


def docx(title: str, paragraphs: Sequence[str]) -> bytes:
    import docx as python_docx

    document = python_docx.Document()
    document.core_properties.title = title
    for paragraph in paragraphs:
        document.add_paragraph(paragraph)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def pptx(title: str, paragraphs: Sequence[str]) -> bytes:
    import pptx as python_pptx

    presentation = python_pptx.Presentation()
    presentation.core_properties.title = title
    for number, paragraph in enumerate(paragraphs, 1):
        slide = presentation.slides.add_slide(presentation.slide_layouts[1])
        slide.shapes.title.text = f"Slide {number}"
        slide.placeholders[1].text_frame.text = paragraph
    out = io.BytesIO()
    presentation.save(out)
    return out.getvalue()


def xlsx(title: str, paragraphs: Sequence[str]) -> bytes:
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Notes"
    sheet.append(("Item", "Note"))
    for number, paragraph in enumerate(paragraphs, 1):
        sheet.append((number, paragraph))
    book.properties.title = title
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def csv_file(title: str, paragraphs: Sequence[str]) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(("item", "note"))
    writer.writerows((number, paragraph) for number, paragraph in enumerate(paragraphs, 1))
    return out.getvalue().encode()


def html_file(title: str, paragraphs: Sequence[str]) -> bytes:
    body = "".join(f"<p>{html.escape(p)}</p>" for p in paragraphs)
    script = "<script>var hidden = 'scripts are never text';</script>"
    return f"<!doctype html><html><head><title>{html.escape(title)}</title>{script}</head><body>{body}</body></html>".encode()


def markdown(title: str, paragraphs: Sequence[str]) -> bytes:
    return (f"# {title}\n\n" + "\n\n".join(paragraphs) + "\n").encode()


def text(title: str, paragraphs: Sequence[str]) -> bytes:
    return ("\n\n".join([title, *paragraphs]) + "\n").encode()


def png(title: str, paragraphs: Sequence[str]) -> bytes:
    """The paragraphs drawn black on white at 200 dpi (36 pt), a line per ~40 characters."""
    from PIL import Image, ImageDraw, ImageFont

    lines = [line for p in paragraphs for line in textwrap.wrap(p, 40)]
    font = ImageFont.load_default(size=36)
    image = Image.new("L", (1100, 120 + 60 * len(lines)), 255)
    draw = ImageDraw.Draw(image)
    for number, line in enumerate(lines):
        draw.text((60, 60 + 60 * number), line, font=font, fill=0)
    out = io.BytesIO()
    image.save(out, format="PNG", dpi=(200, 200))
    return out.getvalue()


#: extension -> builder; every reader of ``ragspine.registries.DOCUMENT_READERS`` is here
FORMATS: dict[str, Builder] = {
    "pdf": pdf, "docx": docx, "pptx": pptx, "xlsx": xlsx, "csv": csv_file, "html": html_file,
    "md": markdown, "txt": text, "png": png,
}
#: the formats whose snippets carry ``page`` (PDF pages, slides, sheets, image frames)
PAGED = frozenset({"pdf", "pptx", "xlsx", "png"})
