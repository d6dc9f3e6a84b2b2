"""PDF pages as pictures, for the visual index: pypdfium2 renders, Pillow holds the image.

A page is rendered at ``dpi`` (PDF points are 1/72 inch, so the scale is ``dpi / 72``); the
default, :data:`DEFAULT_DPI`, gives an A4 page of about 1,000 x 1,400 pixels — above the
448 x 448 a ColPali model reads, below the 300 dpi OCR wants. Pages are rendered one at a
time and handed over as they come, so a long report is never held whole in memory.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from ragspine.errors import IngestError, MissingDependencyError

DEFAULT_DPI = 120
MAX_DPI = 600


def check_dpi(dpi: int) -> int:
    if not 18 <= dpi <= MAX_DPI:
        raise ValueError(f"dpi must be 18..{MAX_DPI}, got {dpi}")
    return dpi


def _pdfium() -> Any:
    try:
        import PIL.Image  # noqa: F401  (pypdfium2's to_pil needs it)
        import pypdfium2 as pdfium  # type: ignore[import-untyped]
    except ModuleNotFoundError as exc:
        raise MissingDependencyError(exc.name or "pypdfium2", "visual", "rendering PDF pages for the visual index") from None
    return pdfium


def render_pages(path: str | Path, *, dpi: int = DEFAULT_DPI, max_pages: int | None = None) -> Iterator[tuple[int, Any]]:
    """``(page number, RGB PIL.Image)`` of each page of the PDF at ``path``, 1-based, in order
    (at most ``max_pages``); an unreadable file is an ``IngestError`` naming it."""
    pdfium = _pdfium()
    scale = check_dpi(dpi) / 72.0
    try:
        doc = pdfium.PdfDocument(str(path))
    except pdfium.PdfiumError as exc:
        raise IngestError(f"{path}: cannot open the PDF to render its pages: {exc}") from None
    try:
        count = len(doc) if max_pages is None else min(len(doc), max_pages)
        for index in range(count):
            page = doc[index]
            try:
                image = page.render(scale=scale).to_pil().convert("RGB")
            finally:
                page.close()
            yield index + 1, image
    finally:
        doc.close()
