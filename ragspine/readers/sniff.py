"""Which reader a file needs, from its first bytes (magic numbers), not its extension alone.

Binary formats are known by their content: ``%PDF-`` is a PDF whatever the file is called,
and a ZIP archive is a Word, PowerPoint or Excel file by the parts it holds (``word/``,
``ppt/``, ``xl/``). A file whose extension claims a binary format its content does not have
is refused (its extension lies). Text is read by its extension: ``.csv``/``.tsv`` as a table,
``.html``/``.htm`` (or an unnamed file opening with markup) as HTML, ``.txt``/``.md`` as
today — a Markdown file may hold HTML, so markup never turns one into HTML.

A PNG, JPEG or TIFF image is format ``image``, read only through OCR (``RAGSPINE_OCR``; the
image reader refuses it otherwise, naming the setting) — unless its name claims a format of
:data:`EXTENSIONS`, whose content it is not. Image extensions are not in :data:`EXTENSIONS`:
a directory walk does not pick images up (:data:`IMAGE_EXTENSIONS` lists them for a caller
that reads images with OCR on).
"""

from __future__ import annotations

import io
import zipfile
from pathlib import PurePath

from ragspine.errors import IngestError

#: extension -> the format it claims (the extensions a directory walk picks up)
EXTENSIONS = {
    ".txt": "text", ".md": "text", ".markdown": "text", ".pdf": "pdf", ".docx": "docx", ".pptx": "pptx",
    ".xlsx": "xlsx", ".csv": "csv", ".tsv": "csv", ".html": "html", ".htm": "html",
}
#: extensions of the images the OCR reader takes (format ``image``)
IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".tif", ".tiff")
BINARY_FORMATS = ("pdf", "docx", "pptx", "xlsx")
_IMAGES = ((b"\x89PNG\r\n\x1a\n", "a PNG image"), (b"\xff\xd8\xff", "a JPEG image"), (b"II*\x00", "a TIFF image"),
           (b"MM\x00*", "a TIFF image"))
_OOXML_PARTS = (("word/document.xml", "docx"), ("ppt/presentation.xml", "pptx"), ("xl/workbook.xml", "xlsx"))
_NOT_SUPPORTED = (
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "a legacy Office file (.doc/.xls/.ppt); save it as .docx/.xlsx/.pptx"),
    (b"\x89PNG", "a PNG image"), (b"\xff\xd8\xff", "a JPEG image"), (b"GIF8", "a GIF image"),
    (b"II*\x00", "a TIFF image"), (b"MM\x00*", "a TIFF image"),
    (b"{\\rtf", "an RTF file; save it as .docx"),
)
_MARKUP = (b"<!doctype html", b"<html", b"<head", b"<body")


class UnsupportedFormat(IngestError):
    """Content no reader takes (an image, a legacy Office file, a ZIP that is not Office), or an
    extension that claims a format the content is not (the service answers 415)."""


def sniff_format(data: bytes, name: str) -> str:
    """The format of ``data`` (one of :data:`EXTENSIONS`' values); :class:`IngestError` for
    content no reader takes, or an extension claiming a binary format the content lacks."""
    claimed = EXTENSIONS.get(PurePath(name).suffix.lower())
    if b"%PDF-" in data[:1024]:  # readers accept a header within the first KiB, as PDF viewers do
        return "pdf"
    if data.startswith(b"PK\x03\x04"):
        return _ooxml_format(data, name)
    if image_kind(data) and claimed is None:  # an image named as one (or unnamed): the OCR reader's
        return "image"
    for magic, what in _NOT_SUPPORTED:
        if data.startswith(magic):
            raise UnsupportedFormat(f"{name}: {what}, not a format ingest reads")
    if claimed in BINARY_FORMATS:
        header = "%PDF- header" if claimed == "pdf" else "ZIP header"
        raise UnsupportedFormat(f"{name}: not a {claimed.upper()} file (no {header}): its extension does not match its content")
    if claimed in ("csv", "html", "text"):
        return claimed
    return "html" if looks_like_html(data) else "text"


def image_kind(data: bytes) -> str | None:
    """``"a PNG image"`` (JPEG, TIFF) when ``data`` is an image the OCR reader takes, else ``None``."""
    return next((what for magic, what in _IMAGES if data.startswith(magic)), None)


def looks_like_html(data: bytes) -> bool:
    """Whether ``data`` opens with HTML markup (after a byte-order mark, whitespace and comments)."""
    head = data[:2048].lstrip(b"\xef\xbb\xbf").lstrip().lower()
    while head.startswith(b"<!--") and b"-->" in head:
        head = head[head.index(b"-->") + 3 :].lstrip()
    return head.startswith(_MARKUP)


def _ooxml_format(data: bytes, name: str) -> str:
    try:
        names = set(zipfile.ZipFile(io.BytesIO(data)).namelist())
    except (zipfile.BadZipFile, ValueError, EOFError) as exc:
        raise IngestError(f"{name}: a corrupt ZIP archive ({exc})") from None
    for part, fmt in _OOXML_PARTS:
        if part in names:
            return fmt
    raise UnsupportedFormat(f"{name}: a ZIP archive, not a Word, PowerPoint or Excel file (no word/, ppt/ or xl/ part)")
