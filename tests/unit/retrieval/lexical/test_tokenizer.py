"""tokenize(): lowercase words, CJK unigrams then adjacent bigrams, punctuation separates."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragspine.retrieval.lexical.tokenizer import tokenize


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Hello World", ["hello", "world"]),
        ("REVENUE fell 12% in Q3-2024.", ["revenue", "fell", "12", "in", "q3", "2024"]),
        ("snake_case and kebab-case", ["snake", "case", "and", "kebab", "case"]),
        ("e-mail: a.b@c.com", ["e", "mail", "a", "b", "c", "com"]),
        ("", []),
        ("  ...!!!  ", []),
        ("营收下滑", ["营", "收", "下", "滑", "营收", "收下", "下滑"]),
        ("营", ["营"]),
        ("Q3营收", ["q3", "营", "收", "营收"]),
        ("营收Q3下滑", ["营", "收", "营收", "q3", "下", "滑", "下滑"]),
        ("营收，下滑。", ["营", "收", "营收", "下", "滑", "下滑"]),  # CJK punctuation splits runs
        ("売上高", ["売", "上", "高", "売上", "上高"]),
        ("ひらがな", ["ひ", "ら", "が", "な", "ひら", "らが", "がな"]),
        ("カタカナ", ["カ", "タ", "カ", "ナ", "カタ", "タカ", "カナ"]),
        ("ｶﾀｶﾅ", ["ｶ", "ﾀ", "ｶ", "ﾅ", "ｶﾀ", "ﾀｶ", "ｶﾅ"]),  # half-width katakana
        ("ジョン・スミス", ["ジ", "ョ", "ン", "ジョ", "ョン", "ス", "ミ", "ス", "スミ", "ミス"]),  # ・ is punctuation
        ("매출 감소", ["매", "출", "매출", "감", "소", "감소"]),
        ("Müller GmbH", ["müller", "gmbh"]),
        ("Ærø ÉCOLE naïve", ["ærø", "école", "naïve"]),
        ("Москва 2024", ["москва", "2024"]),
        ("x²", ["x²"]),
        ("tab\tnew\nline", ["tab", "new", "line"]),
    ],
)
def test_tokenize(text: str, expected: list[str]) -> None:
    assert tokenize(text) == expected


def test_tokenize_is_case_insensitive() -> None:
    assert tokenize("ACME Corp") == tokenize("acme corp") == tokenize("Acme CORP")


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_tokens_are_non_empty_lowercase_and_free_of_separators(text: str) -> None:
    tokens = tokenize(text)
    for token in tokens:
        assert token
        assert token == token.lower()
        assert not any(ch.isspace() or ch == "_" for ch in token)
    assert tokenize(text) == tokens  # deterministic


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet="营收下滑売上データ한국", min_size=1, max_size=30))
def test_cjk_run_is_unigrams_then_bigrams(run: str) -> None:
    expected = list(run) + [run[i : i + 2] for i in range(len(run) - 1)]
    assert tokenize(run) == expected
    assert tokenize(f"a {run} b") == ["a", *expected, "b"]


def test_iteration_mark_and_ideographic_zero_join_their_cjk_run() -> None:
    assert tokenize("人々") == ["人", "々", "人々"]
    assert tokenize("〇時") == ["〇", "時", "〇時"]
