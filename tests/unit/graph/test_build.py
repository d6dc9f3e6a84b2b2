"""``build_relation_graph``: the glossary's structure and the facts' provenance as cited edges;
the extractor slot off by default (byte for byte)."""

from __future__ import annotations

import pytest

from ragspine.graph import build_relation_graph, dump_graph, graph_to_dict, make_graph_store, make_relation_extractor
from ragspine.graph.base import CO_OCCURS_WITH, REPORTS, SUBSIDIARY_OF, Edge, GraphError, Node, node_id
from ragspine.graph.build import DEFAULT_GLOSSARY_SOURCE, glossary_source
from ragspine.structured import Glossary
from ragspine.testing.graph_utilities import spy_chunks

G = Glossary.default()


def test_the_glossarys_structure_becomes_cited_edges() -> None:
    graph = build_relation_graph(G)
    assert [n.id for n in graph.nodes(kind="entity")] == ["entity:KESTREL", "entity:KESTREL_CN", "entity:KESTREL_JP"]
    assert graph.node("metric:revenue") == Node("metric:revenue", "metric", "revenue", "revenue")
    assert {n.key for n in graph.nodes(kind="channel")} == set(G.keys("channels"))
    edges = graph.edges()
    assert [(e.source, e.relation, e.target, e.source_doc_id, e.source_locator) for e in edges] == [
        ("entity:KESTREL_CN", SUBSIDIARY_OF, "entity:KESTREL", DEFAULT_GLOSSARY_SOURCE, "entities.KESTREL_CN.parent"),
        ("entity:KESTREL_JP", SUBSIDIARY_OF, "entity:KESTREL", DEFAULT_GLOSSARY_SOURCE, "entities.KESTREL_JP.parent"),
        ("metric:operating_margin", "derived_from", "metric:operating_profit", DEFAULT_GLOSSARY_SOURCE, "metrics.operating_margin.derived_from"),
        ("metric:operating_margin", "derived_from", "metric:revenue", DEFAULT_GLOSSARY_SOURCE, "metrics.operating_margin.derived_from"),
    ]
    assert all(e.citable and e.derivation == "glossary" for e in edges)


def test_a_glossary_file_is_the_source_its_edges_cite(tmp_path) -> None:
    path = tmp_path / "g.yaml"
    path.write_text("entities:\n  A: {en: [Alpha]}\n  B: {en: [Beta], parent: A}\n", encoding="utf-8")
    glossary = Glossary.load(path)
    assert glossary_source(glossary) == str(path)
    (edge,) = build_relation_graph(glossary).edges()
    assert (edge.source_doc_id, edge.source_locator) == (str(path), "entities.B.parent")


def test_facts_add_reports_edges_cited_by_their_source_and_restricted_ones_add_nothing(facts) -> None:
    graph = build_relation_graph(G, facts=facts.iter_facts(include_restricted=True))
    reports = graph.edges(relation=REPORTS)
    assert {(e.source, e.target, e.source_doc_id, e.source_locator) for e in reports} == {
        ("entity:KESTREL_CN", "metric:revenue", "kestrel/china-q3-2024", "table 1"),
        ("entity:KESTREL_CN", "metric:operating_profit", "kestrel/china-q3-2024", "table 2"),
        ("entity:KESTREL_CN", "metric:gross_margin", "kestrel/china-q3-2024", "para 3"),
        ("entity:KESTREL_CN", "metric:revenue", "kestrel/china-q3-2024", "table 5"),
        ("entity:KESTREL_JP", "metric:revenue", "kestrel/japan-q3-2024", "p. 2"),
        ("entity:KESTREL_JP", "metric:gross_margin", "kestrel/japan-q3-2024", "p. 3"),
        ("entity:KESTREL_JP", "metric:revenue", "kestrel/japan-q3-2024", "p. 4"),
    }
    assert "board-memo" not in dump_graph(graph)  # the RESTRICTED fact left no trace


def test_a_fact_naming_a_key_the_glossary_lacks_gets_its_node() -> None:
    from ragspine.testing.graph_utilities import fact

    graph = build_relation_graph(G, facts=[fact("churn", "ACME", "2024Q3", "3", "percent", "acme/q3", "p. 1")])
    assert graph.node("entity:ACME") is not None and graph.node("metric:churn") is not None
    assert [e.source_doc_id for e in graph.edges(source="entity:ACME")] == ["acme/q3"]


def test_no_extractor_is_byte_for_byte_the_graph_without_the_slot(facts) -> None:
    """RAGSPINE_RELATION_EXTRACTOR=none: nothing read from chunks, the same bytes."""
    assert make_relation_extractor("none") is None
    plain = dump_graph(build_relation_graph(G, facts=facts.iter_facts()))
    slot_off = dump_graph(build_relation_graph(G, facts=facts.iter_facts(), extractor=make_relation_extractor("none"), chunks=spy_chunks()))
    assert slot_off == plain
    with_extractor = build_relation_graph(G, facts=facts.iter_facts(), extractor=make_relation_extractor("cooccurrence"), chunks=spy_chunks())
    assert dump_graph(with_extractor) != plain and with_extractor.edges(relation=CO_OCCURS_WITH)


def test_the_default_settings_select_no_extractor_and_the_in_process_store() -> None:
    from ragspine.config import load_settings
    from ragspine.graph.memory import InProcessGraphStore

    settings = load_settings({})
    assert (settings.graph_store, settings.relation_extractor) == ("memory", "none")
    assert isinstance(make_graph_store(settings.graph_store), InProcessGraphStore)


def test_the_graph_is_deterministic_and_serializable(facts) -> None:
    first = build_relation_graph(G, facts=facts.iter_facts())
    second = build_relation_graph(G, facts=list(reversed(facts.iter_facts())))
    assert dump_graph(first) == dump_graph(second)
    data = graph_to_dict(first)
    assert set(data) == {"nodes", "edges"} and all(e["citable"] for e in data["edges"])


def test_edges_are_checked_and_symmetric_ones_ordered() -> None:
    edge = Edge("entity:B", CO_OCCURS_WITH, "entity:A", "doc", "p. 1", derivation="cooccurrence")
    assert (edge.source, edge.target) == ("entity:A", "entity:B")
    assert node_id("entity", "A") == "entity:A"
    with pytest.raises(GraphError, match="unknown node kind"):
        node_id("person", "A")
    with pytest.raises(GraphError, match="verified must be a bool"):
        Edge("entity:A", SUBSIDIARY_OF, "entity:B", "g", "x", verified="yes").check()  # type: ignore[arg-type]
