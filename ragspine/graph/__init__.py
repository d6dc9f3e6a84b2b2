"""The graph utilities: a deterministic, cited relation graph over the controlled dimensions.

A support surface next to the agent's structured and narrative channels — never a hidden third
branch of its router. ``build_relation_graph(glossary, facts=...)`` turns the glossary's
structure (subsidiaries, derived metrics) and the facts' provenance into typed, cited edges in
a :class:`GraphStore` (``RAGSPINE_GRAPH_STORE``: ``memory`` or ``networkx``); the utilities
:func:`roll_up`, :func:`compare_peers` and :func:`trace_derivation` answer from it and from the
structured channel, never estimating a number. Relations read from chunks are opt-in
(``RAGSPINE_RELATION_EXTRACTOR``: ``none`` | ``cooccurrence`` | ``llm``); a model's edges are
model-derived, unverified and never cited.

    layout: base.py (GraphStore Protocol, Node, Edge) · memory.py (InProcessGraphStore) ·
    build.py (the graph, make_graph_store) · queries.py + results.py (the utilities) ·
    mentions.py · extractors/ (cooccurrence, llm) (`ragspine graph`: ragspine/cli/graph.py); the networkx adapter is
    ``ragspine.stores.networkx_graph``.
"""

from ragspine.graph.base import Edge, GraphError, GraphStore, Node, node_id
from ragspine.graph.build import build_relation_graph, dump_graph, graph_to_dict, make_graph_store
from ragspine.graph.extractors.base import RelationExtractor, make_relation_extractor
from ragspine.graph.memory import InProcessGraphStore
from ragspine.graph.queries import compare_peers, roll_up, subsidiaries, trace_derivation
from ragspine.graph.results import Derivation, MemberValue, PeerComparison, RollUp

__all__ = [
    "Derivation",
    "Edge",
    "GraphError",
    "GraphStore",
    "InProcessGraphStore",
    "MemberValue",
    "Node",
    "PeerComparison",
    "RelationExtractor",
    "RollUp",
    "build_relation_graph",
    "compare_peers",
    "dump_graph",
    "graph_to_dict",
    "make_graph_store",
    "make_relation_extractor",
    "node_id",
    "roll_up",
    "subsidiaries",
    "trace_derivation",
]
