"""Listwise rerank: RESTRICTED exit #1, RRF fallback, robust parsing, the provider judge."""

from __future__ import annotations

import pytest

from ragspine.retrieval.chunking.chunk_store import StoredChunk
from ragspine.retrieval.link.narrative_link import ProviderListwiseJudge
from ragspine.retrieval.rerank.listwise_rerank import (
    MAX_CANDIDATE_CHARS,
    ListwiseReranker,
    build_listwise_prompt,
    listwise_rerank,
    parse_listwise_response,
    rerank_open_subset,
)
from ragspine.retrieval.types import RetrievalResult
from ragspine.testing.llm import ScriptedLLMProvider


def result(name: str, sensitivity: str = "INTERNAL", fused: float = 0.0) -> RetrievalResult:
    chunk = StoredChunk(chunk_id=f"{name}#0", doc_id=name, text=f"text of {name}", sensitivity=sensitivity)
    return RetrievalResult(chunk, {"bm25": 1.0, "vector": 0.0, "fused": fused})


def names(results):
    return [r.chunk.doc_id for r in results]


class Judge:
    def __init__(self, answer=None, error: Exception | None = None):
        self.answer = answer
        self.error = error
        self.calls: list[list[str]] = []

    def judge(self, query, candidates):
        self.calls.append(list(candidates))
        if self.error is not None:
            raise self.error
        if callable(self.answer):
            return self.answer(candidates)
        return self.answer


def reverse(candidates):
    return list(reversed(range(len(candidates))))


# -- listwise_rerank ------------------------------------------------------------------------
def test_judge_order_is_applied():
    rs = [result("a"), result("b"), result("c")]
    judge = Judge(reverse)
    assert names(listwise_rerank("q", rs, judge)) == ["c", "b", "a"]
    assert judge.calls == [["text of a", "text of b", "text of c"]]


@pytest.mark.parametrize("sensitivity", ["RESTRICTED", "restricted", " Restricted "])
def test_restricted_keep_rrf_positions_and_are_never_sent(sensitivity):
    rs = [result("r1", sensitivity), result("a"), result("r2", sensitivity), result("b"), result("c")]
    judge = Judge(reverse)
    out = listwise_rerank("q", rs, judge)
    assert names(out) == ["r1", "c", "r2", "b", "a"]
    assert judge.calls == [["text of a", "text of b", "text of c"]]
    assert all("r1" not in t and "r2" not in t for t in judge.calls[0])


@pytest.mark.parametrize("sensitivity", ["RESTRICTED", "restricted"])
def test_all_restricted_never_calls_the_judge(sensitivity):
    rs = [result("r1", sensitivity), result("r2", sensitivity)]
    judge = Judge(reverse)
    assert names(listwise_rerank("q", rs, judge)) == ["r1", "r2"]
    assert judge.calls == []


def test_single_open_candidate_needs_no_judge():
    judge = Judge(reverse)
    assert names(listwise_rerank("q", [result("r", "RESTRICTED"), result("a")], judge)) == ["r", "a"]
    assert names(listwise_rerank("q", [], judge)) == []
    assert judge.calls == []


@pytest.mark.parametrize(
    "error", [RuntimeError("model down"), TimeoutError(), ValueError("bad"), KeyError("x")]
)
def test_judge_exception_degrades_to_rrf_order(error):
    rs = [result("a"), result("b"), result("c")]
    assert names(listwise_rerank("q", rs, Judge(error=error))) == ["a", "b", "c"]


@pytest.mark.parametrize(
    "answer,expected",
    [
        (None, ["a", "b", "c"]),
        ("garbage", ["a", "b", "c"]),
        ([], ["a", "b", "c"]),
        ([7, 9], ["a", "b", "c"]),
        ([2, 2, 0], None),  # duplicates: some permutation (completed, or RRF order)
        ([1], None),  # partial: some permutation
        ([0, 1, 2, 3], ["a", "b", "c"]),
        ({"x": 1}, ["a", "b", "c"]),
        (42, ["a", "b", "c"]),
    ],
)
def test_malformed_judge_output_never_raises(answer, expected):
    rs = [result("a"), result("b"), result("c")]
    out = listwise_rerank("q", rs, Judge(answer))
    if expected is not None:
        assert names(out) == expected
    assert sorted(map(id, out)) == sorted(map(id, rs))  # a permutation, never new/lost items


def test_only_the_top_n_head_is_judged():
    rs = [result(n) for n in "abcdef"]
    judge = Judge(reverse)
    out = listwise_rerank("q", rs, judge, top_n=3)
    assert names(out) == ["c", "b", "a", "d", "e", "f"]
    assert judge.calls == [["text of a", "text of b", "text of c"]]


def test_restricted_in_the_tail_is_untouched_and_unsent():
    rs = [result("a"), result("b"), result("r", "RESTRICTED"), result("c")]
    judge = Judge(reverse)
    out = listwise_rerank("q", rs, judge, top_n=2)
    assert names(out) == ["b", "a", "r", "c"]
    assert judge.calls == [["text of a", "text of b"]]


def test_rerank_does_not_mutate_its_input():
    rs = [result("a"), result("b")]
    before = list(rs)
    listwise_rerank("q", rs, Judge(reverse))
    assert rs == before


def test_listwise_reranker_wraps_the_function():
    judge = Judge(reverse)
    reranker = ListwiseReranker(judge, top_n=2)
    rs = [result("a"), result("b"), result("c")]
    assert names(reranker.rerank("q", rs)) == ["b", "a", "c"]
    assert reranker.top_n == 2


def test_rerank_open_subset_rejects_a_reorder_returning_other_items():
    rs = [result("a"), result("b")]
    intruder = result("x")
    assert names(rerank_open_subset(rs, lambda items: [items[0], intruder])) == ["a", "b"]
    assert names(rerank_open_subset(rs, lambda items: items[:1])) == ["a", "b"]
    assert names(rerank_open_subset(rs, lambda items: 1 / 0)) == ["a", "b"]


# -- build_listwise_prompt --------------------------------------------------------------------
def test_prompt_numbers_candidates_from_zero_and_states_the_question():
    prompt = build_listwise_prompt("Why did revenue fall?", ["first  passage\nwith lines", "second"])
    assert "Question: Why did revenue fall?" in prompt
    assert "[0] first passage with lines" in prompt
    assert "[1] second" in prompt
    assert "[2]" not in prompt


def test_prompt_truncates_long_candidates():
    prompt = build_listwise_prompt("q", ["x" * (MAX_CANDIDATE_CHARS + 500)])
    line = next(l for l in prompt.splitlines() if l.startswith("[0] "))
    assert len(line) == len("[0] ") + MAX_CANDIDATE_CHARS


def test_prompt_is_deterministic():
    assert build_listwise_prompt("q", ["a", "b"]) == build_listwise_prompt("q", ["a", "b"])


# -- parse_listwise_response ------------------------------------------------------------------
@pytest.mark.parametrize(
    "text,n,expected",
    [
        ("[2] > [0] > [1]", 3, [2, 0, 1]),
        ("2,0,1", 3, [2, 0, 1]),
        ("2, 0, 1", 3, [2, 0, 1]),
        ("2. then 0. then 1.", 3, [2, 0, 1]),
        ("2 2 0 0 1", 3, [2, 0, 1]),
        ("1", 3, [1, 0, 2]),
        ("9, 1, 17", 3, [1, 0, 2]),
        ("5, 4, 3", 3, [0, 1, 2]),
        ("no idea", 3, [0, 1, 2]),
        ("", 3, [0, 1, 2]),
        ("[0]", 0, []),
        ("[10] > [2]", 12, [10, 2, 0, 1, 3, 4, 5, 6, 7, 8, 9, 11]),
    ],
)
def test_parse_listwise_response(text, n, expected):
    assert parse_listwise_response(text, n) == expected


@pytest.mark.parametrize("junk", [None, 3, b"2,0,1", ["2", "0"]])
def test_parse_non_text_gives_identity(junk):
    assert parse_listwise_response(junk, 3) == [0, 1, 2]


def test_parse_always_returns_a_permutation():
    for text in ("3 1 4 1 5 9 2 6", "[1][1][1]", "-1, 0", "0000 1", "١٢"):
        out = parse_listwise_response(text, 4)
        assert sorted(out) == [0, 1, 2, 3]


# -- ProviderListwiseJudge --------------------------------------------------------------------
Provider = ScriptedLLMProvider


def test_provider_judge_sends_one_prompt_and_parses_the_answer():
    provider = Provider("[1] > [0]")
    judge = ProviderListwiseJudge(provider)
    assert judge.judge("q?", ["alpha", "beta"]) == [1, 0]
    assert len(provider.messages) == 1
    (message,) = provider.messages[0]
    assert message["role"] == "user"
    assert message["content"] == build_listwise_prompt("q?", ["alpha", "beta"])


def test_provider_judge_with_garbage_answer_gives_identity():
    assert ProviderListwiseJudge(Provider(None)).judge("q", ["a", "b", "c"]) == [0, 1, 2]


def test_provider_errors_propagate_from_the_judge_but_not_from_rerank():
    judge = ProviderListwiseJudge(Provider("", error=ConnectionError("offline")))
    with pytest.raises(ConnectionError):
        judge.judge("q", ["a", "b"])
    rs = [result("a"), result("b")]
    assert names(listwise_rerank("q", rs, judge)) == ["a", "b"]


def test_provider_judge_end_to_end_with_restricted():
    provider = Provider("1, 0")
    rs = [result("a"), result("secret", "RESTRICTED"), result("b")]
    out = listwise_rerank("q", rs, ProviderListwiseJudge(provider))
    assert names(out) == ["b", "secret", "a"]
    prompt = provider.messages[0][0]["content"]
    assert "text of secret" not in prompt and "text of a" in prompt
