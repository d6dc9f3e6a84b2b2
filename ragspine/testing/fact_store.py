"""``FactStoreConformance``: the FactStore contract, one mixin per capability.

Fixture needed: ``fact_store_factory`` — ``factory(library_id) -> FactStore``; every store a
factory returns lives in one fresh namespace (two libraries share tables, not rows).

The invariants with a security meaning are plain functions raising ``AssertionError``
(:func:`assert_replace_is_atomic`, :func:`assert_libraries_isolated`,
:func:`assert_lookup_hides_restricted`), so that a test can prove each can fail by running it on
a deliberately broken store.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from decimal import Decimal
from typing import Callable

import pytest

from ragspine.errors import IngestError
from ragspine.structured.base import Fact, FactClashError, FactStore, SourceFacts

Factory = Callable[[str], FactStore]


def fact(metric: str = "revenue", period: str = "2024Q3", value: str = "182", *, source: str = "src", **fields: str) -> Fact:
    """A fact of entity ``KESTREL`` (the other fields overridable)."""
    values = {"entity": "KESTREL", "source_locator": "p. 1", "valid_as_of": "2024-10-30", "unit": "EUR_M", **fields}
    return Fact(metric=metric, period=period, value=Decimal(value), source_doc_id=source, **values)


def active(store: FactStore, source: str | None = None) -> list[tuple[str, str, str, int]]:
    """``(source, metric/period, value, version)`` of the active facts, RESTRICTED included."""
    return [(f.source_doc_id, f"{f.metric}/{f.period}", format(f.value, "f"), f.version)
            for f in store.iter_facts(source_doc_id=source, include_restricted=True)]


# -- the invariants, as functions a broken store can fail -----------------------------------------
def assert_replace_is_atomic(store: FactStore) -> None:
    """A batch that fails on its last source leaves every source of it as it was."""
    store.replace_facts([SourceFacts("a", [fact("revenue", source="a")]), SourceFacts("holder", [fact("gross_margin", source="holder")])])
    before = active(store)
    clashing = [SourceFacts("a", [fact("revenue", value="999", source="a")]),
                SourceFacts("b", [fact("gross_margin", value="7", source="b")])]  # held by "holder"
    with pytest.raises(FactClashError):
        store.replace_facts(clashing)
    assert active(store) == before, "a failed batch changed the facts"
    store.replace_facts([SourceFacts("a", [fact("revenue", value="183", source="a")])])
    assert active(store, "a") == [("a", "revenue/2024Q3", "183", 2)], "a failed batch advanced a version"


def assert_libraries_isolated(factory: Factory) -> None:
    """The same keys in two libraries: each library sees only its own facts."""
    a, b, empty = factory("lib-a"), factory("lib-b"), factory("lib-empty")
    a.replace_facts([SourceFacts("s", [fact(value="182", source="s")])])
    b.replace_facts([SourceFacts("s", [fact(value="999", source="s"), fact("gross_margin", value="41", source="s")])])
    assert [format(f.value, "f") for f in a.lookup("revenue", "KESTREL", "2024Q3")] == ["182"]
    assert [format(f.value, "f") for f in b.lookup("revenue", "KESTREL", "2024Q3")] == ["999"]
    assert a.lookup("gross_margin", "KESTREL", "2024Q3") == [], "a library sees another library's fact"
    assert empty.lookup("revenue", "KESTREL", "2024Q3") == [] and empty.iter_facts(include_restricted=True) == []
    assert {f.library_id for f in a.iter_facts()} == {"lib-a"} and a.count() == 1 and b.count() == 2
    assert empty.source_ids() == [] and empty.count(include_inactive=True) == 0


def assert_lookup_hides_restricted(store: FactStore) -> None:
    """A RESTRICTED fact (any spelling) is never returned by ``lookup`` or a default
    ``iter_facts``; with ``include_restricted`` it is there, stored as ``RESTRICTED``."""
    store.replace_facts([SourceFacts("memo", [
        fact("order_intake", value="9", source="memo", sensitivity="restricted "),
        fact("net_profit", value="5", source="memo", sensitivity="Restricted"),
    ]), SourceFacts("open", [fact("revenue", value="182", source="open", sensitivity="PUBLIC")])])
    for metric in ("order_intake", "net_profit"):
        assert store.lookup(metric, "KESTREL", "2024Q3") == [], f"lookup returned a RESTRICTED {metric}"
    assert [f.metric for f in store.iter_facts()] == ["revenue"], "iter_facts returned a RESTRICTED fact"
    hidden = store.iter_facts(include_restricted=True, source_doc_id="memo")
    assert {f.sensitivity for f in hidden} == {"RESTRICTED"} and len(hidden) == 2


def assert_lookalike_labels_hidden(store: FactStore) -> None:
    """Every label that looks like RESTRICTED (:mod:`ragspine.testing.lookalikes`) is stored
    as ``RESTRICTED`` and never looked up; one stored verbatim (a row from before labels were
    folded) is never looked up or listed either."""
    from ragspine.testing.lookalikes import RESTRICTED_LOOKALIKES, written_verbatim

    labels = list(RESTRICTED_LOOKALIKES.values())
    store.replace_facts([SourceFacts("memo", [fact(f"m{i}", value=str(i), source="memo", sensitivity=label)
                                              for i, label in enumerate(labels)]),
                         SourceFacts("open", [fact("revenue", source="open", sensitivity="PUBLIC")])])
    assert {f.sensitivity for f in store.iter_facts(include_restricted=True, source_doc_id="memo")} == {"RESTRICTED"}
    with written_verbatim():
        store.replace_facts([SourceFacts("legacy", [fact(f"v{i}", value=str(i), source="legacy", sensitivity=label)
                                                    for i, label in enumerate(labels)])])
    verbatim = store.iter_facts(include_restricted=True, source_doc_id="legacy")
    assert any(f.sensitivity == labels[0] for f in verbatim), "the label was not stored verbatim"
    for i in range(len(labels)):
        for metric in (f"m{i}", f"v{i}"):
            assert store.lookup(metric, "KESTREL", "2024Q3") == [], f"lookup returned {metric} ({labels[i]!r})"
    assert [f.metric for f in store.iter_facts()] == ["revenue"], "iter_facts returned a lookalike-labelled fact"


# -- the mixins ------------------------------------------------------------------------------
class FactStoreVersioningTests:
    def test_replace_versions_a_source_and_retires_the_old_rows(self, fact_store_factory: Factory) -> None:
        store = fact_store_factory("lib-v")
        store.init_schema()
        assert store.replace_facts([SourceFacts("s", [fact(source="s"), fact("gross_margin", value="41", source="s")])]) == 2
        assert store.replace_facts([SourceFacts("s", [fact(value="183", source="s")])]) == 1
        assert active(store) == [("s", "revenue/2024Q3", "183", 2)]
        every = store.iter_facts(include_inactive=True)
        assert sorted((f.metric, f.version, f.active) for f in every) == [
            ("gross_margin", 1, False), ("revenue", 1, False), ("revenue", 2, True)]
        assert store.count() == 1 and store.count(include_inactive=True) == 3
        assert store.replace_facts([SourceFacts("s", [])]) == 0  # retired: its version still advances
        assert active(store) == [] and store.source_ids() == []
        store.replace_facts([SourceFacts("s", [fact(source="s")])])
        assert active(store) == [("s", "revenue/2024Q3", "182", 4)]

    def test_values_come_back_exactly(self, fact_store_factory: Factory) -> None:
        store = fact_store_factory("lib-x")
        values = {"2024Q1": "182.50", "2024Q2": "1.5E+3", "2024Q3": "-0.0", "2024Q4": "0.000123", "2024": "-12345678901234567890.12"}
        store.replace_facts([SourceFacts("s", [fact(period=p, value=v, source="s") for p, v in values.items()])])
        got = {f.period: format(f.value, "f") for f in store.iter_facts()}
        assert got == {"2024Q1": "182.50", "2024Q2": "1500", "2024Q3": "0.0", "2024Q4": "0.000123", "2024": "-12345678901234567890.12"}

    def test_lookup_is_exact_on_every_key(self, fact_store_factory: Factory) -> None:
        store = fact_store_factory("lib-k")
        store.replace_facts([SourceFacts("s", [fact(source="s"), fact(value="120", source="s", channel="direct")])])
        assert [format(f.value, "f") for f in store.lookup("revenue", "KESTREL", "2024Q3")] == ["182"]
        assert [f.channel for f in store.lookup("revenue", "KESTREL", "2024Q3", "direct")] == ["direct"]
        for key in (("Revenue", "KESTREL", "2024Q3"), ("revenue", "kestrel", "2024Q3"), ("revenue", "KESTREL", "2024q3"),
                    ("revenue", "KESTREL", "2024Q3 "), ("revenue", "KESTREL", "2024")):
            assert store.lookup(*key) == [], key

    def test_sources_and_keys_move_between_sources_in_one_batch(self, fact_store_factory: Factory) -> None:
        store = fact_store_factory("lib-m")
        store.replace_facts([SourceFacts("a", [fact(source="a")])])
        store.replace_facts([SourceFacts("a", []), SourceFacts("b", [fact(value="190", source="b")])])
        assert active(store) == [("b", "revenue/2024Q3", "190", 1)] and store.source_ids() == ["b"]


class FactStoreIntegrityTests:
    def test_a_key_active_in_another_source_is_refused_and_nothing_is_written(self, fact_store_factory: Factory) -> None:
        store = fact_store_factory("lib-c")
        store.replace_facts([SourceFacts("a", [fact(source="a")])])
        with pytest.raises(FactClashError) as info:
            store.replace_facts([SourceFacts("c", [fact("gross_margin", source="c")]), SourceFacts("b", [fact(source="b")])])
        assert info.value.other_source == "a" and info.value.key.metric == "revenue"
        assert active(store) == [("a", "revenue/2024Q3", "182", 1)]

    def test_a_failed_batch_changes_nothing(self, fact_store_factory: Factory) -> None:
        assert_replace_is_atomic(fact_store_factory("lib-atomic"))

    @pytest.mark.parametrize("bad", [
        {"metric": ""}, {"entity": " "}, {"source_locator": ""}, {"valid_as_of": ""}, {"metric": "rev\x00enue"},
        {"value": Decimal("NaN")}, {"value": Decimal("Infinity")}, {"value": 182}, {"channel": ""},
    ])
    def test_invalid_facts_raise_before_any_write(self, fact_store_factory: Factory, bad: dict[str, object]) -> None:
        store = fact_store_factory("lib-bad")
        store.replace_facts([SourceFacts("s", [fact(source="s")])])
        with pytest.raises(IngestError):
            store.replace_facts([SourceFacts("s", [replace(fact(source="s"), **bad)])])  # type: ignore[arg-type]
        assert active(store) == [("s", "revenue/2024Q3", "182", 1)]

    def test_a_batch_names_a_source_once_and_a_key_once(self, fact_store_factory: Factory) -> None:
        store = fact_store_factory("lib-d")
        with pytest.raises(IngestError, match="twice"):
            store.replace_facts([SourceFacts("s", [fact(source="s")]), SourceFacts("s", [])])
        with pytest.raises(FactClashError):
            store.replace_facts([SourceFacts("s", [fact(source="s")]), SourceFacts("t", [fact(source="t")])])
        with pytest.raises(IngestError):
            store.replace_facts([SourceFacts("s", [fact(source="other")])])
        assert store.count(include_inactive=True) == 0

    def test_readers_never_see_half_a_replace(self, fact_store_factory: Factory) -> None:
        store = fact_store_factory("lib-r")
        periods = [f"2023-{m:02d}" for m in range(1, 13)]
        store.replace_facts([SourceFacts("s", [fact(period=p, value="0", source="s") for p in periods])])
        problems: list[str] = []
        done = threading.Event()

        def read() -> None:
            while not done.is_set():
                facts = store.iter_facts(source_doc_id="s")  # one statement: one snapshot
                values = {format(f.value, "f") for f in facts}
                if len(values) != 1 or len(facts) != len(periods):
                    problems.append(f"{values} / {len(facts)}")

        reader = threading.Thread(target=read)
        reader.start()
        try:
            for i in range(1, 15):
                store.replace_facts([SourceFacts("s", [fact(period=p, value=str(i), source="s") for p in periods])])
        finally:
            done.set()
            reader.join()
        assert problems == []


    def test_concurrent_replaces_of_one_source_serialize(self, fact_store_factory: Factory) -> None:
        store = fact_store_factory("lib-w")
        errors: list[BaseException] = []

        def write(tag: str) -> None:
            try:
                for i in range(8):
                    store.replace_facts([SourceFacts("s", [fact(value=f"{tag}{i}", source="s"), fact("gross_margin", source="s")])])
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=write, args=(tag,)) for tag in ("1", "2")]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        every = store.iter_facts(include_inactive=True)
        assert sorted({f.version for f in every}) == list(range(1, 17))  # every replace its own version
        assert [(f.metric, f.version) for f in store.iter_facts()] == [("revenue", 16), ("gross_margin", 16)]


class FactStoreIsolationTests:
    def test_libraries_are_isolated(self, fact_store_factory: Factory) -> None:
        assert_libraries_isolated(fact_store_factory)

    def test_restricted_facts_are_never_looked_up(self, fact_store_factory: Factory) -> None:
        assert_lookup_hides_restricted(fact_store_factory("lib-restricted"))

    def test_lookalike_labels_are_never_looked_up(self, fact_store_factory: Factory) -> None:
        assert_lookalike_labels_hidden(fact_store_factory("lib-lookalike"))


class FactStoreConformance(FactStoreVersioningTests, FactStoreIntegrityTests, FactStoreIsolationTests):
    """Every FactStore capability pack."""
