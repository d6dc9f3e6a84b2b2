"""The ``QueryRewriter`` role: one query in, the probes a search runs out.

``rewrite(query) -> list[str]``: the original query first, then variants, de-duplicated.
Variants are retrieval probes only: they are never returned, stored or cited. The default is
the seed's deterministic glossary expansion
(:class:`~ragspine.retrieval.lexical.rewrite.GlossaryQueryRewriter`).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class QueryRewriter(Protocol):
    """Turns one query into several probes; the original query is always first."""

    def rewrite(self, query: str) -> list[str]:
        """``[query, variant, ...]``: the original first, no duplicates."""
        ...
