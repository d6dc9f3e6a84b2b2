"""Automatic filter extraction: controlled vocabulary, the LLM adapter, safety, the factory."""

from __future__ import annotations

import pytest

from ragspine.errors import ConfigError
from ragspine.registries import FILTER_EXTRACTORS
from ragspine.retrieval.filtering.automatic import (
    ControlledVocabFilterExtractor,
    LLMFilterExtractor,
    make_filter_extractor,
    safe_extract,
)
from ragspine.retrieval.filtering.filters import FilterCondition, MetadataFilter
from ragspine.testing.llm import ScriptedLLMProvider

VOCAB = {
    "entity": {"ACME_CN": ["acme china", "艾克美"], "ACME_US": ["acme usa", "acme america"]},
    "period": {"2024-Q3": ["third quarter 2024", "q3 2024"]},
}


def conds(filt):
    return None if filt is None else set(filt.conditions)


# -- controlled vocabulary ------------------------------------------------------------------
@pytest.mark.parametrize(
    "query,expected",
    [
        ("Why did Acme China revenue fall?", {FilterCondition("entity", "eq", "ACME_CN")}),
        ("艾克美的营收", {FilterCondition("entity", "eq", "ACME_CN")}),
        ("acme_cn results", {FilterCondition("entity", "eq", "ACME_CN")}),  # the canonical value itself
        ("ACME USA in Q3 2024",
         {FilterCondition("entity", "eq", "ACME_US"), FilterCondition("period", "eq", "2024-Q3")}),
        ("acme china vs acme america",
         {FilterCondition("entity", "in", ("ACME_CN", "ACME_US"))}),
        ("nothing relevant here", None),
        ("acme chinatown", None),  # whole words only for ASCII forms
        ("", None),
    ],
)
def test_controlled_vocab_extractor(query, expected):
    assert conds(ControlledVocabFilterExtractor(VOCAB).extract(query)) == expected


def test_controlled_vocab_output_is_a_metadata_filter_and_deterministic():
    extractor = ControlledVocabFilterExtractor(VOCAB)
    out = extractor.extract("acme america acme china q3 2024")
    assert isinstance(out, MetadataFilter)
    assert out == extractor.extract("acme america acme china q3 2024")
    (entity,) = [c for c in out.conditions if c.field == "entity"]
    assert entity.value == ("ACME_CN", "ACME_US")  # sorted


# -- LLM adapter -------------------------------------------------------------------------------
Provider = ScriptedLLMProvider


@pytest.mark.parametrize(
    "answer,expected",
    [
        ('{"entity": "ACME_CN"}', {FilterCondition("entity", "eq", "ACME_CN")}),
        ('Here: {"entity": "ACME_US", "period": "2024-Q3"}',
         {FilterCondition("entity", "eq", "ACME_US"), FilterCondition("period", "eq", "2024-Q3")}),
        ('{"entity": "EVIL_CORP"}', None),  # outside the vocabulary: dropped
        ('{"entity": "ACME_CN", "sensitivity": "PUBLIC"}', {FilterCondition("entity", "eq", "ACME_CN")}),
        ('{"entity": ["ACME_CN", "ACME_US"]}', None),  # not a vocabulary value
        ('{"entity": "acme china"}', None),  # a surface form, not a canonical value
        ("{}", None),
        ("no json at all", None),
        ("[1, 2]", None),
        ("", None),
        (None, None),
    ],
)
def test_llm_extractor_keeps_only_vocabulary_values(answer, expected):
    assert conds(LLMFilterExtractor(Provider(answer), VOCAB).extract("q")) == expected


def test_llm_extractor_prompt_lists_allowed_fields_and_values():
    provider = Provider("{}")
    LLMFilterExtractor(provider, VOCAB).extract("艾克美 revenue?")
    (prompt,) = provider.prompts
    assert "艾克美 revenue?" in prompt and "ACME_CN" in prompt and "2024-Q3" in prompt


def test_llm_extractor_needs_a_provider():
    with pytest.raises(ConfigError):
        LLMFilterExtractor(None, VOCAB)


# -- safe_extract --------------------------------------------------------------------------------
class Raising:
    def extract(self, query):
        raise RuntimeError("boom")


class Returns:
    def __init__(self, out):
        self.out = out

    def extract(self, query):
        return self.out


def test_safe_extract_turns_failures_into_none():
    assert safe_extract(None, "q") is None
    assert safe_extract(Raising(), "q") is None
    assert safe_extract(LLMFilterExtractor(Provider("", error=TimeoutError()), VOCAB), "q") is None
    assert safe_extract(LLMFilterExtractor(Provider('{"entity": '), VOCAB), "q") is None
    assert safe_extract(LLMFilterExtractor(Provider('{"entity": oops}'), VOCAB), "q") is None


@pytest.mark.parametrize("junk", [{"entity": "ACME_CN"}, "entity=ACME_CN", [("entity", "eq", "x")], MetadataFilter(()), 0])
def test_safe_extract_rejects_anything_but_a_non_empty_metadata_filter(junk):
    assert safe_extract(Returns(junk), "q") is None


def test_safe_extract_passes_a_real_filter_through():
    filt = MetadataFilter((FilterCondition("entity", "eq", "ACME_CN"),))
    assert safe_extract(Returns(filt), "q") is filt


# -- factory ---------------------------------------------------------------------------------------
def test_make_filter_extractor():
    assert FILTER_EXTRACTORS.names() == ["none", "controlled_vocab", "llm"]
    assert make_filter_extractor("none") is None
    assert make_filter_extractor(" NONE ") is None
    for alias in ("controlled_vocab", "vocab", "controlled", "Controlled_Vocab"):
        assert isinstance(make_filter_extractor(alias, vocabulary=VOCAB), ControlledVocabFilterExtractor)
    llm = make_filter_extractor("llm", provider=Provider("{}"), vocabulary=VOCAB)
    assert isinstance(llm, LLMFilterExtractor)


def test_make_filter_extractor_errors():
    with pytest.raises(ConfigError, match="vocabulary"):
        make_filter_extractor("controlled_vocab")
    with pytest.raises(ConfigError, match="vocabulary"):
        make_filter_extractor("controlled_vocab", vocabulary={})
    with pytest.raises(ConfigError, match="provider"):
        make_filter_extractor("llm")
    with pytest.raises(ConfigError) as info:
        make_filter_extractor("regex")
    for name in FILTER_EXTRACTORS:
        assert name in str(info.value)


def test_make_filter_extractor_default_is_none_and_reads_no_environment(monkeypatch):
    """The seed's ``none``; the caller passes its settings' ``filter_extractor`` (the Stack does)."""
    assert make_filter_extractor() is None
    monkeypatch.setenv("RAGSPINE_FILTER_EXTRACTOR", "controlled_vocab")
    assert make_filter_extractor(vocabulary=VOCAB) is None
    assert isinstance(make_filter_extractor("controlled_vocab", vocabulary=VOCAB), ControlledVocabFilterExtractor)
