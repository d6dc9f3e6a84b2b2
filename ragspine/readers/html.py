"""``StdlibHtmlDocumentReader``: HTML through the standard library's ``html.parser``.

No dependency: the parser is forgiving, and what a retrieval stack needs from a page is its
text, headings and tables. Scripts, styles, templates and ``<head>`` are dropped; ``<h1>`` to
``<h6>`` become Markdown headings, tables Markdown rows, block elements paragraphs. The title
is ``<title>``; ``<meta name="author|description|keywords">`` are metadata. The bytes are
UTF-8 unless a ``<meta charset>`` says otherwise.

Markup over ``RAGSPINE_MAX_HTML_BYTES`` (10 MiB by default: a page is rarely a tenth of it) is
refused before it is decoded; what is parsed is fed in pieces, the read budget
(``RAGSPINE_MAX_READ_SECONDS``, ``RAGSPINE_MAX_TEXT_CHARS``) checked between them.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

from ragspine.errors import IngestError
from ragspine.readers.base import ReadBudget, ReadDocument, ReaderLimits, TextBuilder

_SKIP = {"script", "style", "noscript", "template", "head", "svg", "iframe", "object"}
_BLOCKS = {"p", "div", "section", "article", "main", "header", "footer", "nav", "aside", "blockquote", "pre", "ul",
           "ol", "li", "dl", "dt", "dd", "form", "fieldset", "figure", "figcaption", "address", "hr", "br", "body", "html"}
#: characters of markup fed to the parser between two checks of the read budget
FEED_CHARS = 1 << 20
_CHARSET = re.compile(rb"<meta[^>]+charset\s*=\s*[\"']?([A-Za-z0-9_.:-]+)", re.I)


class StdlibHtmlDocumentReader:
    def __init__(self, *, limits: ReaderLimits | None = None) -> None:
        self.limits = limits or ReaderLimits()

    def read(self, data: bytes, where: str) -> ReadDocument:
        limit = self.limits.max_html_bytes
        if len(data) > limit:
            raise IngestError(f"{where}: {len(data):,} bytes of HTML is over the {limit:,}-byte limit (RAGSPINE_MAX_HTML_BYTES);"
                              " split the page or raise the limit")
        budget = ReadBudget(where, self.limits)
        parser = _Parser()
        markup = _decode(data, where)
        for start in range(0, len(markup), FEED_CHARS):
            kept = parser.kept
            parser.feed(markup[start:start + FEED_CHARS])
            budget.check(parser.kept - kept)
        parser.close()
        parser.flush()
        return parser.builder.build(where, title=" ".join(parser.title.split()), metadata=parser.meta, format="html")


def _decode(data: bytes, where: str) -> str:
    match = _CHARSET.search(data[:4096])
    encoding = match.group(1).decode("ascii").lower() if match else "utf-8"
    try:
        text = data.decode("utf-8-sig" if encoding in ("utf-8", "utf8") else encoding)
    except LookupError:
        raise IngestError(f"{where}: unknown charset {encoding!r} in <meta charset>") from None
    except UnicodeDecodeError as exc:
        raise IngestError(f"{where}: not valid {encoding} (byte {exc.start})") from None
    if "\x00" in text:
        raise IngestError(f"{where}: looks binary (contains NUL bytes), not an HTML file")
    return text


class _Parser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.builder = TextBuilder()
        self.title = ""
        self.meta: dict[str, str] = {}
        self._skip = 0
        self._in_title = False
        self._text: list[str] = []
        self._heading = 0
        self._rows: list[list[str]] | None = None
        self._cell: list[str] | None = None
        self.kept = 0  # characters of text kept so far (what the read budget counts)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "meta":
            values = dict(attrs)
            name = (values.get("name") or "").lower()
            if name in ("author", "description", "keywords") and (values.get("content") or "").strip():
                self.meta[name] = " ".join((values["content"] or "").split())
        if tag == "title":
            self._in_title = True
        elif tag in _SKIP:
            self._skip += 1
        elif self._skip:
            return
        elif tag == "table":
            self.flush()
            self._rows = []
        elif tag == "tr" and self._rows is not None:
            self._rows.append([])
        elif tag in ("td", "th") and self._rows is not None:
            self._cell = []
        elif re.fullmatch(r"h[1-6]", tag):
            self.flush()
            self._heading = int(tag[1])
        elif tag in _BLOCKS and self._cell is None:
            self.flush()

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        elif tag in _SKIP:
            self._skip = max(self._skip - 1, 0)
        elif self._skip:
            return
        elif tag in ("td", "th") and self._rows is not None and self._cell is not None:
            if not self._rows:
                self._rows.append([])
            self._rows[-1].append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "table" and self._rows is not None:
            self.builder.table(self._rows)
            self._rows, self._cell = None, None
        elif re.fullmatch(r"h[1-6]", tag) or (tag in _BLOCKS and self._cell is None):
            self.flush()

    def handle_data(self, data: str) -> None:
        self.kept += 0 if self._skip and not self._in_title else len(data)
        if self._in_title:
            self.title += data
        elif self._skip:
            return
        elif self._cell is not None:
            self._cell.append(data)
        elif self._rows is None:
            self._text.append(data)

    def flush(self) -> None:
        text = " ".join("".join(self._text).split())
        self._text = []
        if self._heading:
            self.builder.heading(text, self._heading)
            self._heading = 0
        elif text:
            self.builder.paragraph(text)
