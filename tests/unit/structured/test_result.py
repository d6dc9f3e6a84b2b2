"""The three statuses, and the refusal without numerals in every language."""

from __future__ import annotations

import itertools
import re
from dataclasses import replace
from decimal import Decimal

import pytest

from ragspine.structured.base import StoredFact
from ragspine.structured.glossary import Glossary
from ragspine.structured.prose import found_prose, period_label
from ragspine.structured.result import (
    FOUND,
    LANGUAGES,
    NOT_FOUND,
    NOT_FOUND_TEXT,
    PARAMS,
    MetricResult,
    has_numeral,
    not_found,
    unrecognized,
)

DIGITS = (re.compile(r"\d"), re.compile(r"[０-９]"))


def numeral_free(text: str) -> bool:
    return not any(p.search(text) for p in DIGITS) and not has_numeral(text)


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_locales_refusal_has_no_digit(language: str) -> None:
    result = not_found(language)
    assert result.status == NOT_FOUND and result.text == NOT_FOUND_TEXT[language] and numeral_free(result.text)


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_unrecognized_message_has_no_digit(language: str) -> None:
    for n in range(1, len(PARAMS) + 1):
        for params in itertools.combinations(PARAMS, n):
            result = unrecognized(params, language, {"metric": ["revenue", "营收"]})
            assert numeral_free(result.text) and result.params == params
            assert all(numeral_free(s) for s in [*result.to_dict()["suggestions"], *result.params])
            named = unrecognized(params, language, named={p: "cost of sales" for p in params}, ambiguous=params)
            assert numeral_free(named.text) and named.ambiguous == params and "cost of sales" in named.text


def test_a_named_term_holding_a_numeral_is_not_shown() -> None:
    result = unrecognized(["metric", "period"], "en", named={"metric": "Q3 growth", "period": "third quarter"})
    assert result.named == (("period", "third quarter"),) and "Q3" not in result.text and numeral_free(result.text)


def test_has_numeral_sees_every_kind_of_number() -> None:
    for text in ("0", "٣", "３", "三", "万", "〇", "Ⅲ", "½", "²", "第二季度"):
        assert has_numeral(text), text
    for text in ("revenue", "营收", "売上高", "ケストレル", "Q", "", "全部渠道"):
        assert not has_numeral(text), text


def test_suggestions_holding_a_numeral_are_dropped_not_shown() -> None:
    result = unrecognized(["metric", "entity"], "en", {"metric": ["K2 arms", "revenue"], "entity": ["三菱", "Ⅳ Corp"]})
    assert result.suggestions == (("metric", ("revenue",)),)
    assert "K2" not in result.text and "三" not in result.text


def test_the_result_type_refuses_a_numeral_or_a_fact_outside_found() -> None:
    base = not_found("en")
    for changes in ({"text": "about 180"}, {"text": "约１８０"}, {"text": "三つ"}, {"value": "1"}, {"source_doc_id": "s"},
                    {"status": "maybe"}, {"params": ("metric",)}):
        with pytest.raises(ValueError):
            replace(base, **changes)
    with pytest.raises(ValueError):
        unrecognized([])
    with pytest.raises(ValueError):
        MetricResult(FOUND, "Revenue was 182.")  # a found answer carries its provenance
    with pytest.raises(ValueError):
        unrecognized(["price"])


@pytest.mark.parametrize(("key", "en", "zh", "ja"), [
    ("2024Q3", "Q3 2024", "2024年第三季度", "2024年第3四半期"), ("2024", "2024", "2024年", "2024年"),
    ("2024-07", "July 2024", "2024年7月", "2024年7月"), ("FY2024", "FY2024", "2024财年", "2024年度"),
    ("FY2024Q3", "Q3 FY2024", "2024财年第三季度", "2024年度第3四半期"), ("H1", "H1", "H1", "H1"),
])
def test_period_labels(key: str, en: str, zh: str, ja: str) -> None:
    assert (period_label(key, "en"), period_label(key, "zh"), period_label(key, "ja")) == (en, zh, ja)


def test_found_prose_is_the_stored_fact_in_each_language() -> None:
    g = Glossary.default()
    fact = StoredFact("revenue", "KESTREL", "2024Q3", Decimal("182.50"), "kestrel/q3", "para 2", "2024-10-30", unit="EUR_M",
                      channel="direct")
    texts = {lang: found_prose(fact, g, lang) for lang in LANGUAGES}
    assert texts["en"] == ("Kestrel Robotics revenue for Q3 2024 (direct sales): 182.50 million euros"
                           " (source: kestrel/q3, para 2; valid as of 2024-10-30).")
    assert texts["zh"] == "红隼机器人2024年第三季度（直销）的营收为182.50百万欧元（来源：kestrel/q3，para 2；数据截至 2024-10-30）。"
    assert texts["ja"].startswith("ケストレル・ロボティクスの2024年第3四半期（直販）の売上高は182.50百万ユーロです")
    unknown_unit = replace(fact, unit="widgets", channel="total")
    assert "182.50 widgets" in found_prose(unknown_unit, g, "zh") and "（直销）" not in found_prose(unknown_unit, g, "zh")
