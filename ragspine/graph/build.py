"""Building the relation graph: the glossary's structure, the facts' provenance, and (opt-in)
relations an extractor reads from chunks.

``build_relation_graph(glossary, facts=..., store=..., extractor=..., chunks=...)``:

* a node per key of the glossary's entities, metrics, channels and period aliases (and per
  entity or metric a fact names that the glossary lacks);
* ``subsidiary_of`` (an entity's ``parent``) and ``derived_from`` (a metric's inputs), cited by
  the glossary file and the field's path (``entities.KESTREL_CN.parent``);
* ``reports`` (entity → metric) per non-RESTRICTED fact, cited by the fact's source document
  and locator — a RESTRICTED fact adds nothing;
* with an ``extractor`` (``RAGSPINE_RELATION_EXTRACTOR``), its edges from ``chunks``. Without
  one — the default — nothing else is read, so the graph (:func:`dump_graph`) is byte for byte
  the same as a graph built without the extractor slot at all.

Deterministic: the same inputs give the same graph, in any graph store.
"""

from __future__ import annotations

import json
from typing import Any, Iterable

from ragspine.graph.base import DERIVED_FROM, REPORTS, SUBSIDIARY_OF, Edge, GraphStore, Node, node_id
from ragspine.graph.extractors.base import ChunkLike, RelationExtractor
from ragspine.retrieval.sensitivity import is_restricted
from ragspine.structured.base import Fact
from ragspine.structured.glossary import Glossary

__all__ = ["DEFAULT_GLOSSARY_SOURCE", "build_relation_graph", "dump_graph", "glossary_source", "graph_to_dict", "make_graph_store"]

#: What edges read from the shipped glossary cite.
DEFAULT_GLOSSARY_SOURCE = "ragspine/structured/data/glossary.yaml"
_SECTIONS = {"entities": "entity", "metrics": "metric", "channels": "channel", "periods": "period"}


def make_graph_store(spec: str = "memory") -> GraphStore:
    """The graph store named ``spec`` (the caller's ``RAGSPINE_GRAPH_STORE``; default ``memory``,
    the seed's): ``memory`` (in-process,
    no dependency) or ``networkx`` (the ``[graph]`` extra: a missing networkx is a
    ``MissingDependencyError`` naming it)."""
    from ragspine.registries import GRAPH_STORES

    store: GraphStore = GRAPH_STORES.build(spec)
    return store


def glossary_source(glossary: Glossary) -> str:
    """What an edge read from ``glossary`` cites: its file (the shipped glossary's package path)."""
    return DEFAULT_GLOSSARY_SOURCE if glossary.where == "the default glossary" else glossary.where


def build_relation_graph(
    glossary: Glossary,
    *,
    facts: Iterable[Fact] = (),
    store: GraphStore | None = None,
    extractor: RelationExtractor | None = None,
    chunks: Iterable[ChunkLike] = (),
) -> GraphStore:
    """The graph of the module docstring, in ``store`` (default: a new in-process one)."""
    if store is None:
        from ragspine.graph.memory import InProcessGraphStore

        store = InProcessGraphStore()
    source = glossary_source(glossary)
    nodes = [Node.of(kind, key, glossary.label(section, key, "en")) for section, kind in _SECTIONS.items() for key in glossary.keys(section)]
    edges: list[Edge] = []
    for key in glossary.keys("entities"):
        parent = glossary.terms["entities"][key].parent
        if parent:
            edges.append(Edge(node_id("entity", key), SUBSIDIARY_OF, node_id("entity", parent), source, f"entities.{key}.parent"))
    for key in glossary.keys("metrics"):
        for metric in glossary.terms["metrics"][key].inputs:
            edges.append(Edge(node_id("metric", key), DERIVED_FROM, node_id("metric", metric), source, f"metrics.{key}.derived_from"))
    known = {n.id for n in nodes}
    for fact in facts:
        if is_restricted(fact.sensitivity):
            continue
        ends = [("entity", fact.entity), ("metric", fact.metric)]
        nodes += [Node.of(kind, key) for kind, key in ends if node_id(kind, key) not in known]
        known |= {node_id(kind, key) for kind, key in ends}
        edges.append(Edge(node_id("entity", fact.entity), REPORTS, node_id("metric", fact.metric), fact.source_doc_id,
                          fact.source_locator, derivation="fact"))
    store.add_nodes(nodes)
    store.add_edges(edges)
    if extractor is not None:
        store.add_edges(extractor.extract(chunks))
    return store


def graph_to_dict(store: GraphStore) -> dict[str, Any]:
    """``{"nodes": [...], "edges": [...]}``, ordered (nodes by id, edges by their sort key)."""
    return {
        "nodes": [{"id": n.id, "kind": n.kind, "key": n.key, "label": n.label} for n in store.nodes()],
        "edges": [e.to_dict() for e in store.edges()],
    }


def dump_graph(store: GraphStore, indent: int | None = None) -> str:
    """The graph as JSON text: equal graphs give equal bytes."""
    return json.dumps(graph_to_dict(store), ensure_ascii=False, sort_keys=True, indent=indent)
