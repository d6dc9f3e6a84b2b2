"""``NetworkXGraphStore``: the graph store on a ``networkx.MultiDiGraph`` (``RAGSPINE_GRAPH_STORE=networkx``,
the ``[graph]`` extra).

Nodes carry their :class:`~ragspine.graph.base.Node` as the attribute ``node``; each edge is
keyed by the :class:`~ragspine.graph.base.Edge` itself, so equal edges are stored once and
edges of one pair with different lineage sit side by side. ``graph`` is the live networkx
object, for networkx's algorithms (read it, do not write it: writes go through the store, which
checks them). Answers are ordered like the in-process store's, so both pass one conformance suite.
"""

from __future__ import annotations

import threading
from typing import Any, Iterable

from ragspine.errors import MissingDependencyError
from ragspine.graph.base import Edge, Node, check_edges, check_nodes, edge_matches

__all__ = ["NetworkXGraphStore"]


class NetworkXGraphStore:
    """See the module docstring and :class:`~ragspine.graph.base.GraphStore`."""

    def __init__(self) -> None:
        try:
            import networkx
        except ImportError:
            raise MissingDependencyError("networkx", "graph", "the networkx graph store") from None
        self.graph: Any = networkx.MultiDiGraph()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"NetworkXGraphStore(nodes={self.graph.number_of_nodes()}, edges={self.graph.number_of_edges()})"

    def add_nodes(self, nodes: Iterable[Node]) -> int:
        with self._lock:
            new = check_nodes(nodes, self.node)
            self.graph.add_nodes_from((node.id, {"node": node}) for node in new)
            return len(new)

    def add_edges(self, edges: Iterable[Edge]) -> int:
        with self._lock:
            checked = check_edges(edges, self.graph.has_node)
            new = [e for e in checked if not self.graph.has_edge(e.source, e.target, key=e)]
            self.graph.add_edges_from((e.source, e.target, e, {"edge": e}) for e in new)
            return len(new)

    def node(self, node_id: str) -> Node | None:
        data = self.graph.nodes.get(node_id)
        node: Node | None = None if data is None else data["node"]
        return node

    def nodes(self, *, kind: str | None = None) -> list[Node]:
        with self._lock:
            found = [data["node"] for _, data in self.graph.nodes(data=True)]
        return sorted((n for n in found if kind is None or n.kind == kind), key=lambda n: n.id)

    def edges(
        self, *, source: str | None = None, relation: str | None = None, target: str | None = None,
        citable: bool | None = None,
    ) -> list[Edge]:
        with self._lock:
            anchor = source if source is not None else target
            if anchor is None:
                pool = [key for _, _, key in self.graph.edges(keys=True)]
            elif not self.graph.has_node(anchor):
                pool = []
            else:  # every edge at the anchor, out and in (a symmetric relation matches both ways)
                pool = [key for _, _, key in self.graph.out_edges(anchor, keys=True)]
                pool += [key for _, _, key in self.graph.in_edges(anchor, keys=True)]
            found = {e: None for e in pool if edge_matches(e, source, relation, target, citable)}
        return sorted(found, key=Edge.sort_key)

    def close(self) -> None:
        pass
