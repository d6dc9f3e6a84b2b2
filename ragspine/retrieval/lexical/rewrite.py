"""Deterministic multi-query expansion from a controlled glossary (no LLM): the default
:class:`~ragspine.retrieval.query.base.QueryRewriter`."""

from __future__ import annotations

import re
from typing import Callable, Mapping, Sequence

from ragspine.errors import ConfigError
from ragspine.retrieval.query.base import QueryRewriter

__all__ = ["DEFAULT_GLOSSARY", "DEFAULT_MAX_QUERIES", "GlossaryQueryRewriter", "QueryRewriter", "load_glossary"]

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
        # per group: its variants, and each form's pattern longest first ("売上高" must not be
        # rewritten as "売上" + "高"); a form whose text does not occur (lowercased) cannot match
        self._groups: list[tuple[tuple[str, ...], list[tuple[str, str, re.Pattern[str]]]]] = []
        for canonical, forms in groups.items():
            variants = tuple(dict.fromkeys([canonical, *forms]))
            ordered = sorted(variants, key=len, reverse=True)
            self._groups.append((variants, [(form, form.lower(), _pattern(form)) for form in ordered]))

    @classmethod
    def from_file(cls, path: str, max_queries: int = DEFAULT_MAX_QUERIES) -> GlossaryQueryRewriter:
        """A rewriter over the glossary file at ``path`` (``RAGSPINE_GLOSSARY``)."""
        return cls(load_glossary(path), max_queries=max_queries)

    def rewrite(self, query: str) -> list[str]:
        out = [query]
        low = query.lower()
        for variants, patterns in self._groups:
            for form, form_low, pattern in patterns:
                if form_low not in low or not pattern.search(query):
                    continue
                for other in variants:
                    if other != form:
                        out.append(pattern.sub(_literal(other), query))
                break  # one matched form per group
        return list(dict.fromkeys(out))[: self.max_queries]


def _literal(text: str) -> Callable[[re.Match[str]], str]:
    """A replacement that inserts ``text`` as is (no backslash or group expansion)."""
    return lambda _match: text


def _pattern(form: str) -> re.Pattern[str]:
    escaped = re.escape(form)
    if form.isascii():
        return re.compile(rf"(?<![0-9A-Za-z]){escaped}(?![0-9A-Za-z])", re.IGNORECASE)
    return re.compile(escaped)


def load_glossary(path: str) -> dict[str, list[str]]:
    """A glossary file: YAML or JSON mapping ``canonical -> [synonyms]``."""
    import yaml

    try:
        with open(path, encoding="utf-8") as fh:
            data = yaml.safe_load(fh)
    except OSError as exc:
        raise ConfigError(f"cannot read RAGSPINE_GLOSSARY {path!r}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"RAGSPINE_GLOSSARY {path!r} is not valid YAML or JSON: {str(exc).splitlines()[0]}") from None
    if not isinstance(data, dict) or not all(isinstance(v, list) for v in data.values()):
        raise ConfigError(f"RAGSPINE_GLOSSARY {path!r} must map each term to a list of synonyms")
    return {str(k): [str(x) for x in v] for k, v in data.items()}
