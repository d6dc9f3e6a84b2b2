"""Checks of the graph utilities' invariants, as plain functions raising ``AssertionError`` — so a
test can prove each can fail by running it on a deliberately leaky implementation.

* :func:`assert_numbers_are_stored_facts` — every value a roll-up, comparison or derivation
  shows is the stored, non-RESTRICTED fact of its cited source; a roll-up's total is the sum of
  them and exists only when no member is missing;
* :func:`assert_no_restricted_text_sent` — a relation extractor sends no RESTRICTED chunk's
  text to its model, and cites no RESTRICTED chunk;
* :func:`assert_edges_cite_their_chunk` — every extracted edge cites a chunk it was given
  (doc_id, locator, chunk_id), and a model's edges are stamped model-derived and unverified.

:func:`sample_facts` is a small fact table over the shipped glossary (Kestrel and its two
subsidiaries) with one RESTRICTED fact.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Callable, Iterable

from ragspine.graph.base import Edge
from ragspine.retrieval.sensitivity import is_restricted
from ragspine.structured.base import Fact, FactStore, SourceFacts

if TYPE_CHECKING:
    from ragspine.llm.base import LLMProvider

RESTRICTED_MARKER = "board-only figure: the Kestrel Japan merger with Kestrel China"


def fact(metric: str, entity: str, period: str, value: str, unit: str, source: str, locator: str, sensitivity: str = "INTERNAL",
         channel: str = "total") -> Fact:
    return Fact(metric, entity, period, Decimal(value), source, locator, "2024-10-30", unit, channel, sensitivity)


def sample_facts() -> list[SourceFacts]:
    """Revenue of both subsidiaries (2024Q3), operating profit of one, a margin in percent, China's
    revenue in another unit for 2024Q2, and a RESTRICTED group figure."""
    return [
        SourceFacts("kestrel/china-q3-2024", [
            fact("revenue", "KESTREL_CN", "2024Q3", "60", "EUR_M", "kestrel/china-q3-2024", "table 1"),
            fact("operating_profit", "KESTREL_CN", "2024Q3", "6.5", "EUR_M", "kestrel/china-q3-2024", "table 2"),
            fact("gross_margin", "KESTREL_CN", "2024Q3", "38", "percent", "kestrel/china-q3-2024", "para 3"),
            fact("revenue", "KESTREL_CN", "2024Q2", "4.1", "CNY_100M", "kestrel/china-q3-2024", "table 5"),
        ]),
        SourceFacts("kestrel/japan-q3-2024", [
            fact("revenue", "KESTREL_JP", "2024Q3", "40.25", "EUR_M", "kestrel/japan-q3-2024", "p. 2"),
            fact("gross_margin", "KESTREL_JP", "2024Q3", "44", "percent", "kestrel/japan-q3-2024", "p. 3"),
            fact("revenue", "KESTREL_JP", "2024Q2", "39", "EUR_M", "kestrel/japan-q3-2024", "p. 4"),
        ]),
        SourceFacts("kestrel/board-memo-q3", [
            fact("operating_profit", "KESTREL_JP", "2024Q3", "-2", "EUR_M", "kestrel/board-memo-q3", "item 4", "RESTRICTED"),
        ]),
    ]


def _values(result: Any) -> Iterable[Any]:
    """Every member/row/derivation fact of a graph utility's result."""
    yield from getattr(result, "members", ())
    yield from getattr(result, "rows", ())
    stack = [result.root] if getattr(result, "root", None) is not None else []
    while stack:
        step = stack.pop()
        if step.fact is not None:
            yield step.fact
        stack.extend(step.inputs)


def assert_numbers_are_stored_facts(result: Any, store: FactStore) -> None:
    """See the module docstring."""
    stored = {(f.entity, f.metric, f.period, f.source_doc_id, f.source_locator): f
              for f in store.iter_facts(include_restricted=True)}
    for member in _values(result):
        if not member.found:
            assert not member.value and not member.source_doc_id, f"a missing member carries a value: {member}"
            continue
        matches = [f for key, f in stored.items() if key[0] == member.entity and key[2] == member.period
                   and key[3:] == (member.source_doc_id, member.source_locator) and Decimal(member.value) == f.value]
        assert matches, f"{member.entity} {member.value} {member.unit} is no stored fact of {member.source_doc_id} ({member.source_locator})"
        assert not any(is_restricted(f.sensitivity) for f in matches), f"{member.entity} shows a RESTRICTED fact"
    total = getattr(result, "total", "")
    members = list(getattr(result, "members", ()))
    if total:
        assert members and all(m.found for m in members), "a total while a member is missing"
        assert Decimal(total) == sum((Decimal(m.value) for m in members), Decimal(0)), f"the total {total} is not the members' sum"
    for edge in getattr(result, "relations", ()):
        assert edge.citable, f"a model-derived edge is cited: {edge}"


@dataclass
class SpyChunk:
    chunk_id: str
    doc_id: str
    text: str
    source_locator: str
    sensitivity: str = "INTERNAL"


def spy_chunks() -> list[SpyChunk]:
    """Two open chunks naming two entities each, and a RESTRICTED one naming them too."""
    return [
        SpyChunk("cn#1", "kestrel/china-q3-2024", "Kestrel China supplies gearboxes to Kestrel Japan.", "para 1"),
        SpyChunk("memo#4", "kestrel/board-memo-q3", f"{RESTRICTED_MARKER}; 红隼中国 and ケストレル日本.", "item 4", "restricted"),
        SpyChunk("jp#2", "kestrel/japan-q3-2024", "Kestrel Japan and Kestrel Robotics share a plant.", "p. 2"),
    ]


def assert_no_restricted_text_sent(make_extractor: Callable[[Any], Any], provider: LLMProvider) -> None:
    """``make_extractor(provider)`` given :func:`spy_chunks`: ``provider`` (a recording double,
    e.g. ``ScriptedLLMProvider``) never receives the RESTRICTED chunk's text, and no edge cites it."""
    edges = make_extractor(provider).extract(spy_chunks())
    prompts = list(getattr(provider, "prompts", []))
    assert not any(RESTRICTED_MARKER in p for p in prompts), "RESTRICTED text reached the model"
    assert not any(e.chunk_id == "memo#4" or e.source_doc_id == "kestrel/board-memo-q3" for e in edges), "an edge cites a RESTRICTED chunk"


def assert_edges_cite_their_chunk(edges: Iterable[Edge], chunks: Iterable[SpyChunk]) -> None:
    """See the module docstring."""
    given = {(c.doc_id, c.source_locator, c.chunk_id) for c in chunks if not is_restricted(c.sensitivity)}
    for edge in edges:
        assert (edge.source_doc_id, edge.source_locator, edge.chunk_id) in given, f"{edge} cites no chunk it was given"
        if edge.derivation == "model":
            assert not edge.verified and not edge.citable, f"a model edge is not stamped unverified: {edge}"
