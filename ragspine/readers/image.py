"""``OcrImageDocumentReader``: a PNG, JPEG or TIFF file (a scan, a photo of a page) read by OCR.

Only with ``RAGSPINE_OCR`` set to an engine (:mod:`ragspine.readers.ocr`); off, an image is
refused with a line naming the setting. Each frame of a multi-page TIFF is a page. Lines keep
their boxes (:class:`~ragspine.readers.base.LineBox`, ``ocr`` set) in points at the image's
resolution (72 dpi when it states none), from the page's bottom-left corner as in a PDF; the
metadata says ``ocr: true``. Pillow (``PIL``) decodes the image; a picture over
``RAGSPINE_MAX_PDF_PAGES`` frames, or over Pillow's decompression-bomb bound, is refused, and so is
one whose reading runs past ``RAGSPINE_MAX_READ_SECONDS`` (checked between frames).
"""

from __future__ import annotations

from typing import Any

from ragspine.errors import BackendError, IngestError, MissingDependencyError
from ragspine.readers.base import LineBox, ReadBudget, ReadDocument, ReaderLimits, TextBuilder, one_line
from ragspine.readers.sniff import UnsupportedFormat, image_kind


class OcrImageDocumentReader:
    """Image → the text OCR reads, one page per frame (see the module docstring)."""

    def __init__(self, *, limits: ReaderLimits | None = None) -> None:
        self.limits = limits or ReaderLimits()

    def read(self, data: bytes, where: str) -> ReadDocument:
        kind = image_kind(data) or "an image"
        from ragspine.readers.ocr import read_page_image, shared_ocr_engine
        from ragspine.registries import OCR_ENGINES

        if self.limits.ocr == "none":
            engines = "|".join(name for name in OCR_ENGINES.names() if name != "none")
            raise UnsupportedFormat(f"{where}: {kind}; ingest reads an image only through OCR: set RAGSPINE_OCR={engines}")

        engine = shared_ocr_engine(self.limits.ocr, self.limits.ocr_langs)
        assert engine is not None  # ocr is not "none" here
        builder, boxes, pages, budget = TextBuilder(), list[LineBox](), 0, ReadBudget(where, self.limits)
        for number, frame, dpi in _frames(data, where, self.limits.max_pdf_pages):
            budget.check()
            pages = number
            builder.start_page()
            scale = dpi / 72  # pixels per point
            height = frame.height / scale
            try:
                read = read_page_image(engine, frame, scale=scale, top=height)
            except BackendError as exc:  # the engine failed on this page: the file is bad, not the run
                raise IngestError(f"{where}: page {number}: {exc}") from None
            budget.check(sum(len(text) + 2 for text, _, _ in read))
            for text, box, confidence in read:
                span = builder.paragraph(text)
                if span is not None:
                    boxes.append(LineBox(span[0], span[1], number, box, True, confidence))
        if not boxes:
            raise IngestError(f"{where}: OCR ({self.limits.ocr}) read no text in the image")
        return builder.build(where, metadata={"ocr": True, "ocr_pages": pages, "ocr_engine": self.limits.ocr},
                             line_boxes=tuple(boxes), format="image")


def _frames(data: bytes, where: str, max_pages: int) -> Any:
    """``(1-based page, grayscale frame, dpi)`` for each frame of the image."""
    import io

    try:
        from PIL import Image, ImageSequence
    except ModuleNotFoundError:
        raise MissingDependencyError("Pillow", "ocr", "reading image files") from None
    try:
        image = Image.open(io.BytesIO(data))
        count = getattr(image, "n_frames", 1)
        if count > max_pages:
            raise IngestError(f"{where}: {count:,} frames is over the {max_pages:,}-page limit (RAGSPINE_MAX_PDF_PAGES);"
                              " split the file or raise the limit")
        for number, frame in enumerate(ImageSequence.Iterator(image), 1):
            dpi = float((frame.info.get("dpi") or (72, 72))[0]) or 72.0
            page = frame.convert("L")
            page.info["dpi"] = (dpi, dpi)
            yield number, page, dpi
    except (OSError, ValueError, Image.DecompressionBombError) as exc:
        raise IngestError(f"{where}: a corrupt or oversized image ({one_line(exc)})") from None
