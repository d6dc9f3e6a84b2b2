"""Roll-up, peer comparison and derivation tracing: every number a cited stored fact, a missing
member named and never estimated."""

from __future__ import annotations

from decimal import Decimal

import pytest

from ragspine.graph import build_relation_graph, compare_peers, roll_up, subsidiaries, trace_derivation
from ragspine.graph.base import Edge
from ragspine.graph.results import MemberValue, RollUp
from ragspine.structured import Glossary, has_numeral
from ragspine.testing.graph_utilities import assert_numbers_are_stored_facts


def test_revenue_rolls_up_over_both_subsidiaries_with_every_source(graph, channel, facts) -> None:
    result = roll_up(graph, channel, "revenue", "Kestrel", "2024Q3")
    assert (result.status, result.total, result.unit, result.missing) == ("rolled_up", "100.25", "EUR_M", ())
    assert [(m.entity, m.value, m.source_doc_id, m.source_locator) for m in result.members] == [
        ("KESTREL_CN", "60", "kestrel/china-q3-2024", "table 1"), ("KESTREL_JP", "40.25", "kestrel/japan-q3-2024", "p. 2"),
    ]
    assert result.text == ("Kestrel Robotics revenue for Q3 2024: 100.25 million euros, the sum of its 2 subsidiaries' stored values:"
                           " Kestrel China 60 million euros (kestrel/china-q3-2024, table 1);"
                           " Kestrel Japan 40.25 million euros (kestrel/japan-q3-2024, p. 2).")
    assert [e.source_locator for e in result.relations] == ["entities.KESTREL_CN.parent", "entities.KESTREL_JP.parent"]
    assert_numbers_are_stored_facts(result, facts)
    zh = roll_up(graph, channel, "营收", "红隼", "2024年第三季度", language="zh")
    assert zh.total == "100.25" and "红隼机器人" in zh.text


def test_a_member_without_a_fact_is_named_and_nothing_is_summed(graph, channel, facts) -> None:
    """Kestrel Japan's operating profit exists only as a RESTRICTED fact: it is missing, like an absent one."""
    result = roll_up(graph, channel, "operating profit", "Kestrel", "2024Q3")
    assert (result.status, result.total, result.missing) == ("incomplete", "", ("KESTREL_JP",))
    assert result.text == ("Not rolled up: no recorded operating profit for Kestrel Japan. The graph utilities never estimate a"
                           " missing member.")
    assert not has_numeral(result.text)  # neither the found member's value nor the RESTRICTED one
    assert [(m.entity, m.status, m.value) for m in result.members] == [("KESTREL_CN", "found", "6.5"), ("KESTREL_JP", "not_found", "")]
    assert_numbers_are_stored_facts(result, facts)
    nothing = roll_up(graph, channel, "revenue", "Kestrel", "2023Q1")
    assert nothing.status == "incomplete" and nothing.missing == ("KESTREL_CN", "KESTREL_JP") and not has_numeral(nothing.text)


@pytest.mark.parametrize(("metric", "entity", "period", "reason"), [
    ("revenue", "Kestrel", "2024Q2", "units_differ"),  # CNY_100M and EUR_M: never converted
    ("gross margin", "Kestrel", "2024Q3", "not_additive"),  # percent
    ("revenue", "Kestrel China", "2024Q3", "no_subsidiaries"),
    ("revenue", "Kestrel", "FY2024", "period_spans_differ"),  # calendar year for China, April-March for Japan
])
def test_what_cannot_be_summed_is_not(graph, channel, metric, entity, period, reason) -> None:
    result = roll_up(graph, channel, metric, entity, period)
    assert (result.status, result.reason, result.total) == ("not_rollable", reason, "")


def test_unrecognized_inputs_are_the_structured_channels_refusal(graph, channel) -> None:
    for args in (("revenu", "Kestrel", "2024Q3"), ("revenue", "Kestrl", "2024Q3"), ("revenue", "Kestrel", "Q5 2024")):
        result = roll_up(graph, channel, *args)
        assert result.status == "unrecognized_param" and result.total == "" and not has_numeral(result.text)
    assert compare_peers(graph, channel, "revenue", "Kestrl", "2024Q3").status == "unrecognized_param"
    assert trace_derivation(graph, channel, "margn").status == "unrecognized_param"
    assert trace_derivation(graph, channel, "operating margin", entity="Kestrl", period="2024Q3").status == "unrecognized_param"


def test_model_derived_edges_are_never_walked(channel, facts) -> None:
    """A model's edges cannot be subsidiary_of; even a stored unverified edge is not read."""
    graph = build_relation_graph(Glossary.default(), facts=facts.iter_facts())
    graph.add_edges([Edge("entity:KESTREL_CN", "partner_of", "entity:KESTREL_JP", "news", "para 1", derivation="model", verified=False)])
    assert [k for k, _ in subsidiaries(graph, "KESTREL")] == ["KESTREL_CN", "KESTREL_JP"]
    assert all(e.citable for e in roll_up(graph, channel, "revenue", "Kestrel", "2024Q3").relations)


def test_peers_are_the_siblings_each_a_cited_fact(graph, channel, facts) -> None:
    result = compare_peers(graph, channel, "revenue", "Kestrel Japan", "2024Q3")
    assert (result.status, result.parent, result.comparable, result.ranking) == ("compared", "KESTREL", True, ("KESTREL_CN", "KESTREL_JP"))
    assert "Kestrel China: 60 million euros (kestrel/china-q3-2024, table 1)" in result.text
    assert_numbers_are_stored_facts(result, facts)
    mixed = compare_peers(graph, channel, "revenue", "Kestrel China", "2024Q2")
    assert mixed.status == "compared" and not mixed.comparable and mixed.ranking == ()
    partial = compare_peers(graph, channel, "operating profit", "Kestrel China", "2024Q3")
    assert not partial.comparable and "Kestrel Japan: no recorded value" in partial.text and "-2 million" not in partial.text
    assert compare_peers(graph, channel, "revenue", "Kestrel", "2024Q3").status == "no_peers"


def test_a_derivation_is_traced_with_its_inputs_facts_and_never_computed(graph, channel, facts) -> None:
    bare = trace_derivation(graph, channel, "EBIT margin")
    assert bare.status == "derived" and [s.metric for s in bare.root.inputs] == ["operating_profit", "revenue"]  # type: ignore[union-attr]
    assert bare.text == ("operating margin is derived from operating profit and revenue"
                         " (ragspine/structured/data/glossary.yaml, metrics.operating_margin.derived_from).")
    traced = trace_derivation(graph, channel, "operating margin", entity="Kestrel China", period="2024Q3")
    root = traced.root
    assert root is not None and root.fact is not None and root.fact.status == "not_found"  # the margin is never computed
    assert [(s.metric, s.fact.value) for s in root.inputs] == [("operating_profit", "6.5"), ("revenue", "60")]  # type: ignore[union-attr]
    assert "operating margin: no recorded value." in traced.text
    assert_numbers_are_stored_facts(traced, facts)
    assert trace_derivation(graph, channel, "revenue").status == "not_derived"


def test_a_rollup_cannot_be_built_with_an_invented_total() -> None:
    cn = MemberValue("KESTREL_CN", "Kestrel China", "found", "60", "EUR_M", "2024Q3", "cn", "t1")
    jp_missing = MemberValue("KESTREL_JP", "Kestrel Japan", "not_found")
    with pytest.raises(ValueError, match="a found fact for every member"):
        RollUp("rolled_up", "x", total="60", unit="EUR_M", members=(cn, jp_missing))
    with pytest.raises(ValueError, match="exact sum"):
        RollUp("rolled_up", "x", total="61", unit="EUR_M", members=(cn,))
    with pytest.raises(ValueError, match="carries no total"):
        RollUp("incomplete", "x", total="60", unit="EUR_M", members=(cn, jp_missing), missing=("KESTREL_JP",))
    with pytest.raises(ValueError, match="no value and no source"):
        MemberValue("KESTREL_JP", "Kestrel Japan", "not_found", value="0")
    with pytest.raises(ValueError, match="only citable edges"):
        RollUp("not_rollable", "x", relations=(Edge("entity:A", "supplies", "entity:B", "d", "l", derivation="model", verified=False),))
    assert RollUp("rolled_up", "x", total="60.0", unit="EUR_M", members=(cn,)).total == "60.0"
    assert Decimal("60.0") == Decimal("60")


def test_every_language_has_every_sentence_of_the_graph_utilities() -> None:
    from ragspine.graph.messages import MESSAGES
    from ragspine.structured.glossary import LANGUAGES

    assert set(MESSAGES) == set(LANGUAGES)
    for language, table in MESSAGES.items():
        assert set(table) == set(MESSAGES["en"]), language
