"""Deterministic multi-query expansion from a controlled glossary (no LLM)."""

from __future__ import annotations

import re
from typing import Mapping, Protocol, Sequence

DEFAULT_MAX_QUERIES = 5

#: A small built-in glossary of metric and entity synonyms (English, Chinese, Japanese).
#: Each group lists interchangeable surface forms; the first is the canonical name.
DEFAULT_GLOSSARY: dict[str, tuple[str, ...]] = {
    "revenue": ("revenue", "sales", "turnover", "营收", "营业收入", "销售额", "売上", "売上高"),
    "net profit": ("net profit", "net income", "净利润", "純利益"),
    "gross margin": ("gross margin", "毛利率", "粗利率"),
    "operating profit": ("operating profit", "operating income", "营业利润", "営業利益"),
    "headcount": ("headcount", "employees", "员工人数", "従業員数"),
}


class QueryRewriter(Protocol):
    """Turns one query into several probes; the original query is always first."""

    def rewrite(self, query: str) -> list[str]: ...


class GlossaryQueryRewriter:
    """Expand a query by swapping glossary synonyms: ``"营收下滑"`` → ``"revenue下滑"``, ...

    The original query is first; variants follow in glossary order, de-duplicated, at most
    ``max_queries`` in all. ASCII forms match whole words, case-insensitively; CJK forms
    match as substrings.
    """

    def __init__(
        self,
        glossary: Mapping[str, Sequence[str]] | None = None,
        max_queries: int = DEFAULT_MAX_QUERIES,
    ) -> None:
        if max_queries < 1:
            raise ValueError(f"max_queries must be >= 1, got {max_queries}")
        self.max_queries = max_queries
        groups = DEFAULT_GLOSSARY if glossary is None else glossary
        self._groups: list[tuple[str, ...]] = []
        for canonical, forms in groups.items():
            variants = tuple(dict.fromkeys([canonical, *forms]))
            self._groups.append(variants)

    def rewrite(self, query: str) -> list[str]:
        out = [query]
        for variants in self._groups:
            # longest form first: "売上高" must not be rewritten as "売上" + "高"
            for form in sorted(variants, key=len, reverse=True):
                pattern = _pattern(form)
                if not pattern.search(query):
                    continue
                for other in variants:
                    if other != form:
                        out.append(pattern.sub(lambda _m, o=other: o, query))
                break  # one matched form per group
        return list(dict.fromkeys(out))[: self.max_queries]


def _pattern(form: str) -> re.Pattern[str]:
    escaped = re.escape(form)
    if form.isascii():
        return re.compile(rf"(?<![0-9A-Za-z]){escaped}(?![0-9A-Za-z])", re.IGNORECASE)
    return re.compile(escaped)
