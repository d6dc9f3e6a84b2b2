"""The contextual retrieval header (``RAGSPINE_CONTEXTUAL``, :func:`make_index_text_fn`).

A chunk cut from the middle of a section often lacks the words a question uses for it: the
document's title, the company it is about, the period, the section it sits in. With the
header on, the text that BM25 indexes and the dense leg embeds is

    <title> · <entity> · <period> · <heading>
    <chunk text>

built only from the chunk's own fields — the document's ``title``, the ``entity`` and
``period`` of its metadata (the controlled fields every store filters on) and the section
``heading`` a layout-aware chunker recorded. Nothing is generated or looked up: a field that
is empty is left out, a repeated value is said once, and each part is one line of at most
:data:`MAX_PART_CHARS` characters. The header exists only in the index text: ``chunk.text``,
``source_locator``, snippets and citations are the document's bytes, unchanged. The
embedding cache is keyed by the index text, so turning the header on (or a changed title)
is a new vector, never a stale one.

A long table's row chunk (:mod:`ragspine.retrieval.chunking.tables`) also gets its table's
column names, its metadata ``table_header``, as a line of their own between the header and
its text: ``| Q3 | 182 |`` is indexed with ``Quarter | Revenue`` beside it, and its citation
is still the row.

``none`` (the default) is :func:`~ragspine.retrieval.lexical.base.default_index_text` itself,
so every ranking and vector is identical to a stack without this module.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Callable

from ragspine.errors import ConfigError
from ragspine.retrieval.chunking.tables import TABLE_HEADER
from ragspine.retrieval.lexical.base import default_index_text

if TYPE_CHECKING:
    from ragspine.retrieval.chunking.chunking import Chunk

__all__ = ["CONTEXTUAL_CHOICES", "MAX_PART_CHARS", "contextual_header", "contextual_index_text", "make_index_text_fn", "parse_contextual"]

#: Longest part of a header (a longer title or heading is cut at a word boundary).
MAX_PART_CHARS = 160
SEPARATOR = " · "
CONTEXTUAL_CHOICES = ("none", "header")
_ALIASES = {"none": "none", "off": "none", "false": "none", "0": "none", "no": "none", "": "none",
            "header": "header", "on": "header", "true": "header", "1": "header", "yes": "header"}
_SPACE = re.compile(r"\s+")


def parse_contextual(value: object) -> str:
    """``none`` or ``header`` from a setting (``on``/``off``/booleans accepted); a clear error otherwise."""
    if isinstance(value, bool):
        return "header" if value else "none"
    name = _ALIASES.get(str(value if value is not None else "").strip().lower())
    if name is None:
        raise ConfigError(f"unknown RAGSPINE_CONTEXTUAL {value!r}; choose one of {', '.join(CONTEXTUAL_CHOICES)} (or on/off)")
    return name


def _part(value: object) -> str:
    if value is None or isinstance(value, bool):
        return ""
    text = _SPACE.sub(" ", str(value)).strip()
    if len(text) > MAX_PART_CHARS:
        cut = text.rfind(" ", 0, MAX_PART_CHARS)
        text = text[: cut if cut > MAX_PART_CHARS // 2 else MAX_PART_CHARS].rstrip()
    return text


def contextual_header(chunk: Chunk) -> str:
    """``title · entity · period · heading`` of ``chunk`` (empty parts and repeats left out)."""
    meta = getattr(chunk, "metadata", None) or {}
    parts: list[str] = []
    for value in (getattr(chunk, "title", ""), meta.get("entity"), meta.get("period"), getattr(chunk, "heading", "")):
        part = _part(value)
        if part and part.casefold() not in (p.casefold() for p in parts):
            parts.append(part)
    return SEPARATOR.join(parts)


def contextual_index_text(chunk: Chunk) -> str:
    """The header, a newline, then the chunk's own text (just the text when there is no header);
    a table's row chunk has its column names (metadata ``table_header``) on a line of their own
    before its text."""
    meta = getattr(chunk, "metadata", None) or {}
    lines = [contextual_header(chunk), _columns(meta.get(TABLE_HEADER))]
    lines = [line for line in lines if line]
    return "\n".join([*lines, str(chunk.text)])


def _columns(value: object) -> str:
    return " ".join(str(value).split()) if isinstance(value, str) else ""


contextual_index_text.persist_key = "contextual-v1"  # type: ignore[attr-defined]  # its saved segments' subdirectory


def make_index_text_fn(spec: object = "none") -> Callable[[Any], str]:
    """The index-text function of ``spec`` (``RAGSPINE_CONTEXTUAL``): ``none`` →
    ``default_index_text`` (the chunk's text), ``header`` → :func:`contextual_index_text`."""
    return contextual_index_text if parse_contextual(spec) == "header" else default_index_text
