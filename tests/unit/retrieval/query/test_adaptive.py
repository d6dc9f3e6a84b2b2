"""Adaptive-RAG's deterministic classifier (comparison words in en/zh/ja, several entities,
periods or questions) and the opt-in LLM classifier (failure: single-shot)."""

from __future__ import annotations

import pytest

from ragspine.errors import BackendError, ConfigError
from ragspine.retrieval.query.adaptive import HeuristicComplexityClassifier, LLMComplexityClassifier, periods_in
from ragspine.retrieval.query.base import make_complexity_classifier
from ragspine.retrieval.query.decompose import LLMQueryDecomposer, QueryRewrite, keyword_query
from ragspine.testing.llm import ScriptedLLMProvider

ENTITIES = {"KESTREL": ["Kestrel", "红隼", "ケストレル"], "ACME": ["Acme", "艾克米", "アクメ"]}


@pytest.fixture
def classifier() -> HeuristicComplexityClassifier:
    return HeuristicComplexityClassifier(ENTITIES)


@pytest.mark.parametrize("question, signal", [
    ("Compare gearbox and motor revenue", "comparison"),
    ("gearbox vs motor margins", "comparison"),
    ("What is the difference between the two plants?", "comparison"),
    ("红隼和艾克米的营收", "entities"),
    ("比较一下今年和去年的营收", "comparison"),
    ("売上を前年と比較して", "comparison"),
    ("ケストレルとアクメの売上", "entities"),
    ("Revenue in 2023 and 2024", "periods"),
    ("Q3 2024 against Q3 2023 sales", "periods"),
    ("2024年第三季度和2023年第三季度的营收", "periods"),
    ("Why did sales fall? Who decided it?", "questions"),
])
def test_each_signal_routes_to_decomposition(classifier, question, signal):
    result = classifier.classify(question)
    assert result.decompose and signal in result.signals


@pytest.mark.parametrize("question", [
    "Why did gearbox revenue fall in Q3 2024?", "营收为什么下滑？", "Kestrel revenue in 2024年度", "売上高の推移", "",
])
def test_a_simple_question_is_single_shot(classifier, question):
    assert classifier.classify(question).route == "single"


def test_periods_count_a_year_with_its_quarter_once():
    assert periods_in("Q3 2024") == ["q32024"]
    assert periods_in("FY2024 and FY2023") == ["fy2024", "fy2023"]
    assert periods_in("2024年第三季度") == ["2024年第三季度"]


def test_the_default_glossary_is_the_shipped_one():
    assert HeuristicComplexityClassifier().classify("Kestrel China and Kestrel Japan orders").decompose


def test_the_llm_classifier_asks_once_and_degrades_to_single_shot():
    assert LLMComplexityClassifier(ScriptedLLMProvider("COMPLEX")).classify("q").decompose
    assert LLMComplexityClassifier(ScriptedLLMProvider("SIMPLE")).classify("q").route == "single"
    assert LLMComplexityClassifier(ScriptedLLMProvider("perhaps")).classify("compare a vs b").signals == ("degraded",)
    assert not LLMComplexityClassifier(ScriptedLLMProvider(error=BackendError("x"))).classify("q").decompose
    with pytest.raises(ConfigError, match="needs an LLM provider"):
        make_complexity_classifier("llm")
    assert make_complexity_classifier("none") is None


def test_the_decomposer_returns_two_or_more_sub_questions_or_nothing():
    provider = ScriptedLLMProvider("1. What was Kestrel's revenue?\n2. What was its margin?\n3. a\n4. b")
    assert LLMQueryDecomposer(provider, fanout=2).decompose("Kestrel revenue and margin") == [
        "What was Kestrel's revenue?", "What was its margin?"]
    assert LLMQueryDecomposer(ScriptedLLMProvider("Why?")).decompose("Why?") == []  # repeated alone: simple
    assert LLMQueryDecomposer(ScriptedLLMProvider("only one other")).decompose("q") == []
    assert LLMQueryDecomposer(ScriptedLLMProvider(error=BackendError("x"))).decompose("q") == []


def test_the_corrective_rewrite_uses_the_model_else_keywords():
    assert QueryRewrite(ScriptedLLMProvider("gearbox revenue decline")).rewrite("why did it fall") == ("gearbox revenue decline", "llm")
    assert QueryRewrite(ScriptedLLMProvider("")).rewrite("Why did the revenue fall?") == ("revenue fall", "keywords")
    assert QueryRewrite(None).rewrite("revenue fall") is None  # nothing new to search
    assert keyword_query("What is the gearbox's revenue in 2023?") == "gearbox s revenue 2023"
