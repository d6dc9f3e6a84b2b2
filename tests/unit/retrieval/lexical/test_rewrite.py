"""GlossaryQueryRewriter: deterministic multi-query expansion, original first."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragspine.retrieval.lexical.rewrite import (
    DEFAULT_GLOSSARY,
    DEFAULT_MAX_QUERIES,
    GlossaryQueryRewriter,
    QueryRewriter,
)


def test_protocol_and_default_cap() -> None:
    rewriter: QueryRewriter = GlossaryQueryRewriter()
    assert callable(rewriter.rewrite)
    assert DEFAULT_MAX_QUERIES == 5
    assert GlossaryQueryRewriter().max_queries == 5


def test_original_first_then_synonyms_in_glossary_order() -> None:
    out = GlossaryQueryRewriter(max_queries=10).rewrite("revenue fell in Q3")
    assert out[0] == "revenue fell in Q3"
    assert out[1:] == [
        f"{form} fell in Q3" for form in DEFAULT_GLOSSARY["revenue"] if form != "revenue"
    ]


def test_cap_counts_the_original() -> None:
    assert len(GlossaryQueryRewriter().rewrite("revenue fell")) == 5
    assert GlossaryQueryRewriter(max_queries=1).rewrite("revenue fell") == ["revenue fell"]
    assert GlossaryQueryRewriter(max_queries=2).rewrite("revenue fell") == ["revenue fell", "sales fell"]


@pytest.mark.parametrize("bad", [0, -1])
def test_max_queries_below_one_is_refused(bad: int) -> None:
    with pytest.raises(ValueError):
        GlossaryQueryRewriter(max_queries=bad)


def test_no_match_returns_only_the_original() -> None:
    assert GlossaryQueryRewriter().rewrite("why did the warranty policy change") == [
        "why did the warranty policy change"
    ]
    assert GlossaryQueryRewriter().rewrite("") == [""]


def test_ascii_forms_match_whole_words_case_insensitively() -> None:
    rewriter = GlossaryQueryRewriter(max_queries=3)
    assert rewriter.rewrite("Why did SALES drop?") == ["Why did SALES drop?", "Why did revenue drop?", "Why did turnover drop?"]
    # not inside a longer word, not glued to digits or letters
    for query in ("wholesales volume", "salesforce", "presales2024", "revenues"):
        assert rewriter.rewrite(query) == [query]
    # CJK next to an ASCII form is a word boundary
    assert rewriter.rewrite("sales下滑")[1] == "revenue下滑"


def test_multi_word_forms() -> None:
    out = GlossaryQueryRewriter().rewrite("net income 2024")
    assert out[:3] == ["net income 2024", "net profit 2024", "净利润 2024"]


def test_cjk_forms_match_as_substrings() -> None:
    out = GlossaryQueryRewriter(max_queries=10).rewrite("营收下滑的原因")
    assert out[0] == "营收下滑的原因"
    assert "revenue下滑的原因" in out
    assert "营业收入下滑的原因" in out
    assert "売上下滑的原因" in out


def test_the_longest_matching_form_is_replaced() -> None:
    # 売上 is a prefix of 売上高: swapping only 売上 would give "revenue高" or "売上高高"
    out = GlossaryQueryRewriter(max_queries=10).rewrite("売上高が減少")
    assert out[0] == "売上高が減少"
    assert "revenueが減少" in out
    assert "売上が減少" in out
    assert all("高が" not in q for q in out[1:]), out


def test_several_groups_expand() -> None:
    out = GlossaryQueryRewriter(max_queries=50).rewrite("revenue and headcount")
    assert "sales and headcount" in out
    assert "revenue and employees" in out
    assert out.index("sales and headcount") < out.index("revenue and employees")  # glossary order


def test_custom_glossary_replaces_the_default() -> None:
    rewriter = GlossaryQueryRewriter({"ebitda": ["EBITDA", "operating cash"]}, max_queries=5)
    assert rewriter.rewrite("ebitda margin") == ["ebitda margin", "EBITDA margin", "operating cash margin"]
    assert rewriter.rewrite("Operating Cash margin") == ["Operating Cash margin", "ebitda margin", "EBITDA margin"]
    assert rewriter.rewrite("revenue") == ["revenue"]  # the built-in glossary is not used
    assert GlossaryQueryRewriter({}).rewrite("revenue") == ["revenue"]


def test_regex_metacharacters_in_forms_are_literal() -> None:
    rewriter = GlossaryQueryRewriter({"c++": ["cpp"], "a.b": ["ab"]})
    assert rewriter.rewrite("learn c++ now") == ["learn c++ now", "learn cpp now"]
    assert rewriter.rewrite("axb") == ["axb"]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(["revenue", " ", "sales", "营收", "x", "净利润", "Net Income", "!", "売上高"]), max_size=12).map("".join))
def test_rewrite_is_deterministic_deduplicated_and_capped(query: str) -> None:
    rewriter = GlossaryQueryRewriter(max_queries=4)
    out = rewriter.rewrite(query)
    assert out[0] == query
    assert len(out) == len(set(out)) <= 4
    assert rewriter.rewrite(query) == out
