"""Tables stay tables: a table longer than the chunk budget is cut at its rows, and each row
chunk carries the table's column names for the index text (:func:`table_row_chunks`).

A reader renders a table as Markdown lines (``| a | b |``, a ``| --- |`` line under the
header row, one line per row) and records its range (``ReadDocument.tables``: XLSX sheets, CSV,
DOCX, PPTX and HTML tables; a text or Markdown file records none, so its chunks are never
touched here). A chunker knows nothing of tables: a long table is cut wherever its sentence
terminators (``3.5``) or its budget fall, so a row is split in two and every chunk after
the first has values without the column names that say what they are. Contract:

1. A table that fits the chunker's budget (``max_chars``) stays as the chunker cut it: its
   chunk holds the header row itself.
2. A longer table becomes its own chunks: consecutive rows packed in order while the span
   fits the budget (the chunker's ``packing="unit"``: one row per chunk). A row is never split,
   unless it alone is over the budget: then it is cut between cells (a cell over the budget
   hard-cut), each piece its own chunk. The first chunk starts at the table (its header row and
   ``| --- |`` line) — or at a heading line directly above it (a sheet's name), which is then
   no chunk of its own.
3. Every chunk is still the document's bytes: ``text == document[char_start:char_end]`` and
   ``source_locator`` cites exactly the rows. The column names go to the metadata field
   :data:`TABLE_HEADER` (the header cells joined by ``" | "``) of every chunk of the table but
   the first (whose text holds them); :func:`ragspine.retrieval.contextual.contextual_index_text`
   puts them in the index text — what BM25 indexes and the dense leg embeds — never in the text.
4. The chunker's chunks that overlap such a table are clipped to the text outside it
   (trimmed; dropped when nothing is left); row chunks take the other fields (``heading``,
   ``title``, metadata, sensitivity, a parent window that holds them) of the chunker's chunk
   at their start. Ordinals and ids are renumbered ``0..n-1`` in document order.

Time is linear in the document.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Sequence

from ragspine.retrieval.chunking.chunking import DEFAULT_CHUNK_CHARS, Chunk, chunk_id_for, hard_cut, make_locator

if TYPE_CHECKING:
    from ragspine.readers.base import ReadDocument

__all__ = ["TABLE_HEADER", "header_cells", "row_spans", "table_row_chunks"]

#: The chunk metadata field holding a row chunk's column names.
TABLE_HEADER = "table_header"
#: Longest ``table_header`` kept (a wider header is cut at a cell boundary).
MAX_HEADER_CHARS = 1000

_CELL_SPLIT = re.compile(r"(?<!\\)\|")
_SEPARATOR_LINE = re.compile(r"^\|(?: ?-{3,} ?\|)+$")


def header_cells(line: str) -> list[str]:
    """The cells of one Markdown table line (``| a | b\\|c |`` → ``["a", "b\\|c"]``)."""
    inner = line.strip()
    if inner.startswith("|"):
        inner = inner[1:]
    if inner.endswith("|") and not inner.endswith("\\|"):
        inner = inner[:-1]
    return [cell.strip() for cell in _CELL_SPLIT.split(inner)]


def row_spans(text: str, start: int, end: int) -> list[tuple[int, int]] | None:
    """The line spans of the Markdown table at ``text[start:end]``: header row, ``| --- |``
    line, data rows; ``None`` when it is not one (no separator line under the first)."""
    spans: list[tuple[int, int]] = []
    pos = start
    while pos < end:
        stop = text.find("\n", pos, end)
        stop = end if stop < 0 else stop
        a, b = pos, stop
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        if b > a:
            spans.append((a, b))
        pos = stop + 1
    if len(spans) < 2 or not _SEPARATOR_LINE.match(text[spans[1][0]:spans[1][1]]):
        return None
    return spans


def table_row_chunks(chunks: Sequence[Chunk], structure: ReadDocument, chunker: Any = None, body_offset: int = 0) -> list[Chunk]:
    """``chunks`` (``chunker``'s, of ``structure.text``, whose offset in its file is
    ``body_offset``) with every table longer than the chunker's budget cut at its rows (see the
    module docstring). Unchanged — the same list's chunks — when no table is that long."""
    text = structure.text
    max_chars = int(getattr(chunker, "max_chars", DEFAULT_CHUNK_CHARS) or DEFAULT_CHUNK_CHARS)
    one_row = getattr(chunker, "packing", "pack") == "unit"
    tables = []
    for start, end in structure.tables:
        rows = row_spans(text, start, end) if end - start > max_chars else None
        if rows is not None:
            tables.append((start, end, rows))
    if not tables or not chunks:
        return list(chunks)
    starts = [c.char_start for c in chunks]
    where = chunks[0].source_locator.rsplit("#char=", 1)[0]
    doc_id = chunks[0].doc_id

    # 4. the chunker's chunks, clipped to the text outside the long tables
    ends = [t_end for _, t_end, _ in tables]
    pieces: list[tuple[int, int, Chunk]] = []  # (start, end) in ``text``, the chunk it came from
    for chunk in chunks:
        a, b = chunk.char_start - body_offset, chunk.char_end - body_offset
        spans = []
        i = bisect_right(ends, a)  # the first table ending after ``a``
        while i < len(tables) and tables[i][0] < b:
            spans.append((a, tables[i][0]))
            a = max(a, tables[i][1])
            i += 1
        spans.append((a, b))
        for a, b in spans:
            a, b = _trim(text, a, b)
            if b > a and not (pieces and pieces[-1][0] <= a and b <= pieces[-1][1]):
                pieces.append((a, b, chunk))

    # 2. the long tables' rows
    pieces.sort(key=lambda p: (p[0], p[1]))
    dropped: set[int] = set()
    piece_starts = [p[0] for p in pieces]
    rows_out: list[tuple[int, int, Chunk]] = []
    for t_start, _, rows in tables:
        first = t_start
        above = bisect_right(piece_starts, t_start) - 1  # the piece right above the table
        if above >= 0 and _heading_line(text, pieces[above], t_start):
            dropped.add(above)
            first = pieces[above][0]
        header = _header_value(text[rows[0][0]:rows[0][1]])
        for i, (a, b) in enumerate(_row_groups(text, (first, rows[1][1]), rows[2:], max_chars, one_row)):
            source = _chunk_at(chunks, starts, a + body_offset) or chunks[0]
            meta = dict(source.metadata)
            meta.pop(TABLE_HEADER, None)
            if i and header:
                meta[TABLE_HEADER] = header
            rows_out.append((a, b, _row_chunk(source, meta, a + body_offset, b + body_offset)))

    kept = [p for i, p in enumerate(pieces) if i not in dropped] + rows_out
    kept.sort(key=lambda p: (p[0], p[1]))
    out = []
    for ordinal, (a, b, chunk) in enumerate(kept):
        out.append(replace(chunk, chunk_id=chunk_id_for(doc_id, ordinal), ordinal=ordinal, text=text[a:b],
                           char_start=a + body_offset, char_end=b + body_offset,
                           source_locator=make_locator(where, a + body_offset, b + body_offset)))
    return out


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _chunk_at(chunks: Sequence[Chunk], starts: Sequence[int], offset: int) -> Chunk | None:
    """The chunker's chunk at ``offset`` (file offsets): the last one starting at or before it."""
    i = bisect_right(starts, offset) - 1
    return chunks[i] if i >= 0 else None


def _heading_line(text: str, piece: tuple[int, int, Chunk], t_start: int) -> bool:
    """Whether ``piece`` is one Markdown heading line and nothing else, right above the table."""
    a, b, _ = piece
    line = text[a:b]
    return b <= t_start and not text[b:t_start].strip() and line.startswith("#") and "\n" not in line


def _header_value(line: str) -> str:
    cells = [c for c in header_cells(line) if c]
    value = ""
    for cell in cells:
        joined = f"{value} | {cell}" if value else cell
        if len(joined) > MAX_HEADER_CHARS:
            break
        value = joined
    return value


def _row_groups(
    text: str, lead: tuple[int, int], rows: Sequence[tuple[int, int]], max_chars: int, one_row: bool,
) -> list[tuple[int, int]]:
    """``lead`` (the header lines, with a heading above them) and the first row, when they fit
    ``max_chars`` together, then consecutive rows packed while the span fits (``one_row``: one
    a group); a row over ``max_chars`` cut between cells into pieces of its own."""
    groups: list[tuple[int, int]] = []
    current: tuple[int, int] | None = lead
    for i, (start, end) in enumerate(rows):
        fits = current is not None and end - current[0] <= max_chars
        if end - start > max_chars:
            if current is not None:
                groups.append(current)
                current = None
            groups.extend(_cell_pieces(text, start, end, max_chars))
        elif fits and (not one_row or (i == 0 and current == lead)):
            current = (current[0], end)  # type: ignore[index]
        else:
            if current is not None:
                groups.append(current)
            current = (start, end)
    if current is not None:
        groups.append(current)
    return groups


def _cell_pieces(text: str, start: int, end: int, max_chars: int) -> list[tuple[int, int]]:
    """A row over ``max_chars`` cut after cell separators into pieces of at most ``max_chars``
    (a cell over it hard-cut)."""
    cuts = [m.end() for m in _CELL_SPLIT.finditer(text, start, end)]
    cells = [(a, b) for a, b in zip([start] + cuts, cuts + [end], strict=True) if b > a]
    out: list[tuple[int, int]] = []
    for a, b in cells:
        a, b = _trim(text, a, b)
        if b <= a:
            continue
        if b - a > max_chars:
            out.extend(hard_cut(text, a, b, max_chars))
        elif out and b - out[-1][0] <= max_chars:
            out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out


def _row_chunk(source: Chunk, metadata: dict[str, Any], start: int, end: int) -> Chunk:
    """A row chunk with ``source``'s fields; its parent window only when it holds the rows."""
    if source.parent_locator:
        a, b = map(int, source.parent_locator.rsplit("#char=", 1)[1].split(","))
        if not (a <= start and end <= b):
            return replace(source, metadata=metadata, parent_id="", window_text="", parent_locator="")
    return replace(source, metadata=metadata)
