"""``GraphStoreConformance``: the GraphStore contract, one mixin per capability.

Fixture needed: ``graph_store`` — a new, empty store per test.

The invariants the graph utilities rely on are plain functions raising ``AssertionError``
(:func:`assert_batches_are_atomic`, :func:`assert_answers_are_ordered_copies`), so a test can
prove each can fail by running it on a deliberately broken store.
"""

from __future__ import annotations

import pytest

from ragspine.graph.base import CO_OCCURS_WITH, DERIVED_FROM, REPORTS, SUBSIDIARY_OF, Edge, GraphError, GraphStore, Node

ENTITIES = ("A", "B", "C")


def nodes() -> list[Node]:
    """Three entities, two metrics and a channel."""
    return [*(Node.of("entity", k, f"Entity {k}") for k in ENTITIES), Node.of("metric", "revenue"), Node.of("metric", "margin"),
            Node.of("channel", "direct")]


def edge(source: str, relation: str, target: str, doc: str = "glossary.yaml", locator: str = "x", **fields: object) -> Edge:
    return Edge(source, relation, target, doc, locator, **fields)  # type: ignore[arg-type]


def sample_edges() -> list[Edge]:
    return [
        edge("entity:B", SUBSIDIARY_OF, "entity:A", locator="entities.B.parent"),
        edge("entity:C", SUBSIDIARY_OF, "entity:A", locator="entities.C.parent"),
        edge("metric:margin", DERIVED_FROM, "metric:revenue", locator="metrics.margin.derived_from"),
        edge("entity:B", REPORTS, "metric:revenue", "q3", "p. 1", derivation="fact"),
        edge("entity:B", REPORTS, "metric:revenue", "q3", "p. 2", derivation="fact"),  # same pair, other lineage
        edge("entity:C", CO_OCCURS_WITH, "entity:B", "news", "para 4", derivation="cooccurrence", chunk_id="news#3"),
        edge("entity:A", "supplies", "entity:C", "news", "para 5", derivation="model", chunk_id="news#4", verified=False),
    ]


def filled(store: GraphStore) -> GraphStore:
    store.add_nodes(nodes())
    store.add_edges(sample_edges())
    return store


# -- the invariants, as functions a broken store can fail -----------------------------------------
def assert_batches_are_atomic(store: GraphStore) -> None:
    """A batch with one bad edge (or node) writes nothing of the batch."""
    filled(store)
    before_nodes, before_edges = store.nodes(), store.edges()
    good = edge("entity:A", "partner_of", "entity:B", "news", "p. 9", derivation="model", verified=False)
    for bad in (edge("entity:A", SUBSIDIARY_OF, "entity:Z"), edge("entity:A", "invented", "entity:B")):
        try:
            store.add_edges([good, bad])
        except GraphError:
            pass
        else:
            raise AssertionError(f"a batch with {bad} was accepted")
    try:
        store.add_nodes([Node.of("entity", "D"), Node("entity:A", "metric", "A")])
    except GraphError:
        pass
    else:
        raise AssertionError("a node id held as another kind was accepted")
    assert store.nodes() == before_nodes, "a refused node batch wrote some of its nodes"
    assert store.edges() == before_edges, "a refused edge batch wrote some of its edges"


def assert_answers_are_ordered_copies(store: GraphStore) -> None:
    """Nodes by id, edges by sort key, whatever the insertion order; a returned list is the caller's."""
    store.add_nodes(list(reversed(nodes())))
    store.add_edges(list(reversed(sample_edges())))
    assert [n.id for n in store.nodes()] == sorted(n.id for n in nodes())
    assert store.edges() == sorted(set(sample_edges()), key=Edge.sort_key)
    store.edges().clear()
    store.nodes().clear()
    assert len(store.edges()) == len(sample_edges()) and len(store.nodes()) == len(nodes())


class NodesTest:
    def test_add_and_read_nodes(self, graph_store: GraphStore) -> None:
        assert graph_store.add_nodes(nodes()) == len(nodes())
        assert graph_store.node("entity:A") == Node("entity:A", "entity", "A", "Entity A")
        assert graph_store.node("entity:Z") is None
        assert [n.id for n in graph_store.nodes(kind="metric")] == ["metric:margin", "metric:revenue"]
        assert graph_store.nodes(kind="period") == []

    def test_a_node_again_is_kept_as_it_was(self, graph_store: GraphStore) -> None:
        graph_store.add_nodes(nodes())
        assert graph_store.add_nodes([Node.of("entity", "A", "another label"), Node.of("entity", "D")]) == 1
        assert graph_store.node("entity:A").label == "Entity A"  # type: ignore[union-attr]

    def test_malformed_nodes_are_refused(self, graph_store: GraphStore) -> None:
        for bad in (Node("A", "entity", "A"), Node("team:A", "team", "A"), Node("entity:", "entity", ""), "entity:A"):
            with pytest.raises(GraphError):
                graph_store.add_nodes([bad])  # type: ignore[list-item]
        with pytest.raises(GraphError, match="unknown node kind"):
            Node.of("team", "A")
        assert graph_store.nodes() == []


class EdgesTest:
    def test_add_and_filter_edges(self, graph_store: GraphStore) -> None:
        filled(graph_store)
        assert len(graph_store.edges()) == len(sample_edges())
        subs = graph_store.edges(target="entity:A", relation=SUBSIDIARY_OF)
        assert [e.source for e in subs] == ["entity:B", "entity:C"]
        assert [e.source_locator for e in graph_store.edges(source="entity:B", relation=REPORTS)] == ["p. 1", "p. 2"]
        assert graph_store.edges(source="entity:Z") == [] and graph_store.edges(relation="partner_of") == []

    def test_an_equal_edge_is_stored_once(self, graph_store: GraphStore) -> None:
        filled(graph_store)
        assert graph_store.add_edges(sample_edges()) == 0
        assert graph_store.add_edges([sample_edges()[0], sample_edges()[0]]) == 0
        assert len(graph_store.edges()) == len(sample_edges())

    def test_a_symmetric_relation_is_stored_once_and_matches_both_ways(self, graph_store: GraphStore) -> None:
        filled(graph_store)
        assert graph_store.add_edges([edge("entity:B", CO_OCCURS_WITH, "entity:C", "news", "para 4", derivation="cooccurrence",
                                           chunk_id="news#3")]) == 0
        both = [graph_store.edges(source=s, relation=CO_OCCURS_WITH) for s in ("entity:B", "entity:C")]
        assert both[0] == both[1] and [(e.source, e.target) for e in both[0]] == [("entity:B", "entity:C")]
        assert graph_store.edges(source="entity:C", target="entity:B", relation=CO_OCCURS_WITH) == both[0]
        assert graph_store.edges(source="entity:C", target="entity:A", relation=SUBSIDIARY_OF) != []
        assert graph_store.edges(source="entity:A", target="entity:C", relation=SUBSIDIARY_OF) == []  # directed

    def test_model_edges_are_never_citable(self, graph_store: GraphStore) -> None:
        filled(graph_store)
        model = graph_store.edges(citable=False)
        assert [(e.relation, e.derivation, e.verified) for e in model] == [("supplies", "model", False)]
        assert all(e.citable for e in graph_store.edges(citable=True)) and len(graph_store.edges(citable=True)) == len(sample_edges()) - 1
        with pytest.raises(GraphError, match="unverified"):
            graph_store.add_edges([edge("entity:A", "supplies", "entity:B", derivation="model")])

    @pytest.mark.parametrize("bad", [
        edge("entity:A", SUBSIDIARY_OF, "entity:Z"),
        edge("entity:A", "invented", "entity:B"),
        edge("entity:A", SUBSIDIARY_OF, "entity:B", doc=""),
        edge("entity:A", SUBSIDIARY_OF, "entity:B", locator=" "),
        edge("entity:A", SUBSIDIARY_OF, "entity:A"),
        edge("entity:A", SUBSIDIARY_OF, "entity:B", derivation="rumour"),
    ])
    def test_malformed_or_dangling_edges_are_refused(self, graph_store: GraphStore, bad: Edge) -> None:
        graph_store.add_nodes(nodes())
        with pytest.raises(GraphError):
            graph_store.add_edges([bad])
        assert graph_store.edges() == []


class InvariantsTest:
    def test_batches_are_atomic(self, graph_store: GraphStore) -> None:
        assert_batches_are_atomic(graph_store)

    def test_answers_are_ordered_copies(self, graph_store: GraphStore) -> None:
        assert_answers_are_ordered_copies(graph_store)


class GraphStoreConformance(NodesTest, EdgesTest, InvariantsTest):
    """Every capability of the GraphStore contract (fixture: ``graph_store``)."""
