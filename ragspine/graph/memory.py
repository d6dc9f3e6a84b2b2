"""``InProcessGraphStore``: the zero-dependency default graph store (``RAGSPINE_GRAPH_STORE=memory``).

Dictionaries in the process: nodes by id, edges in insertion order with an index by endpoint.
Everything the ``networkx`` adapter can do, for graphs the size of a glossary and its facts.
"""

from __future__ import annotations

import threading
from typing import Iterable

from ragspine.graph.base import Edge, Node, check_edges, check_nodes, edge_matches

__all__ = ["InProcessGraphStore"]


class InProcessGraphStore:
    """See the module docstring and :class:`~ragspine.graph.base.GraphStore`."""

    def __init__(self) -> None:
        self._nodes: dict[str, Node] = {}
        self._edges: dict[Edge, None] = {}
        self._by_node: dict[str, list[Edge]] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"InProcessGraphStore(nodes={len(self._nodes)}, edges={len(self._edges)})"

    def add_nodes(self, nodes: Iterable[Node]) -> int:
        with self._lock:
            new = check_nodes(nodes, self._nodes.get)
            for node in new:
                self._nodes[node.id] = node
            return len(new)

    def add_edges(self, edges: Iterable[Edge]) -> int:
        with self._lock:
            new = [e for e in check_edges(edges, self._nodes.__contains__) if e not in self._edges]
            for edge in new:
                self._edges[edge] = None
                for end in dict.fromkeys((edge.source, edge.target)):
                    self._by_node.setdefault(end, []).append(edge)
            return len(new)

    def node(self, node_id: str) -> Node | None:
        return self._nodes.get(node_id)

    def nodes(self, *, kind: str | None = None) -> list[Node]:
        with self._lock:
            return sorted((n for n in self._nodes.values() if kind is None or n.kind == kind), key=lambda n: n.id)

    def edges(
        self, *, source: str | None = None, relation: str | None = None, target: str | None = None,
        citable: bool | None = None,
    ) -> list[Edge]:
        with self._lock:
            anchor = source if source is not None else target
            pool = self._by_node.get(anchor, []) if anchor is not None else list(self._edges)
            found = [e for e in pool if edge_matches(e, source, relation, target, citable)]
        return sorted(found, key=Edge.sort_key)

    def close(self) -> None:
        pass
