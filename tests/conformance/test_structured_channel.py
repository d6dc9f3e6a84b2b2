"""The structured channel's conformance pack, on SQLite, PostgreSQL 18 and PostgreSQL 15.

* the FactStore contract (``ragspine.testing.FactStoreConformance``);
* **no invented numbers**: every ``not_found`` / ``unrecognized_param`` result carries no
  numeral — fuzzed with hypothesis over glossary-adjacent inputs in English, Chinese and
  Japanese — and every ``found`` answer's numbers come from the stored fact;
* **provenance**: every ``found`` answer resolves to the one stored, active, non-RESTRICTED fact;
* **RESTRICTED facts isolated**: a key held only by a RESTRICTED fact reads exactly like an
  absent one;
* **library isolation** and **replace atomicity** (the store's invariants).

Each check is a plain function (``ragspine.testing.structured_channel``,
``ragspine.testing.fact_store``); each has an inverse test running it on a deliberately leaky
implementation (``leaky_structured.py``), which must fail it (no vacuous pass).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragspine.stores.sqlite import SQLiteDatabase
from ragspine.structured import FOUND, Glossary, MetricResult, StructuredChannel, ingest_facts, make_fact_store
from ragspine.structured.result import LANGUAGES, NOT_FOUND
from ragspine.testing import FactStoreConformance
from ragspine.testing.fact_store import assert_libraries_isolated, assert_lookup_hides_restricted, assert_replace_is_atomic
from ragspine.testing.structured_channel import assert_no_numeral, assert_provenance, assert_restricted_isolated
from tests.conformance.leaky_structured import (
    EchoingChannel,
    EmbellishingChannel,
    GuessingChannel,
    LibraryBlindStore,
    MisattributingChannel,
    NonAtomicStore,
    RestrictedLeakingStore,
    unchecked,
)

GLOSSARY = Glossary.default()

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
    out = [dict(zip(FIELDS, r, strict=False)) for r in ROWS]
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


def check_channel(channel: Any, *inputs: Any, **kwargs: Any) -> Any:
    result = channel.query_metric(*inputs, **kwargs)
    assert_no_numeral(result, *inputs, *kwargs.values())
    assert_provenance(result, channel.store, GLOSSARY)
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


def stored_forms(section: str, keys: list[str]) -> st.SearchStrategy[str]:
    return st.sampled_from(sorted({f for k in keys for f in GLOSSARY.terms[section][k].forms}))


STORED_PERIODS = ["2024Q3", "Q3 2024", "2024年第三季度", "２０２４年第３四半期", "3Q24", "2024年度", "FY24", "2024年度第2四半期",
                  "last quarter", "上季度", "去年三季度", "前年度", "前期"]
AS_OF_DATES = ["2024-11-15", "2025-03-01", "２０２４-１２-３１", "2026-02-01"]


@st.composite
def queries(draw: Any) -> tuple[Any, ...]:
    """A query on stored keys (so that found and not_found happen), with zero to two of its
    five inputs replaced by a glossary-adjacent near miss (so that unrecognized_param does)."""
    metric = draw(stored_forms("metrics", ["revenue", "gross_margin", "order_intake", "net_profit"]))
    entity = draw(stored_forms("entities", ["KESTREL", "KESTREL_CN", "KESTREL_JP"]))
    period = draw(st.sampled_from(STORED_PERIODS))
    channel = draw(st.one_of(st.none(), stored_forms("channels", ["total", "direct"])))
    as_of = draw(st.one_of(st.none(), st.sampled_from(AS_OF_DATES)))
    for name in draw(st.sets(st.sampled_from(["metric", "entity", "period", "channel", "as_of"]), max_size=2)):
        if name == "metric":
            metric = draw(adjacent(_forms("metrics")))
        elif name == "entity":
            entity = draw(adjacent(_forms("entities")))
        elif name == "period":
            period = draw(PERIODS)
        elif name == "channel":
            channel = draw(adjacent(_forms("channels")))
        else:
            as_of = draw(AS_OF)
    return metric, entity, period, channel, as_of, draw(st.sampled_from([None, *LANGUAGES]))


def test_fuzzed_inputs_never_yield_an_invented_number(channel) -> None:
    seen: set[str] = set()

    @settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(queries())
    def check(query: tuple[Any, ...]) -> None:
        metric, entity, period, channel_, as_of, language = query
        result = check_channel(channel, metric, entity, period, channel_, as_of=as_of, language=language)
        seen.add(result.status)
        if result.status == FOUND:
            assert (result.metric, result.entity, result.period) not in RESTRICTED_KEYS

    check()
    assert seen == {"found", "not_found", "unrecognized_param"}, seen  # the fuzz reached every status


# -- inverse cases: each check fails on a leaky implementation ----------------------------------
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
