"""``CooccurrenceRelationExtractor``: ``co_occurs_with`` between glossary entities one chunk names.

Deterministic and exact: two entities co-occur when the chunk's text names both
(:class:`~ragspine.graph.mentions.EntityMatcher`). The edge says only that — the chunk names
both — and cites the chunk, which anyone can re-read to check it. RESTRICTED chunks are skipped.
"""

from __future__ import annotations

from itertools import combinations
from typing import Iterable

from ragspine.graph.base import CO_OCCURS_WITH, Edge, node_id
from ragspine.graph.extractors.base import ChunkLike, open_chunks
from ragspine.graph.mentions import EntityMatcher
from ragspine.structured.glossary import Glossary

__all__ = ["CooccurrenceRelationExtractor"]


class CooccurrenceRelationExtractor:
    """See the module docstring."""

    def __init__(self, glossary: Glossary) -> None:
        self.matcher = EntityMatcher(glossary)

    def __repr__(self) -> str:
        return "CooccurrenceRelationExtractor()"

    def extract(self, chunks: Iterable[ChunkLike]) -> list[Edge]:
        edges: list[Edge] = []
        for chunk in open_chunks(chunks):
            for a, b in combinations(self.matcher.keys_in(chunk.text), 2):
                edges.append(Edge(
                    node_id("entity", a), CO_OCCURS_WITH, node_id("entity", b), chunk.doc_id, chunk.source_locator or chunk.chunk_id,
                    derivation="cooccurrence", chunk_id=chunk.chunk_id,
                ))
        return edges
