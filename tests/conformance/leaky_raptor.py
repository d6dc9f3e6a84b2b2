"""Deliberately broken RAPTOR parts: each must fail the check it stands next to in
``test_raptor.py`` (no vacuous pass)."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

from ragspine.retrieval.link.narrative_link import Retrieval
from ragspine.retrieval.raptor import build as build_module


@contextmanager
def restricted_members() -> Iterator[None]:
    """Builds in this block cluster RESTRICTED chunks too (their text reaches summaries)."""
    original = build_module.open_members
    build_module.open_members = lambda chunks: list(chunks)  # type: ignore[assignment]
    try:
        yield
    finally:
        build_module.open_members = original


class NodeTextRetriever:
    """Returns the synthesis text of the nearest node as if it were a snippet."""

    def __init__(self, inner: Any, leg: Any) -> None:
        self.inner = inner
        self.leg = leg

    def search(self, query: str, *, filters: Any = None, top_k: int = 50) -> Retrieval:
        answer: Retrieval = self.inner.search(query, filters=filters, top_k=top_k)
        nodes = self.leg.nodes_for(query)
        if not nodes:
            return answer
        node = nodes[0][0]
        fake = {**answer.snippets[0], "text": node.text, "chunk_id": node.node_id}
        return Retrieval([fake, *answer.snippets], answer.filters_dropped, answer.dense_incomplete)


def tree_of_another_library(tree: Any, library_id: str) -> Any:
    """``tree`` relabelled as ``library_id``'s (what a store ignoring the library would serve)."""
    from dataclasses import replace

    return replace(tree, info=replace(tree.info, library_id=library_id))
