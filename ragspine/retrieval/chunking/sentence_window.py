"""``SentenceWindowChunker`` (``RAGSPINE_CHUNKER=sentence_window``): one chunk per sentence, a
window of its neighbours for generation.

Contract:

* The chunks are the document's sentences (:func:`~ragspine.retrieval.chunking.units.
  sentence_pieces`: cut after ``。！？；.!?;`` and trailing closing quotes or brackets, inside
  paragraphs; a sentence over ``max_chars`` hard-cut like the default), in order, never
  overlapping (``overlap_chars`` is validated, and unused).
* A chunk's window is the sentence with ``k`` sentences before and ``k`` after (fewer at the
  document's edges, where the window is cut), ``k`` the largest for which the window, one
  contiguous span from the first sentence's start to the last one's end, has at most
  ``window_chars`` characters (default ``max_chars``; characters, not words: CJK has no
  spaces). ``window_text == document[extent]`` and ``parent_locator`` is that extent; the
  window always contains the sentence. ``parent_id`` stays empty: every window differs.
* Linear time: a sentence's ``k`` is within one of its predecessor's.
"""

from __future__ import annotations

from typing import Iterator

from ragspine.retrieval.chunking.assemble import Doc, Piece, SpanChunker
from ragspine.retrieval.chunking.chunking import DEFAULT_CHUNK_CHARS, DEFAULT_OVERLAP_CHARS
from ragspine.retrieval.chunking.units import sentence_pieces


class SentenceWindowChunker(SpanChunker):
    """See the module docstring."""

    name = "sentence_window"

    def __init__(
        self, *, max_chars: int = DEFAULT_CHUNK_CHARS, overlap_chars: int = DEFAULT_OVERLAP_CHARS, window_chars: int | None = None
    ) -> None:
        super().__init__(max_chars=max_chars, overlap_chars=overlap_chars)
        window = max_chars if window_chars is None else window_chars
        if window < max_chars:
            raise ValueError(f"window_chars ({window}) must be >= max_chars ({max_chars}): a window holds its sentence")
        self.window_chars = window

    def __repr__(self) -> str:
        return f"{super().__repr__()[:-1]}, window_chars={self.window_chars})"

    @property
    def parent_chars(self) -> int:
        """The bound of a window (``window_chars``): what every chunker that sets parents declares."""
        return self.window_chars

    def pieces(self, doc: Doc) -> Iterator[Piece]:
        sentences = sentence_pieces(doc.text, self.max_chars)
        for (start, end), (w_start, w_end) in zip(sentences, windows(sentences, self.window_chars), strict=True):
            yield start, end, doc.extent(w_start, w_end)


def windows(spans: list[tuple[int, int]], window_chars: int) -> list[tuple[int, int]]:
    """For each span, the extent of the largest symmetric window of its neighbours that fits
    ``window_chars`` (see the module docstring); a span alone always fits."""
    n = len(spans)
    out: list[tuple[int, int]] = []
    k = 0

    def extent(i: int, k: int) -> tuple[int, int]:
        return spans[max(i - k, 0)][0], spans[min(i + k, n - 1)][1]

    for i in range(n):
        reach = max(i, n - 1 - i)  # beyond it, a larger k adds nothing
        # window(i, k - 1) lies inside window(i - 1, k), which fitted: start there.
        k = min(max(k - 1, 0), reach)
        while k < reach:
            start, end = extent(i, k + 1)
            if end - start > window_chars:
                break
            k += 1
        out.append(extent(i, k))
    return out
