"""The ``FilterExtractor`` role: a query in, a :class:`MetadataFilter` (or nothing) out.

An extractor's output is only ever a ``MetadataFilter``, AND-ed with the caller's own filter,
so it can only narrow; any failure means "no automatic filter" (``safe_extract``), never a
wider candidate set than the caller asked for.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from ragspine.retrieval.filtering.filters import MetadataFilter


@runtime_checkable
class FilterExtractor(Protocol):
    def extract(self, query: str) -> MetadataFilter | None:
        """The filter the query implies, or ``None``; may raise (the caller ignores it)."""
        ...
