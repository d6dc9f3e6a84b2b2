"""``RAGSPINE_POSTPROCESSOR=compression``: extractive compression of what the prompt carries.

For each result, the source is its parent or window text when it has one, else its own text.
When the source is longer than ``RAGSPINE_COMPRESSION_CHARS`` (default 480), its sentences
(the chunker's: cut after ``。！？；.!?;``) are scored by how many distinct query tokens they
contain (:func:`~ragspine.retrieval.lexical.tokenizer.tokenize`: words, CJK unigrams and
bigrams) and taken best first — ties to the earlier sentence — while they fit the budget (the
best one always); the kept sentences, in document order and verbatim, joined by newlines,
become the result's ``prompt_text``. Nothing is written when no sentence shares a token with
the query or the source already fits. ``text``, the locators, ids and scores never change, and
the link exit withholds a compression of a parent that overlaps RESTRICTED text exactly as it
withholds the parent.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ragspine.retrieval.chunking.chunking import paragraph_spans, sentence_spans
from ragspine.retrieval.lexical.tokenizer import tokenize
from ragspine.retrieval.postprocess.base import open_results
from ragspine.retrieval.types import RetrievalResult

if TYPE_CHECKING:
    from ragspine.config import Settings

DEFAULT_COMPRESSION_CHARS = 480


def compress(source: str, query_tokens: set[str], max_chars: int) -> str | None:
    """The extract of ``source`` (see the module docstring), or ``None``."""
    if len(source) <= max_chars or not query_tokens:
        return None
    spans = [s for p in paragraph_spans(source) for s in sentence_spans(source, *p)]
    scored = [(len(query_tokens.intersection(tokenize(source[a:b]))), i) for i, (a, b) in enumerate(spans)]
    ranked = sorted((x for x in scored if x[0] > 0), key=lambda x: (-x[0], x[1]))
    if not ranked:
        return None
    kept: list[int] = []
    used = 0
    for _, i in ranked:
        size = spans[i][1] - spans[i][0] + (1 if kept else 0)
        if kept and used + size > max_chars:
            continue
        kept.append(i)
        used += size
    return "\n".join(source[spans[i][0]:spans[i][1]] for i in sorted(kept))


class ExtractiveCompressor:
    """See the module docstring."""

    def __init__(self, *, compression_chars: int = DEFAULT_COMPRESSION_CHARS) -> None:
        if compression_chars < 1:
            raise ValueError(f"compression_chars must be >= 1, got {compression_chars}")
        self.compression_chars = compression_chars

    @classmethod
    def from_settings(cls, settings: Settings) -> ExtractiveCompressor:
        """The budget ``RAGSPINE_COMPRESSION_CHARS`` (``settings.ranking.compression_chars``)."""
        return cls(compression_chars=settings.ranking.compression_chars)

    def __repr__(self) -> str:
        return f"ExtractiveCompressor(compression_chars={self.compression_chars})"

    def process(self, query: str, results: list[RetrievalResult], *, top_k: int) -> list[RetrievalResult]:
        tokens = set(tokenize(query))
        out = []
        for result in open_results(results)[:top_k]:
            chunk = result.chunk
            source = result.prompt_text if result.prompt_text is not None else (chunk.window_text or chunk.text)
            extract = compress(source, tokens, self.compression_chars)
            out.append(result if extract is None else replace(result, prompt_text=extract))
        return out
