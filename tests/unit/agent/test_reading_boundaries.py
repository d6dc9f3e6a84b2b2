"""The agent never answers another fact than the one asked: a glossary form inside a longer term
is not that metric, a year inside a unit is not the period, a function word is not an entity,
period phrases of any length read as ``query_metric`` reads them, and two metrics, entities or
periods are named as ambiguous — each finding of the evaluation that answered 21 questions
with the wrong stored fact, in English, Chinese and Japanese."""

from __future__ import annotations

import pytest

from ragspine.agent import Agent
from ragspine.agent.reading import read_question
from ragspine.agent.spotting import TermSpotter, unit_year_spans
from ragspine.agent.structured import StructuredPath
from ragspine.stores.sqlite import SQLiteDatabase
from ragspine.structured import Glossary, StructuredChannel, ingest_facts, make_fact_store
from ragspine.structured.periods import fold, read_period
from ragspine.structured.result import has_numeral

GLOSSARY = Glossary.from_mapping({
    "metrics": {
        "inflation": {"en": ["inflation", "inflation rate"], "zh": ["通胀", "通胀率", "通货膨胀率"], "ja": ["インフレ率", "インフレ"]},
        "real_gdp": {"en": ["real GDP"], "zh": ["实际GDP"], "ja": ["実質GDP"]},
        "unemployment": {"en": ["unemployment rate", "unemployment"], "zh": ["失业率"], "ja": ["失業率"]},
        "population": {"en": ["population"], "zh": ["人口"], "ja": ["人口"]},
        "capital": {"en": ["capital stock", "capital"], "zh": ["资本存量", "资本"], "ja": ["資本ストック", "資本"]},
        "investment": {"en": ["gross investment", "investment"], "zh": ["总投资"], "ja": ["総投資"]},
        "revenue": {"en": ["revenue", "sales"], "zh": ["收入", "营业收入"], "ja": ["売上", "売上高"]},
    },
    "entities": {
        "US": {"en": ["US", "United States", "the US"], "zh": ["美国"], "ja": ["米国", "アメリカ"]},
        "JP": {"en": ["Japan"], "zh": ["日本"], "ja": ["日本"]},
        "GM": {"en": ["GM", "General Motors"], "zh": ["通用汽车"], "ja": ["ゼネラルモーターズ"]},
    },
})
SPOTTER = TermSpotter(GLOSSARY)


@pytest.mark.parametrize(("question", "term"), [
    ("What was US core inflation in 2008?", "core inflation"),
    ("What were US inflation expectations in 2008?", "inflation expectations"),
    ("What was US real GDP growth in 2008?", "real gdp growth"),
    ("How many unemployment claims were there in the US in 2008?", "unemployment claims"),
    ("What was GM's cost of sales in 1950?", "cost of sales"),
    ("What was the growth in revenue of GM in 1950?", "growth in revenue"),
    ("2008年美国的劳动人口是多少？", "劳动人口"),
    ("2008年の日本の労働人口は？", "労働人口"),
    ("1950年のGMの自己資本はいくらですか", "自己資本"),
    ("2008年美国的通胀预期是多少？", "通胀预期"),
    ("2008年美国的核心通胀率是多少？", "核心通胀率"),
    ("2008年の米国の期待インフレ率は？", "期待インフレ率"),
    ("1950年のGMの売上原価は？", "売上原価"),
    ("1950年通用汽车的营业外收入是多少？", "营业外收入"),
])
def test_a_form_inside_a_longer_term_is_not_that_metric(question, term) -> None:
    reading = read_question(question, SPOTTER)
    assert reading.metric is None and reading.unread == (("metric", term),)


@pytest.mark.parametrize(("question", "metric"), [
    ("What was US inflation in 2008?", "inflation"),
    ("What was the US inflation rate in 2008?", "inflation"),
    ("How much did US inflation rise in 2008?", "inflation"),
    ("What was the value of US real GDP in 2008?", "real_gdp"),
    ("What was GM's gross investment in 1950?", "investment"),
    ("How much revenue did GM book in 1950?", "revenue"),
    ("Tell me the total revenue of GM for 1950.", "revenue"),
    ("How high was US inflation in 2008?", "inflation"),
    ("Please give me the US unemployment rate for the third quarter of 2008.", "unemployment"),
    ("What did US inflation look like in 2008?", "inflation"),
    ("2008年美国的通胀率是多少？", "inflation"),
    ("美国2008年人口为什么增长？", "population"),
    ("2008年の日本の人口はいくらですか", "population"),
    ("1950年のGMの売上高の推移", "revenue"),
    ("通用汽车1950年的收入是多少", "revenue"),
])
def test_a_form_standing_as_its_own_term_is_read(question, metric) -> None:
    reading = read_question(question, SPOTTER)
    assert reading.clear and reading.metric is not None and reading.metric.key == metric


@pytest.mark.parametrize("question", [
    "In 1947 dollars, what was GM's gross investment in 1950?",
    "What was GM's gross investment in 1950, in 1947 dollars?",
    "What was GM's gross investment in 1950 at 1947 prices?",
    "What was GM's gross investment in 1950 (base year 1947)?",
    "以1947年美元计，通用汽车1950年的总投资是多少？",
    "1947年不变价格下，通用汽车1950年的总投资是多少？",
    "1947年ドル換算で、GMの1950年の総投資はいくらですか",
])
def test_a_year_inside_a_unit_is_not_the_period(question) -> None:
    reading = read_question(question, SPOTTER)
    assert reading.clear and reading.slots["period"] == "1950", (reading.slots, reading.ambiguous)
    assert unit_year_spans(fold(question))


@pytest.mark.parametrize(("question", "entity"), [
    ("Can you tell us Japan's real GDP in Q3 2008?", "JP"),
    ("Could you show us the unemployment rate of Japan in 2008?", "JP"),
    ("What was the US unemployment rate in 2008?", "US"),
    ("What was US real GDP in 2008?", "US"),
])
def test_a_function_word_is_never_an_entity(question, entity) -> None:
    reading = read_question(question, SPOTTER)
    assert reading.clear and reading.entity is not None and reading.entity.key == entity


@pytest.mark.parametrize(("phrase", "key"), [
    ("the second quarter of fiscal year 2008", "2008Q2"),  # 38 characters: longer than the old limit of 32
    ("the third quarter of fiscal year 2008", "2008Q3"),
    ("Q3 of 2008", "2008Q3"),
])
def test_a_long_period_phrase_reads_as_query_metric_reads_it(phrase, key) -> None:
    assert read_period(phrase).key == key
    reading = read_question(f"What was US real GDP in {phrase}?", SPOTTER)
    assert reading.clear and reading.slots["period"] == key


@pytest.mark.parametrize(("question", "slot"), [
    ("What was US real GDP in 2008 and in 2009?", "period"),
    ("What was US real GDP in 2008 compared with 2007?", "period"),
    ("What was real GDP of the US and Japan in 2008?", "entity"),
    ("What were US inflation and unemployment in 2008?", "metric"),
    ("2008年美国和日本的实际GDP是多少？", "entity"),
    ("2008年と2009年の米国の実質GDPは？", "period"),
])
def test_two_values_of_one_slot_are_ambiguous_never_the_first(question, slot) -> None:
    reading = read_question(question, SPOTTER)
    assert not reading.clear and [s for s, _ in reading.ambiguous] == [slot]


ROWS = [("inflation", "US", "2008", "3.8"), ("revenue", "GM", "1950", "100"), ("investment", "GM", "1947", "50"),
        ("investment", "GM", "1950", "70"), ("real_gdp", "US", "2008Q3", "13000"), ("real_gdp", "JP", "2008Q3", "500"),
        ("population", "US", "2008", "304"), ("capital", "GM", "1950", "42"), ("real_gdp", "US", "2008Q2", "12900")]


@pytest.fixture()
def agent(tmp_path):
    db = SQLiteDatabase(tmp_path / "facts.db")
    db.init_schema()
    store = make_fact_store("lib", database=db)
    ingest_facts(store, [{"metric": m, "entity": e, "period": p, "value": v, "unit": "", "source_doc_id": f"src/{m}-{e}-{p}",
                          "source_locator": "table", "valid_as_of": "2024-01-01"} for m, e, p, v in ROWS], glossary=GLOSSARY)
    yield Agent(structured=StructuredPath({"lib": StructuredChannel(store, GLOSSARY)}), glossary=GLOSSARY)
    db.close()


@pytest.mark.parametrize(("question", "value"), [
    ("What was US inflation in 2008?", "3.8"),
    ("In 1947 dollars, what was GM's gross investment in 1950?", "70"),
    ("以1947年美元计，通用汽车1950年的总投资是多少？", "70"),
    ("1947年ドル換算で、GMの1950年の総投資はいくらですか", "70"),
    ("Can you tell us Japan's real GDP in Q3 2008?", "500"),
    ("What was US real GDP in the second quarter of fiscal year 2008?", "12900"),
])
def test_the_agent_answers_the_fact_asked(agent, question, value) -> None:
    answer = agent.answer(question)
    assert answer.structured is not None and answer.structured.result.value == value, answer.text


@pytest.mark.parametrize(("question", "param", "shown"), [
    ("What was US core inflation in 2008?", "metric", "core inflation"),
    ("What was GM's cost of sales in 1950?", "metric", "cost of sales"),
    ("2008年美国的劳动人口是多少？", "metric", "劳动人口"),
    ("1950年のGMの自己資本はいくらですか", "metric", "自己資本"),
    ("What was US real GDP in 2008 and in 2009?", "period", None),
    ("What was real GDP of the US and Japan in Q3 2008?", "entity", None),
    ("2008年和2009年美国的实际GDP分别是多少？", "period", None),
    ("2008年と2009年の米国の実質GDPは？", "period", None),
])
def test_the_agent_refuses_naming_the_term_or_the_ambiguity(agent, question, param, shown) -> None:
    answer = agent.answer(question)
    result = answer.structured.result
    assert answer.route == "structured" and result.status == "unrecognized_param" and result.params == (param,)
    assert not has_numeral(answer.text) and not answer.sources
    if shown is not None:
        assert dict(result.named) == {param: shown} and shown in answer.text
    else:
        assert result.ambiguous == (param,) and ("more than one" in answer.text or "多个" in answer.text or "複数" in answer.text)


@pytest.mark.parametrize("question", [
    "What was Kestrel's cost of sales in Q3 2024?", "ケストレルの2024年第3四半期の売上原価は？",
    "红隼2024年第三季度的营业外收入是多少？", "What was Kestrel's gross sales in Q3 2024?", "红隼2024年第三季度的营业收入成本是多少？",
])
def test_the_demo_glossary_never_answers_revenue_for_a_longer_term(make_agent, question) -> None:
    agent, _ = make_agent()
    answer = agent.answer(question)
    assert answer.route == "structured" and answer.structured.result.status in ("not_found", "unrecognized_param")
    assert not has_numeral(answer.text)
    assert answer.structured.result.metric != "revenue" and not answer.sources


@pytest.mark.parametrize(("question", "term"), [
    ("美国2008年人口的增长率是多少？", "人口的增长率"),
    ("2008年美国人口增长率是多少", "人口增长率"),
    ("2008年の米国の人口の増加率は？", "人口の増加率"),
    ("2008年の米国の人口増加率は", "人口増加率"),
    ("What was the US population growth in 2008?", "population growth"),
    ("What was the US population change in 2008?", "population change"),
    ("What was the growth of the US population in 2008?", "growth of the us population"),
])
def test_a_change_or_a_rate_of_a_metric_is_another_metric(question, term) -> None:
    reading = read_question(question, SPOTTER)
    assert reading.metric is None and reading.unread == (("metric", term),)


@pytest.mark.parametrize("question", [
    "How did US population change in 2008?", "Why did the US population rise in 2008, and by how much?",
    "美国2008年的人口是多少", "2008年美国的人口的数据是多少", "What was the value of the US population in 2008?",
])
def test_a_verb_of_change_or_a_word_naming_the_value_leaves_the_metric_alone(question) -> None:
    reading = read_question(question, SPOTTER)
    assert reading.clear and reading.metric is not None and reading.metric.key == "population"
