"""The graph utilities' conformance pack, on both graph stores, with failing inverse cases.

* **no invented numbers**: over every metric × entity × period of the sample facts (and periods
  no fact has), every roll-up, comparison and derivation shows only stored, non-RESTRICTED facts
  of their cited sources, a total only when no member is missing, and cites no model edge;
* **the default extractor is off**: the graph is byte for byte the same with the slot at ``none``;
* **RESTRICTED text never reaches a model** through the LLM extractor.

Inverse cases: a roll-up that fills a missing member with a guess, one that reports a RESTRICTED
fact, and an extractor that forwards every chunk must each fail.
"""

from __future__ import annotations

from dataclasses import replace
from itertools import product

import pytest

from ragspine.graph import (
    build_relation_graph,
    compare_peers,
    dump_graph,
    make_graph_store,
    make_relation_extractor,
    roll_up,
    trace_derivation,
)
from ragspine.graph.extractors.llm import LLMRelationExtractor
from ragspine.graph.results import MemberValue
from ragspine.stores.sqlite import SQLiteDatabase
from ragspine.structured import Glossary, StructuredChannel, make_fact_store
from ragspine.testing.graph_utilities import (
    assert_no_restricted_text_sent,
    assert_numbers_are_stored_facts,
    sample_facts,
    spy_chunks,
)
from ragspine.testing.llm import ScriptedLLMProvider
from tests.helpers import needs

G = Glossary.default()
METRICS = ["revenue", "operating profit", "gross margin", "operating margin", "营收", "売上高"]
ENTITIES = ["Kestrel", "Kestrel China", "ケストレル・ジャパン", "KSTR"]
PERIODS = ["2024Q3", "2024Q2", "FY2024", "2023", "2024年第三季度"]


@pytest.fixture(params=["memory", "networkx"])
def world(request, tmp_path):
    if request.param == "networkx":
        needs("networkx")
    db = SQLiteDatabase(tmp_path / "kb.db")
    store = make_fact_store("lib", database=db)
    store.init_schema()
    store.replace_facts(sample_facts())
    graph = build_relation_graph(G, facts=store.iter_facts(), store=make_graph_store(request.param))
    yield graph, StructuredChannel(store, G), store
    db.close()


def test_no_utility_shows_a_number_that_is_not_a_stored_fact(world) -> None:
    graph, channel, store = world
    statuses = set()
    for metric, entity, period in product(METRICS, ENTITIES, PERIODS):
        for result in (roll_up(graph, channel, metric, entity, period), compare_peers(graph, channel, metric, entity, period),
                       trace_derivation(graph, channel, metric, entity=entity, period=period)):
            assert_numbers_are_stored_facts(result, store)
            statuses.add(result.status)
    assert {"rolled_up", "incomplete", "not_rollable", "compared", "no_peers", "derived", "not_derived"} <= statuses  # not vacuous


def test_the_extractor_slot_off_is_byte_identical(world) -> None:
    graph, _, store = world
    off = build_relation_graph(G, facts=store.iter_facts(), extractor=make_relation_extractor("none"), chunks=spy_chunks())
    assert dump_graph(off) == dump_graph(graph)


def test_restricted_text_never_reaches_the_llm_extractor() -> None:
    assert_no_restricted_text_sent(lambda provider: LLMRelationExtractor(provider, G), ScriptedLLMProvider("[]"))


# -- inverse cases ----------------------------------------------------------------------------------
def test_a_guessed_member_fails(world) -> None:
    graph, channel, store = world
    honest = roll_up(graph, channel, "operating profit", "Kestrel", "2024Q3")
    assert honest.status == "incomplete"
    guess = MemberValue("KESTREL_JP", "Kestrel Japan", "found", "0", "EUR_M", "2024Q3", "estimate", "n/a")
    guessing = replace(honest, status="not_rollable", members=(honest.members[0], guess), missing=())  # the type refuses it as incomplete
    with pytest.raises(AssertionError, match="no stored fact"):
        assert_numbers_are_stored_facts(guessing, store)


def test_a_restricted_member_fails(world) -> None:
    graph, channel, store = world
    honest = roll_up(graph, channel, "operating profit", "Kestrel", "2024Q3")
    leaked = MemberValue("KESTREL_JP", "Kestrel Japan", "found", "-2", "EUR_M", "2024Q3", "kestrel/board-memo-q3", "item 4")
    with pytest.raises(AssertionError, match="RESTRICTED"):
        assert_numbers_are_stored_facts(replace(honest, status="not_rollable", members=(honest.members[0], leaked), missing=()), store)


def test_a_forwarding_extractor_fails() -> None:
    class Forwarding(LLMRelationExtractor):
        def extract(self, chunks):  # type: ignore[no-untyped-def]
            self.provider.chat([{"role": "user", "content": "\n".join(c.text for c in chunks)}])
            return []

    with pytest.raises(AssertionError, match="RESTRICTED text reached the model"):
        assert_no_restricted_text_sent(lambda provider: Forwarding(provider, G), ScriptedLLMProvider("[]"))
