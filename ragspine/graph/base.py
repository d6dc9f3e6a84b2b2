"""The ``GraphStore`` role: a typed relation graph over the controlled dimensions — and its
value types, :class:`Node` and :class:`Edge`.

**Nodes** are the glossary's keys, typed by dimension: ``entity:KESTREL_CN``, ``metric:revenue``,
``channel:direct``, ``period:2024Q3`` (:func:`node_id`). **Edges** are typed relations, each
with its **lineage** — where it was read:

    relation          between               derivation      lineage (source_doc_id / source_locator)
    subsidiary_of     entity → its parent   glossary        the glossary file / ``entities.KEY.parent``
    derived_from      metric → an input     glossary        the glossary file / ``metrics.KEY.derived_from``
    reports           entity → metric       fact            the fact's source document and locator
    co_occurs_with    entity — entity       cooccurrence    the chunk's doc_id and locator (and chunk_id)
    a MODEL_RELATION  entity → entity       model           the chunk the model read (never evidence)

An edge of ``derivation="model"`` is **model-derived and unverified** (``verified=False``): it
is shown, never cited — :attr:`Edge.citable` is false, and the graph utilities
(:mod:`ragspine.graph.queries`) read only citable structural edges. A symmetric relation
(``co_occurs_with``) is stored once, its endpoints in code-point order.

**The store contract** (every backend passes ``ragspine.testing.GraphStoreConformance``):

* :meth:`GraphStore.add_nodes` adds nodes; a node id already present with the same kind and key
  is kept as it is (its first label wins), with another kind or key it is a :class:`GraphError`.
* :meth:`GraphStore.add_edges` adds a batch **all or nothing**: every edge is checked first (both
  endpoints exist, the fields are strings, a model edge is unverified); an edge equal to a stored
  one (every field) is not added twice. Returns the edges added.
* reads return new lists, ordered: nodes by id, edges by :meth:`Edge.sort_key` — so two backends
  holding the same graph answer byte for byte the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Protocol, runtime_checkable

from ragspine.errors import RagspineError

__all__ = [
    "CO_OCCURS_WITH",
    "DERIVATIONS",
    "DERIVED_FROM",
    "MODEL_RELATIONS",
    "NODE_KINDS",
    "REPORTS",
    "RELATIONS",
    "SUBSIDIARY_OF",
    "Edge",
    "GraphError",
    "GraphStore",
    "Node",
    "check_edges",
    "check_nodes",
    "edge_matches",
    "node_id",
]

NODE_KINDS = ("entity", "metric", "channel", "period")

SUBSIDIARY_OF = "subsidiary_of"
DERIVED_FROM = "derived_from"
REPORTS = "reports"
CO_OCCURS_WITH = "co_occurs_with"
#: What the LLM extractor may propose between two entities: never a structural relation, so a
#: model can never change a roll-up or a derivation.
MODEL_RELATIONS = ("supplies", "customer_of", "partner_of", "competes_with", "related_to")
RELATIONS = (SUBSIDIARY_OF, DERIVED_FROM, REPORTS, CO_OCCURS_WITH, *MODEL_RELATIONS)
SYMMETRIC = frozenset({CO_OCCURS_WITH})
#: glossary / fact / cooccurrence are deterministic readings of a stored source; model is not.
DERIVATIONS = ("glossary", "fact", "cooccurrence", "model")


class GraphError(RagspineError, ValueError):
    """A node or edge the graph refuses (unknown endpoint, conflicting node, bad field)."""


def node_id(kind: str, key: str) -> str:
    """``kind:key`` — the id of the node of glossary key ``key`` in dimension ``kind``."""
    if kind not in NODE_KINDS:
        raise GraphError(f"unknown node kind {kind!r}; the kinds are {', '.join(NODE_KINDS)}")
    return f"{kind}:{key}"


@dataclass(frozen=True)
class Node:
    """One key of a controlled dimension; ``label`` is for display only."""

    id: str
    kind: str
    key: str
    label: str = ""

    @classmethod
    def of(cls, kind: str, key: str, label: str = "") -> Node:
        return cls(node_id(kind, key), kind, key, label or key)


@dataclass(frozen=True)
class Edge:
    """A typed, cited relation ``source —relation→ target`` (node ids); see the module docstring."""

    source: str
    relation: str
    target: str
    source_doc_id: str
    source_locator: str
    derivation: str = "glossary"
    chunk_id: str = ""
    verified: bool = True

    def __post_init__(self) -> None:
        if self.relation in SYMMETRIC and self.target < self.source:
            source, target = self.target, self.source
            object.__setattr__(self, "source", source)
            object.__setattr__(self, "target", target)

    @property
    def citable(self) -> bool:
        """Whether the edge may be cited: verified, and not model-derived."""
        return self.verified and self.derivation != "model"

    def sort_key(self) -> tuple[str, str, str, str, str, str, str, bool]:
        return (self.source, self.relation, self.target, self.derivation, self.source_doc_id, self.source_locator,
                self.chunk_id, self.verified)

    def check(self) -> None:
        """``GraphError`` unless the fields are well-formed (stores call it before any write)."""
        for name in ("source", "relation", "target", "source_doc_id", "source_locator", "derivation", "chunk_id"):
            if not isinstance(getattr(self, name), str):
                raise GraphError(f"an edge's {name} must be a string, got {getattr(self, name)!r}")
        if not isinstance(self.verified, bool):
            raise GraphError(f"an edge's verified must be a bool, got {self.verified!r}")
        if self.relation not in RELATIONS:
            raise GraphError(f"unknown relation {self.relation!r}; the relations are {', '.join(RELATIONS)}")
        if self.derivation not in DERIVATIONS:
            raise GraphError(f"unknown derivation {self.derivation!r}; the derivations are {', '.join(DERIVATIONS)}")
        if self.derivation == "model" and self.verified:
            raise GraphError("a model-derived edge is unverified: verified must be False")
        if not self.source_doc_id.strip() or not self.source_locator.strip():
            raise GraphError(f"every edge is cited: {self.source} {self.relation} {self.target} has no source_doc_id/locator")
        if self.source == self.target:
            raise GraphError(f"an edge joins two nodes, got {self.source} {self.relation} itself")

    def to_dict(self) -> dict[str, object]:
        return {
            "source": self.source, "relation": self.relation, "target": self.target, "source_doc_id": self.source_doc_id,
            "source_locator": self.source_locator, "chunk_id": self.chunk_id, "derivation": self.derivation,
            "verified": self.verified, "citable": self.citable,
        }


def edge_matches(
    edge: Edge, source: str | None = None, relation: str | None = None, target: str | None = None, citable: bool | None = None,
) -> bool:
    """The filter of :meth:`GraphStore.edges` (one definition for every backend)."""
    if relation is not None and edge.relation != relation:
        return False
    if citable is not None and edge.citable != citable:
        return False
    ends = [(edge.source, edge.target)] + ([(edge.target, edge.source)] if edge.relation in SYMMETRIC else [])
    return any((source is None or s == source) and (target is None or t == target) for s, t in ends)


def check_nodes(nodes: Iterable[Node], held: Callable[[str], Node | None]) -> list[Node]:
    """The new nodes of ``nodes`` (``held(id)`` gives a stored one), checked: ``GraphError``
    for a malformed node or one conflicting with a stored or earlier node of the batch."""
    new: dict[str, Node] = {}
    for node in nodes:
        if not isinstance(node, Node) or not all(isinstance(v, str) for v in (node.id, node.kind, node.key, node.label)):
            raise GraphError(f"not a Node: {node!r}")
        if node.kind not in NODE_KINDS or node.id != f"{node.kind}:{node.key}" or not node.key:
            raise GraphError(f"a node's id is kind:key with a kind of {', '.join(NODE_KINDS)}, got {node.id!r}")
        other = held(node.id) or new.get(node.id)
        if other is not None and (other.kind, other.key) != (node.kind, node.key):
            raise GraphError(f"node {node.id!r} is held already as a {other.kind}")
        if other is None:
            new[node.id] = node
    return list(new.values())


def check_edges(edges: Iterable[Edge], has_node: Callable[[str], bool]) -> list[Edge]:
    """``edges`` checked (:meth:`Edge.check`, both endpoints nodes), duplicates of the batch dropped."""
    out: dict[Edge, None] = {}
    for edge in edges:
        if not isinstance(edge, Edge):
            raise GraphError(f"not an Edge: {edge!r}")
        edge.check()
        for end in (edge.source, edge.target):
            if not has_node(end):
                raise GraphError(f"edge {edge.source} {edge.relation} {edge.target}: {end!r} is not a node of the graph")
        out[edge] = None
    return list(out)


@runtime_checkable
class GraphStore(Protocol):
    """A typed relation graph (see the module docstring for the contract)."""

    def add_nodes(self, nodes: Iterable[Node]) -> int:
        """Add ``nodes`` (all or nothing); returns how many were new. ``GraphError`` for a node
        id already held with another kind or key."""
        ...

    def add_edges(self, edges: Iterable[Edge]) -> int:
        """Add ``edges`` (all or nothing, each checked first); returns how many were new.
        ``GraphError`` for an edge whose endpoint is not a node, or a malformed edge."""
        ...

    def node(self, node_id: str) -> Node | None: ...

    def nodes(self, *, kind: str | None = None) -> list[Node]:
        """The nodes (of ``kind``), ordered by id."""
        ...

    def edges(
        self, *, source: str | None = None, relation: str | None = None, target: str | None = None,
        citable: bool | None = None,
    ) -> list[Edge]:
        """The edges matching every given field, ordered by :meth:`Edge.sort_key`. A symmetric
        relation matches ``source``/``target`` in either orientation."""
        ...

    def close(self) -> None: ...
