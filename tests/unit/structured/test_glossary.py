"""Controlled glossaries: forms in three languages and codes → one key; loud errors."""

from __future__ import annotations

import json

import pytest

from ragspine.errors import ConfigError
from ragspine.structured.glossary import Glossary, Match

G = Glossary.default()


@pytest.mark.parametrize(("section", "form", "key", "language"), [
    ("metrics", "revenue", "revenue", None), ("metrics", "Sales", "revenue", "en"), ("metrics", "营收", "revenue", "zh"),
    ("metrics", "営業収益", "revenue", "ja"), ("metrics", "売上高", "revenue", "ja"), ("metrics", "REV", "revenue", None),
    ("metrics", "rev", "revenue", None), ("metrics", "  Gross   Margin ", "gross_margin", "en"), ("metrics", "ＧＭ", "gross_margin", None),
    ("entities", "Kestrel Robotics", "KESTREL", "en"), ("entities", "红隼机器人", "KESTREL", "zh"),
    ("entities", "ケストレル・ロボティクス", "KESTREL", "ja"), ("entities", "KSTR", "KESTREL", None),
    ("entities", "红隼机器人中国区", "KESTREL_CN", "zh"), ("entities", "kestrel_jp", "KESTREL_JP", None),
    ("channels", "direct sales", "direct", "en"), ("channels", "直销", "direct", "zh"), ("channels", "直販", "direct", "ja"),
    ("channels", "all channels", "total", "en"), ("units", "百万欧元", "EUR_M", "zh"),
])
def test_forms_and_codes_name_one_key(section: str, form: str, key: str, language: str | None) -> None:
    assert G.match(section, form) == Match(key, language)


@pytest.mark.parametrize("form", ["revenu", "revenues", "营", "Kestrel Robotic", "", "  ", None, 7, ["revenue"], "x" * 201])
def test_near_misses_are_not_matched(form: object) -> None:
    assert G.metric(form) is None and G.entity(form) is None


def test_suggestions_are_listed_never_substituted() -> None:
    assert G.metric("revenu") is None
    assert G.suggest("metrics", "revenu")[0] == "revenue"
    assert G.suggest("metrics", "营", "zh") == ["营收"]
    assert G.suggest("entities", "Kestrl", "ja")[0] == "ケストレル・ロボティクス"
    assert G.suggest("metrics", "zzzz") == [] and G.suggest("metrics", None) == []


def test_labels_and_calendars() -> None:
    assert G.label("metrics", "revenue", "zh") == "营收" and G.label("metrics", "revenue", "ja") == "売上高"
    assert G.label("metrics", "revenue", "xx") == "revenue" and G.label("metrics", "unknown", "en") == "unknown"
    assert G.calendar("KESTREL_JP").start_month == 4 and G.calendar("KESTREL").is_calendar and G.calendar("nobody").is_calendar


def test_a_user_file_yaml_or_json(tmp_path) -> None:
    data = {
        "metrics": {"ebitda": {"en": ["EBITDA"], "zh": ["息税折旧摊销前利润"], "ja": ["EBITDA"], "codes": ["EB"]}},
        "entities": {"ACME": {"en": "Acme", "fiscal_year_start_month": 10, "fiscal_year_named_by": "end"}},
        "periods": {"2024Q3": {"en": ["autumn quarter 2024"]}, 2024: {"zh": ["龙年"]}},
    }
    (tmp_path / "g.json").write_text(json.dumps(data), encoding="utf-8")
    (tmp_path / "g.yaml").write_text("metrics:\n  ebitda: {en: [EBITDA]}\nperiods:\n  2024: {zh: [龙年]}\n", encoding="utf-8")
    g = Glossary.load(tmp_path / "g.json")
    assert g.metric("eb") == Match("ebitda") and g.entity("acme") == Match("ACME")  # the key itself: no language
    assert g.calendar("ACME").named_by == "end" and g.keys("channels") == ["total"]  # total is always there
    assert g.period_aliases == {"2024q3": "2024Q3", "autumn quarter 2024": "2024Q3", "2024": "2024", "龙年": "2024"}
    assert Glossary.load(tmp_path / "g.yaml").metric("EBITDA") == Match("ebitda")


@pytest.mark.parametrize(("data", "words"), [
    ([], "mapping of sections"),
    ({"metric": {}}, "unknown section 'metric'"),
    ({"metrics": ["revenue"]}, "must map each key"),
    ({"metrics": {"revenue": ["revenue"]}}, "give the forms by language"),
    ({"metrics": {"revenue": {"fr": ["chiffre d'affaires"]}}}, "unknown field 'fr'"),
    ({"metrics": {"revenue": {"en": [""]}}}, "non-empty strings"),
    ({"metrics": {"营收": {"en": ["revenue"]}}}, "a key is a letter"),
    ({"metrics": {"revenue": {"en": ["sales"]}, "turnover": {"en": ["Sales"]}}}, "'Sales' names both 'revenue' and 'turnover'"),
    ({"metrics": {"revenue": {"en": ["x"], "fiscal_year_start_month": 4}}}, "unknown field 'fiscal_year_start_month'"),
    ({"entities": {"ACME": {"fiscal_year_start_month": 13}}}, "within 1..12"),
    ({"periods": {"Q3": {"en": ["x"]}}}, "must be canonical"),
])
def test_a_bad_glossary_is_refused_with_the_place_and_the_fix(data: object, words: str) -> None:
    with pytest.raises(ConfigError, match=None) as info:
        Glossary.from_mapping(data, "g.yaml")
    assert words in str(info.value) and str(info.value).startswith("g.yaml")


def test_unreadable_files_name_themselves(tmp_path) -> None:
    (tmp_path / "bad.yaml").write_text("metrics: [", encoding="utf-8")
    (tmp_path / "latin.yaml").write_bytes(b"metrics: {rev: {en: [caf\xe9]}}")
    for name, words in (("missing.yaml", "cannot read"), ("bad.yaml", "not valid YAML"), ("latin.yaml", "not UTF-8")):
        with pytest.raises(ConfigError, match=words):
            Glossary.load(tmp_path / name)
