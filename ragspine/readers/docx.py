"""``DocxDocumentReader``: Word files through python-docx (MIT).

Paragraphs and tables in body order; a paragraph styled ``Heading N`` (or ``Title``) becomes a
Markdown heading of that level, a table Markdown rows. Title and metadata come from the core
properties. A DOCX is a ZIP archive, checked against the limits before it is opened; the read budget
(``RAGSPINE_MAX_READ_SECONDS``, ``RAGSPINE_MAX_TEXT_CHARS``) is checked between blocks.
"""

from __future__ import annotations

import re
from typing import Any

from ragspine.deadline import DeadlineExceeded
from ragspine.errors import IngestError, MissingDependencyError
from ragspine.readers.base import ReadBudget, ReadDocument, ReaderLimits, TextBuilder
from ragspine.readers.ooxml import check_archive, ooxml_error

_HEADING_STYLE = re.compile(r"^heading\s*([1-6])$", re.I)


class DocxDocumentReader:
    def __init__(self, *, limits: ReaderLimits | None = None) -> None:
        self.limits = limits or ReaderLimits()

    def read(self, data: bytes, where: str) -> ReadDocument:
        try:
            import docx
            from docx.table import Table
            from docx.text.paragraph import Paragraph
        except ModuleNotFoundError:
            raise MissingDependencyError("python-docx", "documents", "reading Word files") from None
        stream = check_archive(data, where, self.limits)
        try:
            document = docx.Document(stream)
            builder, budget = TextBuilder(), ReadBudget(where, self.limits)
            for block in document.iter_inner_content():
                budget.check()
                if isinstance(block, Paragraph):
                    level = _heading_level(block)
                    text = block.text
                    budget.check(len(text))
                    if level:
                        builder.heading(text, level)
                    else:
                        builder.paragraph(text)
                elif isinstance(block, Table):
                    rows = [[cell.text for cell in row.cells] for row in block.rows]
                    budget.check(sum(len(cell) + 3 for row in rows for cell in row))
                    builder.table(rows)
            props = document.core_properties
        except (IngestError, DeadlineExceeded):  # the read budget's, not the library's
            raise
        except Exception as exc:  # python-docx and lxml raise many kinds on a broken part  # noqa: BLE001
            raise ooxml_error(where, "Word", exc) from None
        return builder.build(where, title=" ".join((props.title or "").split()), metadata=core_metadata(props), format="docx")


def _heading_level(paragraph: Any) -> int:
    name = (paragraph.style.name if paragraph.style is not None else "") or ""
    if name.lower() == "title":
        return 1
    match = _HEADING_STYLE.match(name.strip())
    return int(match.group(1)) if match else 0


def core_metadata(props: Any) -> dict[str, str]:
    """Author, subject, keywords and dates of OOXML core properties (DOCX, PPTX, XLSX alike)."""
    out = {}
    for name in ("author", "subject", "keywords"):
        value = " ".join(str(getattr(props, name, "") or "").split())
        if value:
            out[name] = value
    for name in ("created", "modified"):
        when = getattr(props, name, None)
        if when is not None:
            out[name] = when.date().isoformat()
    return out
