"""Unit spans the chunkers share: trimmed lines, and sentences with the default's hard cut.

Both give trimmed, non-empty, disjoint ``(start, end)`` spans of the text, in order, in
linear time.
"""

from __future__ import annotations

import re
from typing import Iterator

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
