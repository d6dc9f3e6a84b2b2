"""Unit spans the chunkers share: trimmed lines, sentences with the default's hard cut, and
bounded blocks of units (the parents of the parent-child chunkers).

Each gives trimmed, non-empty, disjoint ``(start, end)`` spans of the text, in order, in
linear time.
"""

from __future__ import annotations

import re
from typing import Iterable, Iterator

from ragspine.retrieval.chunking.chunking import hard_cut, paragraph_spans, sentence_spans

_LINE = re.compile(r"^[^\S\n]*(\S(?:[^\n]*\S)?)", re.MULTILINE)


def line_spans(text: str) -> Iterator[tuple[int, int]]:
    """Every non-blank line, without its surrounding whitespace (``\\r`` included)."""
    for match in _LINE.finditer(text):
        yield match.span(1)


def sentence_pieces(text: str, max_chars: int) -> list[tuple[int, int]]:
    """The sentences of every paragraph (``sentence_spans``: cut after ``。！？；.!?;`` and the
    closing quotes or brackets that follow), in order; a sentence longer than ``max_chars``
    is hard-cut into pieces of at most ``max_chars``, as the default chunker cuts it."""
    pieces: list[tuple[int, int]] = []
    for p_start, p_end in paragraph_spans(text):
        for start, end in sentence_spans(text, p_start, p_end):
            if end - start > max_chars:
                pieces.extend(hard_cut(text, start, end, max_chars))
            else:
                pieces.append((start, end))
    return pieces


def bounded_spans(text: str, units: Iterable[tuple[int, int]], limit: int) -> list[tuple[int, int]]:
    """``units`` (trimmed, ordered, disjoint spans) packed into blocks of at most ``limit``
    characters, without overlap: consecutive units while the block fits; a unit over ``limit``
    is a run of blocks of its own, cut at the coarsest boundary that makes its pieces fit —
    sentence terminators, then line breaks, then whitespace, and only inside a word longer than
    ``limit`` anywhere — its pieces packed the same way. Every non-whitespace character of the
    units is in one block."""
    blocks: list[tuple[int, int]] = []
    current: tuple[int, int] | None = None
    for start, end in units:
        if end - start > limit:
            if current is not None:
                blocks.append(current)
                current = None
            blocks.extend(_pack(_pieces(text, start, end, limit), limit))
        elif current is not None and end - current[0] <= limit:
            current = (current[0], end)
        else:
            if current is not None:
                blocks.append(current)
            current = (start, end)
    if current is not None:
        blocks.append(current)
    return blocks


def _pack(pieces: Iterable[tuple[int, int]], limit: int) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for start, end in pieces:
        if out and end - out[-1][0] <= limit:
            out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    return out


def _pieces(text: str, start: int, end: int, limit: int) -> Iterator[tuple[int, int]]:
    """``text[start:end]`` in pieces of at most ``limit``: its sentences; a sentence over it in
    lines; a line over it cut at whitespace (:func:`_word_cut`)."""
    for s_start, s_end in sentence_spans(text, start, end):
        if s_end - s_start <= limit:
            yield s_start, s_end
            continue
        for l_start, l_end in _lines(text, s_start, s_end):
            if l_end - l_start <= limit:
                yield l_start, l_end
            else:
                yield from _word_cut(text, l_start, l_end, limit)


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _lines(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    pos = start
    while pos < end:
        newline = text.find("\n", pos, end)
        stop = end if newline < 0 else newline
        span = _trim(text, pos, stop)
        if span[1] > span[0]:
            yield span
        pos = stop + 1


def _word_cut(text: str, start: int, end: int, limit: int) -> Iterator[tuple[int, int]]:
    """Pieces of at most ``limit`` ending at whitespace; a word longer than ``limit`` is cut
    every ``limit`` characters. Linear: a region scanned without whitespace is hard-cut next."""
    pos = start
    while pos < end:
        if end - pos <= limit:
            yield pos, end
            return
        cut = pos + limit
        while cut > pos and not text[cut].isspace():
            cut -= 1
        if cut == pos:  # no whitespace within reach: a word longer than the limit
            cut = pos + limit
        piece = _trim(text, pos, cut)
        if piece[1] > piece[0]:
            yield piece
        pos = _trim(text, cut, end)[0]
