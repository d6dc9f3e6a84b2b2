"""``PptxDocumentReader``: PowerPoint files through python-pptx (MIT).

Each slide is a page: its title a heading, then its shapes' text in slide order (groups
opened, tables as Markdown rows), then its speaker notes. Title and metadata come from the
core properties. A PPTX is a ZIP archive, checked against the limits before it is opened; the read budget
(``RAGSPINE_MAX_READ_SECONDS``, ``RAGSPINE_MAX_TEXT_CHARS``) is checked between slides.
"""

from __future__ import annotations

from typing import Any

from ragspine.deadline import DeadlineExceeded
from ragspine.errors import IngestError, MissingDependencyError
from ragspine.readers.base import ReadBudget, ReadDocument, ReaderLimits, TextBuilder
from ragspine.readers.docx import core_metadata
from ragspine.readers.ooxml import check_archive, ooxml_error


class PptxDocumentReader:
    def __init__(self, *, limits: ReaderLimits | None = None) -> None:
        self.limits = limits or ReaderLimits()

    def read(self, data: bytes, where: str) -> ReadDocument:
        try:
            import pptx
        except ModuleNotFoundError:
            raise MissingDependencyError("python-pptx", "documents", "reading PowerPoint files") from None
        stream = check_archive(data, where, self.limits)
        try:
            presentation = pptx.Presentation(stream)
            builder, budget = TextBuilder(), ReadBudget(where, self.limits)
            for number, slide in enumerate(presentation.slides, 1):
                budget.check()
                builder.start_page()
                title_shape = slide.shapes.title
                title = title_shape.text_frame.text if title_shape is not None and title_shape.has_text_frame else ""
                builder.heading(title or f"Slide {number}", 1)
                chars = len(title)
                for shape in slide.shapes:
                    if title_shape is None or shape.shape_id != title_shape.shape_id:
                        chars += _add_shape(builder, shape)
                if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
                    notes = slide.notes_slide.notes_text_frame.text.strip()
                    if notes:
                        builder.paragraph(f"Notes: {notes}")
                        chars += len(notes)
                budget.check(chars)
            props = presentation.core_properties
        except (IngestError, DeadlineExceeded):  # the read budget's, not the library's
            raise
        except Exception as exc:  # python-pptx and lxml raise many kinds on a broken part  # noqa: BLE001
            raise ooxml_error(where, "PowerPoint", exc) from None
        return builder.build(where, title=" ".join((props.title or "").split()), metadata=core_metadata(props), format="pptx")


def _add_shape(builder: TextBuilder, shape: Any) -> int:
    """Add the shape's text; how many characters it had."""
    if getattr(shape, "shapes", None) is not None:  # a group
        return sum(_add_shape(builder, inner) for inner in shape.shapes)
    if getattr(shape, "has_table", False) and shape.has_table:
        rows = [[cell.text for cell in row.cells] for row in shape.table.rows]
        builder.table(rows)
        return sum(len(cell) + 3 for row in rows for cell in row)
    if getattr(shape, "has_text_frame", False) and shape.has_text_frame:
        text = "\n".join(p.text.strip() for p in shape.text_frame.paragraphs if p.text.strip())
        builder.paragraph(text)
        return len(text)
    return 0
