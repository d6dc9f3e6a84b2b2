"""The relation-extractor slot: co-occurrence with clean lineage; the LLM extractor's edges
model-derived and unverified, fenced to the chunk's entities, gated, and fed no RESTRICTED text."""

from __future__ import annotations

import json
import sys

import pytest

from ragspine.errors import ConfigError, MissingDependencyError
from ragspine.graph import build_relation_graph, make_graph_store, make_relation_extractor
from ragspine.graph.base import CO_OCCURS_WITH, MODEL_RELATIONS
from ragspine.graph.extractors.base import endpoint_gate
from ragspine.graph.extractors.cooccurrence import CooccurrenceRelationExtractor
from ragspine.graph.extractors.llm import LLMRelationExtractor, build_relation_prompt
from ragspine.graph.mentions import EntityMatcher
from ragspine.security.gate import SecurityGate
from ragspine.structured import Glossary
from ragspine.testing.graph_utilities import (
    RESTRICTED_MARKER,
    SpyChunk,
    assert_edges_cite_their_chunk,
    assert_no_restricted_text_sent,
    spy_chunks,
)
from ragspine.testing.llm import ScriptedLLMProvider

G = Glossary.default()


def proposals(*triples: tuple[str, str, str]) -> str:
    return "Here you go:\n" + json.dumps([{"source": s, "relation": r, "target": t} for s, r, t in triples])


def test_mentions_are_exact_leftmost_longest_and_language_blind() -> None:
    m = EntityMatcher(G)
    assert m.keys_in("Kestrel China grew while Kestrel Japan fell") == ["KESTREL_CN", "KESTREL_JP"]  # not also KESTREL
    assert m.keys_in("红隼中国与红隼日本") == ["KESTREL_CN", "KESTREL_JP"]
    assert m.keys_in("ケストレル ・ ジャパンの売上") == ["KESTREL_JP"]
    assert m.keys_in("ＫＳＴＲ's plant; Kestrel's board") == ["KESTREL"]
    assert m.keys_in("Kestrelville and Kestrl") == [] and m.keys_in("") == []


def test_cooccurrence_edges_cite_the_chunk_and_skip_restricted_ones() -> None:
    chunks = spy_chunks()
    edges = CooccurrenceRelationExtractor(G).extract(chunks)
    assert [(e.source, e.relation, e.target, e.source_doc_id, e.source_locator, e.chunk_id, e.citable) for e in edges] == [
        ("entity:KESTREL_CN", CO_OCCURS_WITH, "entity:KESTREL_JP", "kestrel/china-q3-2024", "para 1", "cn#1", True),
        ("entity:KESTREL", CO_OCCURS_WITH, "entity:KESTREL_JP", "kestrel/japan-q3-2024", "p. 2", "jp#2", True),
    ]
    assert_edges_cite_their_chunk(edges, chunks)
    graph = build_relation_graph(G, extractor=CooccurrenceRelationExtractor(G), chunks=chunks)
    assert len(graph.edges(relation=CO_OCCURS_WITH)) == 2
    lone = SpyChunk("x#1", "x", "Only Kestrel China here.", "")
    (edge,) = CooccurrenceRelationExtractor(G).extract([lone, SpyChunk("x#2", "x", "Kestrel China, Kestrel Japan", "")])
    assert edge.source_locator == "x#2"  # no locator: the chunk id stands for it


def test_the_llm_extractors_edges_are_model_derived_unverified_and_never_cited() -> None:
    provider = ScriptedLLMProvider(lambda prompt: proposals(("KESTREL_CN", "supplies", "KESTREL_JP"), ("KESTREL", "partner_of", "KESTREL_JP")))
    extractor = make_relation_extractor("llm", glossary=G, provider=provider)
    assert isinstance(extractor, LLMRelationExtractor)
    chunks = spy_chunks()
    edges = extractor.extract(chunks)
    assert [(e.source, e.relation, e.target, e.chunk_id) for e in edges] == [
        ("entity:KESTREL_CN", "supplies", "entity:KESTREL_JP", "cn#1"),  # KESTREL is not named in cn#1: dropped there
        ("entity:KESTREL", "partner_of", "entity:KESTREL_JP", "jp#2"),
    ]
    assert all(e.derivation == "model" and not e.verified and not e.citable for e in edges)
    assert_edges_cite_their_chunk(edges, chunks)
    assert extractor.stats == {"chunks": 3, "restricted_skipped": 1, "sent": 2, "failed": 0, "malformed": 0, "edges": 2,
                               "refused_by_gate": 0, "outside_chunk": 2}
    graph = build_relation_graph(G, extractor=extractor, chunks=chunks)
    assert graph.edges(citable=False) == sorted(edges, key=lambda e: e.sort_key())


def test_restricted_text_never_reaches_the_model() -> None:
    provider = ScriptedLLMProvider("[]")
    assert_no_restricted_text_sent(lambda p: LLMRelationExtractor(p, G), provider)
    assert provider.calls == 2 and all(RESTRICTED_MARKER not in p for p in provider.prompts)
    assert "Kestrel China supplies gearboxes" in provider.prompts[0]


def test_a_leaky_extractor_fails_the_restricted_check() -> None:
    class Leaky(LLMRelationExtractor):
        def extract(self, chunks):  # type: ignore[no-untyped-def]
            for chunk in chunks:  # sends every chunk, RESTRICTED or not
                self.provider.chat([{"role": "user", "content": chunk.text}])
            return []

    with pytest.raises(AssertionError, match="RESTRICTED text reached the model"):
        assert_no_restricted_text_sent(lambda p: Leaky(p, G), ScriptedLLMProvider("[]"))


def test_only_model_relations_between_the_chunks_own_entities_are_kept() -> None:
    answer = proposals(("KESTREL_CN", "subsidiary_of", "KESTREL_JP"), ("KESTREL_CN", "acquired", "KESTREL_JP"),
                       ("KESTREL_CN", "supplies", "ACME"), ("KESTREL_CN", "supplies", "KESTREL_CN"), ("KESTREL_JP", "customer_of", "KESTREL_CN"))
    extractor = LLMRelationExtractor(ScriptedLLMProvider(answer), G)
    edges = extractor.extract([spy_chunks()[0]])
    assert [(e.source, e.relation, e.target) for e in edges] == [("entity:KESTREL_JP", "customer_of", "entity:KESTREL_CN")]
    assert extractor.stats["outside_chunk"] == 4
    with pytest.raises(ValueError, match="a model may propose only"):
        LLMRelationExtractor(ScriptedLLMProvider("[]"), G, relations=("subsidiary_of",))
    assert "subsidiary_of" not in MODEL_RELATIONS and "derived_from" not in MODEL_RELATIONS


def test_endpoints_pass_the_security_gate() -> None:
    """A deny-listed entity (any of its forms) is no endpoint: the edge is dropped, and counted."""
    gate = SecurityGate({"KESTREL_JP": ["Kestrel Japan", "ケストレル日本"]})
    provider = ScriptedLLMProvider(proposals(("KESTREL_CN", "supplies", "KESTREL_JP")))
    extractor = make_relation_extractor("llm", glossary=G, provider=provider, gate=gate)
    assert extractor.extract([spy_chunks()[0]]) == []  # type: ignore[union-attr]
    assert extractor.stats["refused_by_gate"] == 1  # type: ignore[union-attr]
    by_alias = LLMRelationExtractor(provider, G, endpoint_gate=lambda text: "ケストレル日本" not in text)
    assert by_alias.extract([spy_chunks()[0]]) == []  # denied through another form of the term
    open_gate = LLMRelationExtractor(provider, G, endpoint_gate=endpoint_gate(SecurityGate({"ACME": ["Acme"]})))
    assert len(open_gate.extract([spy_chunks()[0]])) == 1
    with pytest.raises(ConfigError, match="callable"):
        endpoint_gate(42)


@pytest.mark.parametrize("answer", ["no idea", '{"source": "KESTREL_CN"}', "[1, 2]", "[{broken"])
def test_a_malformed_answer_costs_that_chunks_edges_only(answer: str) -> None:
    extractor = LLMRelationExtractor(ScriptedLLMProvider(answer), G)
    assert extractor.extract(spy_chunks()) == []
    assert extractor.stats["malformed"] == 2


def test_a_failing_model_degrades_to_no_edges() -> None:
    extractor = LLMRelationExtractor(ScriptedLLMProvider(error=TimeoutError("slow")), G)
    assert extractor.extract(spy_chunks()) == [] and extractor.stats["failed"] == 2


def test_the_prompt_lists_keys_relations_and_the_text() -> None:
    prompt = build_relation_prompt("Kestrel China supplies Kestrel Japan.", {"KESTREL_CN": "Kestrel China"}, ("supplies",))
    assert "- KESTREL_CN: Kestrel China" in prompt and "Relations: supplies" in prompt and prompt.endswith("Kestrel Japan.")


def test_the_factory_refuses_what_cannot_run() -> None:
    with pytest.raises(ConfigError, match="needs an LLM provider"):
        make_relation_extractor("llm", glossary=G)
    with pytest.raises(ConfigError, match="unknown relation extractor 'graphrag'.*none, cooccurrence, llm"):
        make_relation_extractor("graphrag")
    assert isinstance(make_relation_extractor("co_occurrence"), CooccurrenceRelationExtractor)  # the shipped glossary


def test_a_missing_networkx_names_the_graph_extra(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "networkx", None)  # import networkx now raises ImportError
    with pytest.raises(MissingDependencyError, match=r"pip install 'ragspine\[graph\]'"):
        make_graph_store("networkx")
