"""The dense gate: never let a model that cannot read a language make it worse than BM25.

The packaged MiniLM model is English-only. On Chinese or Japanese text its WordPiece
vocabulary maps most characters to ``[UNK]``, so the vectors carry almost no meaning; fused
with equal weight by RRF they push random chunks up and drag BM25's good ranking down.

Rule (applied per text, for queries and for chunks alike):

* if the backend reports ``unknown_token_share(texts)`` (:class:`ReportsUnknownTokens`), a text whose share of word pieces
  unknown to the model exceeds ``max_unknown_share`` (default 0.30) is unreadable;
* if the backend declares ``languages`` (:class:`DeclaresLanguages`) and none of ``zh``/``ja``/``ko`` is among them, a text
  is unreadable when more than ``max_cjk_share`` (default 0.50) of its letters are CJK
  (BERT vocabularies know a few thousand common Han characters, so the first signal alone
  lets some Chinese through);
* a model declaring no languages and reporting no unknown share (multilingual or unknown)
  reads every text.

An unreadable **query** skips the dense leg: the result is exactly BM25's. An unreadable
**chunk** gets no vector (it stays reachable through BM25), so it can never be pushed into
an English query's results by a meaningless vector.
"""

from __future__ import annotations

from typing import Sequence

from ragspine.retrieval.vector.embedding import DeclaresLanguages, ReportsUnknownTokens

DEFAULT_MAX_UNKNOWN_SHARE = 0.30
DEFAULT_MAX_CJK_SHARE = 0.50
_CJK_LANGUAGES = {"zh", "ja", "ko", "multilingual"}


def cjk_share(text: str) -> float:
    """Share of CJK characters among the letters/digits of ``text``."""
    letters = [ch for ch in text if ch.isalnum()]
    if not letters:
        return 0.0
    return sum(_is_cjk(ch) for ch in letters) / len(letters)


def _is_cjk(ch: str) -> bool:
    code = ord(ch)
    return (
        0x3040 <= code <= 0x30FF
        or 0x3400 <= code <= 0x4DBF
        or 0x4E00 <= code <= 0x9FFF
        or 0xF900 <= code <= 0xFAFF
        or 0xAC00 <= code <= 0xD7AF
        or 0x20000 <= code <= 0x2EBEF
    )


class DenseGate:
    """Decides which texts a backend can meaningfully embed (see the module docstring)."""

    def __init__(
        self,
        backend: object,
        *,
        max_unknown_share: float = DEFAULT_MAX_UNKNOWN_SHARE,
        max_cjk_share: float = DEFAULT_MAX_CJK_SHARE,
    ) -> None:
        for name, value in (("max_unknown_share", max_unknown_share), ("max_cjk_share", max_cjk_share)):
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be within [0, 1], got {value}")
        self.backend = backend
        self.max_unknown_share = max_unknown_share
        self.max_cjk_share = max_cjk_share

    def readable(self, texts: Sequence[str]) -> list[bool]:
        texts = list(texts)
        ok = [True] * len(texts)
        if isinstance(self.backend, ReportsUnknownTokens) and texts:
            ok = [share <= self.max_unknown_share for share in self.backend.unknown_token_share(texts)]
        languages = self.backend.languages if isinstance(self.backend, DeclaresLanguages) else None
        if languages is not None and not _CJK_LANGUAGES & {str(lang).lower() for lang in languages}:
            ok = [good and cjk_share(t) <= self.max_cjk_share for good, t in zip(ok, texts, strict=False)]
        return ok

    def query_readable(self, query: str) -> bool:
        return self.readable([query])[0]
