"""Where a snippet is on its PDF's pages: the boxes of the lines its text covers, on request.

A PDF reader keeps every line's box (:class:`~ragspine.readers.base.LineBox`). At ingest (and
upload) each chunk of a PDF or an OCR'd image keeps the boxes of the lines its span touches in
``Chunk.boxes`` (:func:`encode_boxes`: compact JSON, ``[page, left, bottom, right, top]`` per
line, a sixth ``1`` when OCR read it), stored with the chunk. An answer asked for boxes
(``ragspine query --boxes``, the HTTP service's ``"boxes": true``) gives each snippet
``boxes``: ``[{"page": 2, "box": [left, bottom, right, top]}, ...]`` in PDF points from the
page's bottom-left corner (``"ocr": true`` on a line OCR read) — from the store
(:func:`stored_boxes`), i.e. from the bytes the document was read from. Without the request no
snippet has the field, and no other field changes.

For chunks stored before boxes were kept, ``ragspine query --boxes`` reads the snippet's file
again (:class:`SourceBoxes`): only when the file is there, is a PDF (or an image read by OCR),
and still holds the snippet's text at its locator — a file changed or moved gives the snippet
no ``boxes``, never wrong ones. Reading is bounded as at ingest
(:class:`~ragspine.readers.base.ReaderLimits`, ``RAGSPINE_MAX_FILE_BYTES``) and stops at a
deadline. The HTTP service never reads a path again: a source it could read is one a tenant
wrote (a ``doc_id``, an upload's name), and comparing the tenant's own text with it would tell
the tenant what any PDF on the server says; its boxes are the stored ones only.
"""

from __future__ import annotations

import functools
import json
from bisect import bisect_left
from collections.abc import Callable, Iterable, MutableMapping, Sequence
from pathlib import Path
from typing import Any

from ragspine.deadline import DeadlineExceeded
from ragspine.errors import RagspineError
from ragspine.readers.base import LineBox, ReadDocument, ReaderLimits

#: the extensions of the formats whose readers keep line boxes (PDF; images read by OCR)
BOX_SUFFIXES = (".pdf", ".png", ".jpg", ".jpeg", ".tif", ".tiff")
MAX_FILE_BYTES = 20 * 1024 * 1024


def line_box(line: LineBox) -> dict[str, Any]:
    """One line's box as an answer shows it (coordinates rounded to 0.01 pt)."""
    out: dict[str, Any] = {"page": line.page, "box": [round(v, 2) for v in line.box]}
    if line.ocr:
        out["ocr"] = True
    return out


def span_lines(doc: ReadDocument, start: int, end: int, ends: Sequence[int] | None = None) -> list[LineBox]:
    """``doc``'s lines that ``doc.text[start:end]`` touches, in text order (``ends``: the lines'
    ends, when the caller has them)."""
    lines = doc.line_boxes
    first = bisect_left(ends if ends is not None else [line.end for line in lines], start + 1)  # in text order, none overlapping
    out = []
    for line in lines[first:]:
        if line.start >= end:
            break
        if line.end > start:
            out.append(line)
    return out


def span_boxes(doc: ReadDocument, start: int, end: int) -> list[dict[str, Any]]:
    """The boxes of ``doc``'s lines that ``doc.text[start:end]`` touches, in text order."""
    return [line_box(line) for line in span_lines(doc, start, end)]


def encode_boxes(lines: Sequence[LineBox]) -> str:
    """``lines``' boxes as ``Chunk.boxes`` keeps them (``""`` for none)."""
    if not lines:
        return ""
    rows = [[line.page, *(round(v, 2) for v in line.box), *([1] if line.ocr else [])] for line in lines]
    return json.dumps(rows, separators=(",", ":"))


def decode_boxes(value: str) -> list[dict[str, Any]]:
    """``Chunk.boxes`` as an answer shows them (``[]`` for ``""``)."""
    out: list[dict[str, Any]] = []
    for row in json.loads(value) if value else []:
        box: dict[str, Any] = {"page": int(row[0]), "box": [float(v) for v in row[1:5]]}
        if len(row) > 5 and row[5]:
            box["ocr"] = True
        out.append(box)
    return out


def add_stored_boxes(snippets: Iterable[Any], store_of: Callable[[str], Any]) -> None:
    """Give each of ``snippets`` the ``boxes`` its stored chunk keeps (``store_of(library_id)``:
    that library's chunk store; one read per library). A snippet whose chunk keeps none — not
    a PDF, stored before boxes were kept, or re-ingested since it was found — gets none."""
    by_library: dict[str, list[Any]] = {}
    for snippet in snippets:
        by_library.setdefault(str(snippet["library_id"]), []).append(snippet)
    for library_id, found in by_library.items():
        chunks = store_of(library_id).get_chunks([str(s["chunk_id"]) for s in found])
        kept = {(c.chunk_id, c.version): c.boxes for c in chunks if c.boxes}
        for snippet in found:
            boxes = kept.get((snippet["chunk_id"], snippet.get("version")))
            if boxes:
                snippet["boxes"] = decode_boxes(boxes)


class SourceBoxes:
    """Boxes of snippets, each source file read once per instance (see the module docstring).
    ``why`` collects, per source, why its snippets got none."""

    def __init__(self, limits: ReaderLimits | None = None, max_bytes: int = MAX_FILE_BYTES) -> None:
        self.limits = limits or ReaderLimits()
        self.max_bytes = max_bytes
        self.why: dict[str, str] = {}
        self._read: dict[str, ReadDocument | None] = {}
        self._stopped = False

    def boxes(self, locator: str, text: str) -> list[dict[str, Any]] | None:
        """The boxes of the snippet ``text`` cited by ``locator`` (``source#char=a,b``); ``None``
        when they cannot be known (``why`` says it)."""
        from ragspine.retrieval.passage import parse_locator

        parsed = parse_locator(locator)
        if parsed is None:
            return None
        source, start, end = parsed
        doc = self._document(source)
        if doc is None:
            return None
        if doc.text[start:end] != text:
            self.why[source] = "the file changed since it was ingested"
            return None
        return span_boxes(doc, start, end)

    def _document(self, source: str) -> ReadDocument | None:
        if source in self._read:
            return self._read[source]
        doc = None
        if self._stopped:
            self.why[source] = "the request's deadline came first"
        elif not source.lower().endswith(BOX_SUFFIXES):
            pass  # not a format with boxes: nothing to say
        else:
            try:
                doc = _read_source(source, self.limits, self.max_bytes)
            except DeadlineExceeded:
                self._stopped = True
                self.why[source] = "the request's deadline came first"
            except (OSError, RagspineError) as exc:
                self.why[source] = " ".join(str(exc).split())[:200] or type(exc).__name__
            else:
                if doc is not None and not doc.line_boxes:
                    doc = None
        self._read[source] = doc
        return doc

    def add(self, snippets: Iterable[MutableMapping[str, Any]]) -> None:
        """Give each of ``snippets`` whose boxes can be known its ``boxes``."""
        for snippet in snippets:
            found = self.boxes(str(snippet.get("source_locator", "")), str(snippet.get("text", "")))
            if found is not None:
                snippet["boxes"] = found


def _read_source(source: str, limits: ReaderLimits, max_bytes: int) -> ReadDocument | None:
    path = Path(source)
    try:
        stat = path.stat()
    except OSError:
        raise OSError(f"{source}: the file is not there") from None
    if not path.is_file():
        return None
    if stat.st_size > max_bytes:
        raise OSError(f"{source}: {stat.st_size:,} bytes is over the {max_bytes:,}-byte limit (RAGSPINE_MAX_FILE_BYTES)")
    return _cached_read(str(path.resolve()), stat.st_size, stat.st_mtime_ns, limits)


@functools.lru_cache(maxsize=4)
def _cached_read(path: str, size: int, mtime_ns: int, limits: ReaderLimits) -> ReadDocument:
    """The file read (kept for the next answers while its size and time stay the same)."""
    from ragspine.readers.registry import read_bytes

    return read_bytes(Path(path).read_bytes(), path, limits)
