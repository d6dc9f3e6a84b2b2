"""``RAGSPINE_POSTPROCESSOR=lost_in_middle``: the best results at the head and the tail.

Language models read the start and the end of a long context best (Liu et al., 2023, "Lost in
the Middle"). Given the results best first, the first ``top_k`` are kept — and, with a budget
(``RAGSPINE_CONTEXT_CHARS``, characters, so CJK text is measured like any other; 0 = none), only
as many as fit it, the first always — and laid out as ranks 1, 3, 5, … then …, 6, 4, 2: rank 1
first, rank 2 last, the weakest in the middle. A result's size is what the prompt carries for
it: its ``prompt_text`` (a compression), else its parent or window text, else its text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ragspine.retrieval.postprocess.base import open_results
from ragspine.retrieval.types import RetrievalResult

if TYPE_CHECKING:
    from ragspine.config import Settings


def prompt_size(result: RetrievalResult) -> int:
    """Characters the prompt carries for ``result`` (see the module docstring)."""
    if result.prompt_text is not None:
        return len(result.prompt_text)
    return len(result.chunk.window_text or result.chunk.text)


def head_and_tail(items: list[Any]) -> list[Any]:
    """``[1, 2, 3, 4, 5] -> [1, 3, 5, 4, 2]``."""
    return items[0::2] + items[1::2][::-1]


class LostInTheMiddle:
    """See the module docstring."""

    def __init__(self, *, context_chars: int = 0) -> None:
        if context_chars < 0:
            raise ValueError(f"context_chars must be >= 0, got {context_chars}")
        self.context_chars = context_chars

    @classmethod
    def from_settings(cls, settings: Settings) -> LostInTheMiddle:
        """The budget ``RAGSPINE_CONTEXT_CHARS`` (``settings.ranking.context_chars``)."""
        return cls(context_chars=settings.ranking.context_chars)

    def __repr__(self) -> str:
        return f"LostInTheMiddle(context_chars={self.context_chars})"

    def process(self, query: str, results: list[RetrievalResult], *, top_k: int) -> list[RetrievalResult]:
        kept = open_results(results)[:top_k]
        if self.context_chars and kept:
            used, n = prompt_size(kept[0]), 1
            while n < len(kept) and used + prompt_size(kept[n]) <= self.context_chars:
                used += prompt_size(kept[n])
                n += 1
            kept = kept[:n]
        return head_and_tail(kept)
