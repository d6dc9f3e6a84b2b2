"""The dense gate: which texts a backend can meaningfully embed."""

from __future__ import annotations

import pytest

from ragspine.retrieval.vector.embedding_backends import DeterministicEmbeddingBackend
from ragspine.retrieval.vector.gate import (
    DEFAULT_MAX_CJK_SHARE,
    DEFAULT_MAX_UNKNOWN_SHARE,
    DenseGate,
    cjk_share,
)


class SharesBackend:
    """Reports a fixed unknown share per text; declares no languages."""

    def __init__(self, shares: dict[str, float]) -> None:
        self.shares = shares
        self.asked: list[list[str]] = []

    def embed_texts(self, texts):
        raise AssertionError("the gate never embeds")

    def unknown_token_share(self, texts):
        self.asked.append(list(texts))
        return [self.shares[t] for t in texts]


class LanguagesBackend:
    def __init__(self, languages) -> None:
        self.languages = languages

    def embed_texts(self, texts):
        raise AssertionError("the gate never embeds")


def test_defaults():
    assert DEFAULT_MAX_UNKNOWN_SHARE == 0.30
    assert DEFAULT_MAX_CJK_SHARE == 0.50
    gate = DenseGate(object())
    assert (gate.max_unknown_share, gate.max_cjk_share) == (0.30, 0.50)


@pytest.mark.parametrize("kwargs", [{"max_unknown_share": -0.01}, {"max_unknown_share": 1.5}, {"max_cjk_share": -1}, {"max_cjk_share": 2}])
def test_thresholds_outside_unit_interval_are_rejected(kwargs):
    with pytest.raises(ValueError):
        DenseGate(object(), **kwargs)


@pytest.mark.parametrize(
    "text,share",
    [
        ("", 0.0),
        ("!!! ... ???", 0.0),
        ("hello world", 0.0),
        ("供应链", 1.0),
        ("日本語のテキスト", 1.0),
        ("カタカナ", 1.0),
        ("한국어 문장", 1.0),
        ("ab中文", 0.5),
        ("Q3 销售", 0.5),  # digits count as letters, spaces and punctuation do not
        ("供应链。。。！！", 1.0),
    ],
)
def test_cjk_share(text, share):
    assert cjk_share(text) == pytest.approx(share)


def test_a_backend_without_signals_reads_everything():
    texts = ["English", "供应链中断导致交付延迟", "日本語のテキストです", ""]
    assert DenseGate(object()).readable(texts) == [True] * 4
    assert DenseGate(DeterministicEmbeddingBackend()).readable(texts) == [True] * 4
    assert DenseGate(LanguagesBackend(None)).readable(texts) == [True] * 4


def test_unknown_share_threshold_is_inclusive():
    backend = SharesBackend({"a": 0.0, "b": 0.30, "c": 0.31, "d": 1.0})
    gate = DenseGate(backend)
    assert gate.readable(["a", "b", "c", "d"]) == [True, True, False, False]
    assert backend.asked == [["a", "b", "c", "d"]]  # one batched call
    assert DenseGate(backend, max_unknown_share=1.0).readable(["d"]) == [True]
    assert DenseGate(backend, max_unknown_share=0.0).readable(["a", "b"]) == [True, False]
    assert gate.query_readable("c") is False and gate.query_readable("a") is True


def test_empty_list_asks_nothing():
    backend = SharesBackend({})
    assert DenseGate(backend).readable([]) == []
    assert backend.asked == []


@pytest.mark.parametrize("languages", [("en",), ["en", "de"], ("EN",), ()])
def test_non_cjk_languages_mark_cjk_texts_unreadable(languages):
    gate = DenseGate(LanguagesBackend(languages))
    texts = ["The supply chain", "供应链中断导致交付延迟", "日本語のテキストです", "mixed English text with 一点 Chinese", "ab中文"]
    assert gate.readable(texts) == [True, False, False, True, True]  # 0.5 is not "more than" 0.5
    assert DenseGate(LanguagesBackend(languages), max_cjk_share=1.0).readable(texts) == [True] * 5


@pytest.mark.parametrize("languages", [("en", "zh"), ("ja",), ("KO",), ("multilingual",)])
def test_cjk_languages_turn_the_cjk_rule_off(languages):
    gate = DenseGate(LanguagesBackend(languages))
    assert gate.readable(["供应链中断", "日本語のテキスト", "한국어"]) == [True, True, True]


def test_both_rules_apply_together():
    class Both(SharesBackend):
        languages = ("en",)

    gate = DenseGate(Both({"English words": 0.0, "供应链": 0.1, "garbled ###": 0.9}))
    assert gate.readable(["English words", "供应链", "garbled ###"]) == [True, False, False]


# -- the real packaged model -----------------------------------------------------------------------
@pytest.mark.slow
def test_the_onnx_model_reads_english_only(onnx_backend):
    gate = DenseGate(onnx_backend)
    texts = [
        "Why did shipments slip in the third quarter?",
        "公司第三季度营业收入同比增长百分之十二。",
        "港湾の混雑で出荷が三週間遅れました。",  # kana are in the vocabulary: caught by the CJK rule
        "The Shanghai 上海 office reported delays.",
        "한국어 문장입니다",
    ]
    assert gate.readable(texts) == [True, False, False, True, False]
    # with the rules off, the same texts all pass (this is what the gate protects against)
    assert DenseGate(onnx_backend, max_unknown_share=1.0, max_cjk_share=1.0).readable(texts) == [True] * 5
