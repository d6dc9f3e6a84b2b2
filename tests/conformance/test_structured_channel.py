"""The structured channel's conformance pack, on SQLite, PostgreSQL 18 and PostgreSQL 15.

* the FactStore contract (``ragspine.testing.FactStoreConformance``);
* **no invented numbers**: every ``not_found`` / ``unrecognized_param`` result carries no
  numeral — fuzzed with hypothesis over glossary-adjacent inputs in English, Chinese and
  Japanese — and every ``found`` answer's numbers come from the stored fact;
* **provenance**: every ``found`` answer resolves to the one stored, active, non-RESTRICTED fact;
* **RESTRICTED facts isolated**: a key held only by a RESTRICTED fact reads exactly like an
  absent one;
* **library isolation** and **replace atomicity** (the store's invariants).

Each check is a plain function; each has an inverse test running it on a deliberately leaky
implementation, which must fail it (no vacuous pass).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragspine.retrieval.sensitivity import is_restricted
from ragspine.stores.sqlite import SQLiteDatabase
from ragspine.structured import FOUND, Glossary, MetricResult, StructuredChannel, has_numeral, ingest_facts, make_fact_store
from ragspine.structured.base import SourceFacts
from ragspine.structured.prose import period_label
from ragspine.structured.result import LANGUAGES, NOT_FOUND, STATUSES
from ragspine.testing import FactStoreConformance
from ragspine.testing.fact_store import assert_libraries_isolated, assert_lookup_hides_restricted, assert_replace_is_atomic

GLOSSARY = Glossary.default()
ASCII_OR_FULL_WIDTH_DIGIT = (re.compile(r"\d"), re.compile(r"[０-９]"))

#: (metric, entity, period, channel, value, unit, source, locator, valid_as_of, sensitivity)
ROWS = [
    ("revenue", "KESTREL", "2024Q3", "", "182", "EUR_M", "kestrel/q3-2024-results", "para 2", "2024-10-30", "PUBLIC"),
    ("revenue", "KESTREL", "2024Q3", "direct", "120.5", "EUR_M", "kestrel/q3-2024-results", "table 1, row 2", "2024-10-30", ""),
    ("gross_margin", "KESTREL", "2024Q3", "", "41", "percent", "kestrel/q3-2024-results", "para 6", "2024-10-30", ""),
    ("revenue", "KESTREL_CN", "2024年第三季度", "", "3.1", "CNY_100M", "kestrel/china-q3-2024", "第一段", "2024-10-15", ""),
    ("revenue", "KESTREL_JP", "2024年度", "", "45.25", "EUR_M", "kestrel/japan-fy2024", "p. 3", "2025-05-12", ""),
    ("order_intake", "KESTREL", "2024Q3", "", "9", "EUR_M", "kestrel/board-memo-q3", "para 1", "2024-10-20", "RESTRICTED"),
    ("net_profit", "KESTREL", "2024Q3", "", "-3", "EUR_M", "kestrel/board-memo-q3", "para 2", "2024-10-20", "restricted"),
]
RESTRICTED_KEYS = [("order_intake", "KESTREL", "2024Q3"), ("net_profit", "KESTREL", "2024Q3")]
FIELDS = ("metric", "entity", "period", "channel", "value", "unit", "source_doc_id", "source_locator", "valid_as_of", "sensitivity")


def rows(library_value: str | None = None) -> list[dict[str, str]]:
    out = [dict(zip(FIELDS, r)) for r in ROWS]
    if library_value is not None:
        out[0]["value"] = library_value
    return out


@pytest.fixture(params=["sqlite", "postgresql18", "postgresql15"])
def database(request, tmp_path):
    if request.param == "sqlite":
        db: Any = SQLiteDatabase(tmp_path / "facts.db")
    else:
        from ragspine.stores.postgres import PostgresDatabase

        url, schema = request.getfixturevalue("pg_schema" if request.param == "postgresql18" else "pg15_schema")
        db = PostgresDatabase(url, schema=schema, pool_size=2)
    db.init_schema()
    yield db
    db.close()


@pytest.fixture
def fact_store_factory(database):
    return lambda library_id: make_fact_store(library_id, database=database)


@pytest.fixture
def channel(fact_store_factory):
    store = fact_store_factory("lib-a")
    ingest_facts(store, rows())
    return StructuredChannel(store, GLOSSARY)


class TestFactStoreBackends(FactStoreConformance):
    pass


# -- the checks ------------------------------------------------------------------------------
def strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in strings(k) + strings(v)]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in strings(v)]
    return []


def assert_no_numeral(result: Any, *inputs: object) -> None:
    """A result that is not ``found`` carries no numeral anywhere (``\\d``, full-width digits, any
    Unicode numeral) and does not echo an input holding one."""
    assert result.status in STATUSES, result.status
    if result.status == FOUND:
        return
    for text in strings(result.to_dict()):
        for pattern in ASCII_OR_FULL_WIDTH_DIGIT:
            assert not pattern.search(text), f"{result.status} carries a digit: {text!r}"
        assert not has_numeral(text), f"{result.status} carries a numeral: {text!r}"
    for value in inputs:
        if isinstance(value, str) and has_numeral(value):
            assert value.strip() not in result.text, f"{result.status} echoes the input {value!r}"


def assert_provenance(result: Any, store: Any) -> None:
    """A ``found`` answer is the one active, non-RESTRICTED stored fact of its keys, and every
    number in its prose is one that fact (or the glossary's labels of it) holds."""
    if result.status != FOUND:
        return
    matches = [f for f in store.iter_facts(include_restricted=True)
               if (f.metric, f.entity, f.period, f.channel) == (result.metric, result.entity, result.period, result.channel)]
    assert len(matches) == 1, f"found {result.metric}/{result.period} resolves to {len(matches)} stored facts"
    fact = matches[0]
    assert not is_restricted(fact.sensitivity), "a found answer is a RESTRICTED fact"
    stored = (format(fact.value, "f"), fact.unit, fact.source_doc_id, fact.source_locator, fact.valid_as_of)
    assert (result.value, result.unit, result.source_doc_id, result.source_locator, result.valid_as_of) == stored
    for part in (result.value, result.source_doc_id, result.source_locator, result.valid_as_of):
        assert part in result.text, f"the prose lacks {part!r}: {result.text!r}"
    lang = result.language
    labels = [GLOSSARY.label(s, k, lang) for s, k in (("metrics", fact.metric), ("entities", fact.entity),
                                                       ("units", fact.unit), ("channels", fact.channel))]
    held = " ".join([*stored, period_label(fact.period, lang), *labels])
    for number in re.findall(r"[0-9]+(?:\.[0-9]+)?", result.text):
        assert number in held, f"the prose states {number!r}, which the stored fact does not hold: {result.text!r}"


def assert_restricted_isolated(channel: Any, keys: list[tuple[str, str, str]]) -> None:
    """A key held only by a RESTRICTED fact answers exactly what an absent key answers."""
    for metric, entity, period in keys:
        for language in LANGUAGES:
            got = channel.query_metric(metric, entity, period, language=language)
            absent = channel.query_metric(metric, entity, "1999Q1", language=language)
            assert absent.status == NOT_FOUND
            assert got.to_dict() == absent.to_dict(), f"{metric}/{period}: a RESTRICTED fact shows ({got.status})"


def check_channel(channel: Any, *inputs: Any, **kwargs: Any) -> Any:
    result = channel.query_metric(*inputs, **kwargs)
    assert_no_numeral(result, *inputs, *kwargs.values())
    assert_provenance(result, channel.store)
    return result


# -- the pack --------------------------------------------------------------------------------
FOUND_QUERIES = [
    (("revenue", "Kestrel", "Q3 2024"), {}, "182", "en"),
    (("营收", "红隼机器人", "2024年第三季度"), {}, "182", "zh"),
    (("売上高", "ケストレル", "２０２４年第３四半期"), {}, "182", "ja"),
    (("revenue", "KSTR", "2024Q3", "direct sales"), {}, "120.5", "en"),
    (("毛利率", "红隼", "2024年Q3"), {}, "41", "zh"),
    (("revenue", "Kestrel China", "3Q24"), {}, "3.1", "en"),
    (("売上高", "ケストレル・ジャパン", "FY24"), {}, "45.25", "ja"),
    (("revenue", "Kestrel", "last quarter"), {"as_of": "2024-11-15"}, "182", "en"),
    (("营收", "红隼", "上季度"), {"as_of": "2024-12-31"}, "182", "zh"),
    (("营收", "红隼", "去年三季度"), {"as_of": "2025-03-01"}, "182", "zh"),
    (("売上高", "ケストレル・ジャパン", "前年度"), {"as_of": "2026-02-01"}, "45.25", "ja"),
    (("売上高", "ケストレル・ジャパン", "前期"), {"as_of": "2026-03-31"}, "45.25", "ja"),
]


@pytest.mark.parametrize(("inputs", "kwargs", "value", "language"), FOUND_QUERIES)
def test_found_answers_are_rebuilt_from_the_stored_fact(channel, inputs, kwargs, value, language) -> None:
    result = check_channel(channel, *inputs, **kwargs)
    assert (result.status, result.value, result.language) == (FOUND, value, language), result.text


def test_relative_periods_need_an_as_of_date(channel) -> None:
    for period in ("last quarter", "上季度", "去年三季度", "前年度", "前期", "先月"):
        result = check_channel(channel, "revenue", "Kestrel", period)
        assert (result.status, result.params) == ("unrecognized_param", ("period",)), period


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_refusal_in_every_language_is_digit_free(channel, language) -> None:
    cases = [("revenue", "Kestrel", "2023Q3"), ("revenue", "Kestrel", "２０２４年第５四半期"), ("revenu", "Kestrel", "Q3 2024"),
             ("revenue", "Kestrel 2", "2024Q3"), ("revenue", "Kestrel", "2024Q3", "channel 7"), ("K2 arms", "Kestrel9", "FY99999")]
    for inputs in cases:
        result = check_channel(channel, *inputs, language=language)
        assert result.status != FOUND and result.language == language
    assert check_channel(channel, "revenue", "Kestrel", "last quarter", as_of="2024-13-01", language=language).params == ("as_of",)


def test_unrecognized_names_the_inputs_and_only_suggests(channel) -> None:
    result = check_channel(channel, "revenu", "Kestrel", "Q3 2024", "onlin")
    assert result.params == ("metric", "channel") and result.metric == ""
    assert dict(result.suggestions)["metric"][0] == "revenue"  # listed, never substituted


def test_restricted_facts_are_isolated(channel) -> None:
    assert_restricted_isolated(channel, RESTRICTED_KEYS)
    assert_lookup_hides_restricted(make_fact_store("lib-r", database=channel.store.db))


def test_libraries_and_tenants_are_isolated(fact_store_factory) -> None:
    assert_libraries_isolated(fact_store_factory)
    a, b = fact_store_factory("tenant-a/kb"), fact_store_factory("tenant-b/kb")
    ingest_facts(a, rows())
    ingest_facts(b, rows(library_value="999"))
    for store, value in ((a, "182"), (b, "999")):
        assert check_channel(StructuredChannel(store, GLOSSARY), "revenue", "Kestrel", "2024Q3").value == value
    nobody = StructuredChannel(fact_store_factory("tenant-c/kb"), GLOSSARY)
    assert check_channel(nobody, "revenue", "Kestrel", "2024Q3").status == NOT_FOUND


def test_replace_is_atomic(fact_store_factory) -> None:
    assert_replace_is_atomic(fact_store_factory("lib-atomic"))


# -- fuzz: glossary-adjacent inputs in three languages -----------------------------------------
def _forms(section: str) -> list[str]:
    return sorted({form for term in GLOSSARY.terms[section].values() for form in term.forms})


DIGITS = st.sampled_from(["3", "2024", "２０２４", "９", "Q3", "三", "07", "1e3", "12,5"])
NOISE = st.lists(st.sampled_from(list("abcQ年度季第期月去上前今の的 -/'") + ["营收", "売上", "红隼"]), max_size=6).map("".join)


def adjacent(forms: list[str]) -> st.SearchStrategy[str]:
    form = st.sampled_from(forms)
    return st.one_of(
        form,
        st.builds(lambda f, d: f + d, form, DIGITS),
        st.builds(lambda d, f: d + f, DIGITS, form),
        st.builds(lambda f, n: f + n, form, NOISE),
        st.builds(lambda f: f[:-1] if len(f) > 1 else f, form),
        st.builds(str.upper, form),
        st.text(max_size=8),
    )


YEARS = st.sampled_from(["2023", "2024", "２０２４", "24", "1899", "99999"])
QUARTERS = st.sampled_from(["1", "3", "三", "３", "5", "0"])
PERIODS = st.one_of(
    st.builds("{}年第{}季度".format, YEARS, QUARTERS), st.builds("Q{} {}".format, QUARTERS, YEARS),
    st.builds("{}年度第{}四半期".format, YEARS, QUARTERS), st.builds("FY{}".format, YEARS), st.builds("{}年度".format, YEARS),
    st.builds("{}-{}".format, YEARS, st.sampled_from(["07", "7", "13", "00"])),
    st.sampled_from(["last quarter", "上季度", "去年三季度", "前年度", "前期", "今期", "先月", "last year", "前年", "next quarter"]),
    adjacent(["2024Q3", "FY2024", "2024年7月", "Q3 2024"]),
)
AS_OF = st.one_of(st.none(), st.sampled_from(["2024-11-15", "2025-03-01", "２０２４-１１-１５", "2024-13-45", "yesterday", "2024/11/15"]))


def test_fuzzed_inputs_never_yield_an_invented_number(channel) -> None:
    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(adjacent(_forms("metrics")), adjacent(_forms("entities")), PERIODS,
           st.one_of(st.none(), adjacent(_forms("channels"))), AS_OF, st.sampled_from([None, *LANGUAGES]))
    def check(metric: str, entity: str, period: str, channel_: str | None, as_of: str | None, language: str | None) -> None:
        result = check_channel(channel, metric, entity, period, channel_, as_of=as_of, language=language)
        if result.status == FOUND:
            assert (result.metric, result.entity, result.period) not in RESTRICTED_KEYS

    check()


# -- inverse cases: each check fails on a leaky implementation ----------------------------------
@dataclass(frozen=True)
class UncheckedResult:
    """A result type without MetricResult's guard (what a careless implementation returns)."""

    status: str
    text: str
    language: str = "en"
    metric: str = ""
    entity: str = ""
    period: str = ""
    channel: str = ""
    value: str = ""
    unit: str = ""
    source_doc_id: str = ""
    source_locator: str = ""
    valid_as_of: str = ""

    def to_dict(self) -> dict[str, str]:
        return dict(vars(self))


def unchecked(result: MetricResult, **changes: str) -> UncheckedResult:
    values = {k: v for k, v in result.to_dict().items() if k in UncheckedResult.__dataclass_fields__}
    return UncheckedResult(**{**values, **changes})


class EchoingChannel(StructuredChannel):
    def query_metric(self, metric: str, entity: str, period: str, channel: str | None = None, **kw: Any) -> Any:
        result = super().query_metric(metric, entity, period, channel, **kw)
        return result if result.found else unchecked(result, text=f"{result.text} ({period})")


class GuessingChannel(StructuredChannel):
    def query_metric(self, *args: Any, **kw: Any) -> Any:
        result = super().query_metric(*args, **kw)
        return result if result.found else unchecked(result, text="No exact value; it was probably about １８０.")


class EmbellishingChannel(StructuredChannel):
    def query_metric(self, *args: Any, **kw: Any) -> Any:
        result = super().query_metric(*args, **kw)
        return unchecked(result, text=result.text + " That is up 12 percent.") if result.found else result


class MisattributingChannel(StructuredChannel):
    def query_metric(self, *args: Any, **kw: Any) -> Any:
        result = super().query_metric(*args, **kw)
        return unchecked(result, source_doc_id="kestrel/press-release") if result.found else result


class RestrictedLeakingStore:
    """Forgets the RESTRICTED filter (and the channel above it forgets it too)."""

    def __init__(self, store: Any) -> None:
        self.store = store

    def lookup(self, metric: str, entity: str, period: str, channel: str = "total") -> list[Any]:
        return [f for f in self.store.iter_facts(include_restricted=True) if (f.metric, f.entity, f.period, f.channel) ==
                (metric, entity, period, channel)]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


class NonAtomicStore:
    """Replaces each source in its own transaction."""

    def __init__(self, store: Any) -> None:
        self.store = store

    def replace_facts(self, sources: list[SourceFacts]) -> int:
        return sum(self.store.replace_facts([s]) for s in sources)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


class LibraryBlindStore:
    """Falls back to another library's facts when its own has none."""

    def __init__(self, store: Any, other: Any) -> None:
        self.store, self.other = store, other

    def lookup(self, *key: str) -> list[Any]:
        return self.store.lookup(*key) or self.other.lookup(*key)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


def test_inverse_an_echoing_channel_fails_the_no_numeral_check(channel) -> None:
    leaky = EchoingChannel(channel.store, GLOSSARY)
    with pytest.raises(AssertionError, match="carries a (digit|numeral)"):
        check_channel(leaky, "revenue", "Kestrel", "２０２３年第３四半期")


def test_inverse_a_guessing_channel_fails_the_no_numeral_check(channel) -> None:
    with pytest.raises(AssertionError, match="carries a digit"):
        check_channel(GuessingChannel(channel.store, GLOSSARY), "revenue", "Kestrel", "2023Q3")


def test_inverse_embellished_or_misattributed_prose_fails_provenance(channel) -> None:
    with pytest.raises(AssertionError, match="does not hold"):
        check_channel(EmbellishingChannel(channel.store, GLOSSARY), "revenue", "Kestrel", "2024Q3")
    with pytest.raises(AssertionError):
        check_channel(MisattributingChannel(channel.store, GLOSSARY), "revenue", "Kestrel", "2024Q3")


def test_inverse_a_store_and_channel_leaking_restricted_facts_fail_isolation(channel) -> None:
    leaky_store = RestrictedLeakingStore(channel.store)
    with pytest.raises(AssertionError, match="RESTRICTED"):
        assert_lookup_hides_restricted(RestrictedLeakingStore(make_fact_store("lib-leak", database=channel.store.db)))

    class UnfilteredChannel(StructuredChannel):  # trusts the store: no second RESTRICTED filter
        def query_metric(self, metric: str, entity: str, period: str, channel: str | None = None, **kw: Any) -> Any:
            facts = self.store.lookup(metric, entity, period, channel or "total")
            if not facts:
                return super().query_metric(metric, entity, "1999Q1", channel, **kw)
            f = facts[0]
            return unchecked(super().query_metric("revenue", "KESTREL", "2024Q3"), metric=f.metric, value=format(f.value, "f"))

    with pytest.raises(AssertionError, match="RESTRICTED fact shows"):
        assert_restricted_isolated(UnfilteredChannel(leaky_store, GLOSSARY), RESTRICTED_KEYS)
    # the real channel over the leaky store still holds: its own filter drops the fact
    assert_restricted_isolated(StructuredChannel(leaky_store, GLOSSARY), RESTRICTED_KEYS)


def test_inverse_a_non_atomic_store_fails_the_atomicity_check(fact_store_factory) -> None:
    with pytest.raises(AssertionError, match="failed batch"):
        assert_replace_is_atomic(NonAtomicStore(fact_store_factory("lib-non-atomic")))


def test_inverse_a_library_blind_store_fails_isolation(fact_store_factory) -> None:
    stores: dict[str, Any] = {}

    def blind(library_id: str) -> Any:
        stores[library_id] = fact_store_factory(library_id)
        return LibraryBlindStore(stores[library_id], fact_store_factory("lib-b"))

    with pytest.raises(AssertionError, match="another library"):
        assert_libraries_isolated(blind)


def test_the_result_type_itself_refuses_a_numeral_outside_found() -> None:
    refusal = MetricResult(NOT_FOUND, "No recorded value.")
    for changes in ({"text": "No value; maybe 180."}, {"text": "没有数值，约１８０。"}, {"text": "見つかりません（三）"},
                    {"period": "2024Q3"}, {"value": "1"}):
        with pytest.raises(ValueError):
            replace(refusal, **changes)
