"""The ``LibraryRouter`` role: which libraries a query should search.

``route(query, libraries) -> [library_id, ...]`` chooses among the libraries it is shown,
best first. A router can only narrow: an empty, failed or malformed answer means "search
them all" (``MultiIndexRetriever`` falls back), so routing never costs recall.
"""

from __future__ import annotations

from typing import Protocol, Sequence, runtime_checkable

from ragspine.retrieval.chunking.chunk_store import LibraryInfo


@runtime_checkable
class LibraryRouter(Protocol):
    def route(self, query: str, libraries: Sequence[LibraryInfo]) -> list[str]:
        """Ids of the libraries to search, best first, among ``libraries`` (``[]``: all)."""
        ...
