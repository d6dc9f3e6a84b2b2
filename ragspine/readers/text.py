"""``TextDocumentReader``: UTF-8 ``.txt``/``.md`` with optional YAML front matter — the
reading ``ragspine ingest`` always did, byte for byte: the body after front matter is the
text, its offset in the file is ``body_offset`` (locators point into the real file), the title
is the first Markdown heading (in a ``.txt`` file, only a ``# `` line that opens it)."""

from __future__ import annotations

import re

from ragspine.readers.base import ReadDocument, ReaderLimits

_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$", re.M)


class TextDocumentReader:
    def __init__(self, *, limits: ReaderLimits | None = None) -> None:
        self.limits = limits or ReaderLimits()

    def read(self, data: bytes, where: str) -> ReadDocument:
        from ragspine.front_matter import decode_document, first_heading

        front, body, offset = decode_document(data, where)
        markdown = not where.lower().endswith(".txt")
        headings = tuple((m.start(), len(m.group(1)), m.group(2).strip()) for m in _HEADING.finditer(body)) if markdown else ()
        return ReadDocument(text=body, title=first_heading(body, where), fields=front, body_offset=offset,
                            headings=headings, format="text")
