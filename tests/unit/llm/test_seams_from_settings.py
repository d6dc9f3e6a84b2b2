"""Every LLM seam reached from settings alone (``RAGSPINE_LLM`` = a stub OpenAI-compatible
server the test starts): the listwise judge, the LLM library router and the LLM filter
extractor answer through it; a malformed answer degrades exactly as the seed says (fused
order, every library, no filter) and is counted; the call budget stops the next call; no
RESTRICTED text is ever in a prompt."""

from __future__ import annotations

import json

import pytest

from tests.helpers import needs

needs("openai")

from ragspine.config import load_settings
from ragspine.llm.observe import LLMStats
from ragspine.stack import Stack
from ragspine.testing.llm import ScriptedLLMProvider
from ragspine.testing.openai_stub import OpenAIStub, Status

SECRET = "xylophonequartz"  # only in the RESTRICTED document
QUERY = "warranty claims gearbox"


@pytest.fixture
def stub():
    with OpenAIStub() as s:
        yield s


@pytest.fixture
def make_stack(tmp_path, stub):
    vocabulary = tmp_path / "vocabulary.yaml"
    vocabulary.write_text(json.dumps({"topic": {"claims": ["claim", "claims"], "policy": ["policy"]}}), encoding="utf-8")
    stacks: list[tuple[Stack, LLMStats]] = []

    def make(**env: str) -> tuple[Stack, LLMStats]:
        base = {"RAGSPINE_CHUNK_STORE": str(tmp_path / "llm.db"), "RAGSPINE_CACHE_DIR": str(tmp_path / "cache"),
                "RAGSPINE_RETRIEVAL_MODE": "economy", "RAGSPINE_LLM": stub.url, "RAGSPINE_LLM_MODEL": "stub-model",
                "RAGSPINE_LLM_RETRIES": "0", "RAGSPINE_FILTER_VOCABULARY": str(vocabulary)}
        stack = Stack(load_settings({**base, **env}))
        stats = LLMStats()
        stack.observe_llm(stats)
        stacks.append((stack, stats))
        return stack, stats

    filler, _ = make()
    filler.ensure_library("support", "warranty and claims")
    filler.ensure_library("finance", "revenue and results")
    support = filler.index("support")
    support.ingest_text("s1", "Warranty claims rose for gearbox units.", metadata={"topic": "claims"})
    support.ingest_text("s2", "Gearbox warranty policy: 36 months.", metadata={"topic": "policy"})
    support.ingest_text("s3", "Claims about gearbox noise were answered.", metadata={"topic": "claims"})
    support.ingest_text("s4", f"Gearbox warranty claims board memo {SECRET}.", metadata={"topic": "claims"}, sensitivity="RESTRICTED")
    filler.index("finance").ingest_text("f1", "Gearbox revenue and warranty claims costs fell.", metadata={"topic": "results"})
    yield make
    for stack, _ in stacks:
        stack.close()


def doc_ids(stack: Stack, libraries: list[str] | None = None, **search) -> list[str]:
    return [s["doc_id"] for s in stack.retriever(libraries).search(QUERY, top_k=10, **search).snippets]


def assert_no_restricted_prompt(stub: OpenAIStub) -> None:
    assert stub.prompts and all(SECRET not in p and "board memo" not in p for p in stub.prompts)


# -- the listwise judge (RAGSPINE_RERANKER=listwise) ----------------------------------------------------------
def test_the_listwise_judge_is_reached_from_settings_and_reorders(make_stack, stub):
    plain, _ = make_stack()
    fused = doc_ids(plain, ["support"])
    assert len(fused) == 3 and "s4" not in fused
    stack, stats = make_stack(RAGSPINE_RERANKER="listwise")
    stub.answer = "2, 1, 0"
    assert doc_ids(stack, ["support"]) == fused[::-1]
    (body,) = stub.requests
    assert body["model"] == "stub-model" and body["temperature"] == 0
    assert_no_restricted_prompt(stub)
    assert stats.calls == {"openai": 1} and not stats.malformed


@pytest.mark.parametrize("answer", ["I cannot rank these.", "", "[9, 12]", "{}"])
def test_a_malformed_judgement_keeps_the_fused_order_and_is_counted(make_stack, stub, answer):
    fused = doc_ids(make_stack()[0], ["support"])
    stack, stats = make_stack(RAGSPINE_RERANKER="listwise")
    stub.answer = answer
    assert doc_ids(stack, ["support"]) == fused
    assert stats.malformed == {"listwise": 1}


def test_a_failing_server_keeps_the_fused_order_and_is_counted_as_a_failure(make_stack, stub):
    fused = doc_ids(make_stack()[0], ["support"])
    stack, stats = make_stack(RAGSPINE_RERANKER="listwise")
    stub.answer = Status(500)
    assert doc_ids(stack, ["support"]) == fused
    assert stats.failures == {("openai", "error"): 1} and not stats.malformed


# -- the LLM library router (RAGSPINE_LIBRARY_ROUTER=llm) -------------------------------------------------------
def test_the_llm_router_is_reached_from_settings(make_stack, stub):
    stack, stats = make_stack(RAGSPINE_LIBRARY_ROUTER="llm")
    stub.answer = '["finance"]'
    assert doc_ids(stack) == ["f1"]
    (prompt,) = stub.prompts
    assert "- finance: revenue and results" in prompt and "- support: warranty and claims" in prompt
    assert not stats.malformed


@pytest.mark.parametrize("answer,malformed", [("finance, I think", 1), ('["nowhere"]', 1), ("[finance]", 1), ("[]", 0)])
def test_a_malformed_route_searches_every_library_and_is_counted(make_stack, stub, answer, malformed):
    stack, stats = make_stack(RAGSPINE_LIBRARY_ROUTER="llm")
    stub.answer = answer
    assert set(doc_ids(stack)) == {"s1", "s2", "s3", "f1"}
    assert stats.malformed == ({"router": 1} if malformed else {})


# -- the LLM filter extractor (RAGSPINE_FILTER_EXTRACTOR=llm) ---------------------------------------------------
def test_the_llm_filter_extractor_is_reached_from_settings_and_only_narrows(make_stack, stub):
    stack, stats = make_stack(RAGSPINE_FILTER_EXTRACTOR="llm")
    stub.answer = '{"topic": "claims"}'
    assert sorted(doc_ids(stack, ["support"])) == ["s1", "s3"]
    stub.answer = '{"topic": "policy"}'  # AND-ed with the caller's filter: nothing matches both
    narrowed = stack.retriever(["support"], retry_without_filters=False).search(
        QUERY, filters=_filter("topic", "claims"), top_k=10)
    assert narrowed.snippets == []
    (prompt, _) = stub.prompts
    assert QUERY in prompt and "claims" in prompt and "policy" in prompt
    assert_no_restricted_prompt(stub)
    assert not stats.malformed


@pytest.mark.parametrize("answer,malformed", [("topic is claims", 1), ('{"topic": claims}', 1), ("[]", 1),
                                              ('{"topic": "board"}', 0), ('{"sensitivity": "PUBLIC"}', 0), ("{}", 0)])
def test_a_malformed_or_foreign_extraction_adds_no_filter(make_stack, stub, answer, malformed):
    everything = sorted(doc_ids(make_stack()[0], ["support"]))
    stack, stats = make_stack(RAGSPINE_FILTER_EXTRACTOR="llm")
    stub.answer = answer
    assert sorted(doc_ids(stack, ["support"])) == everything
    assert stats.malformed == ({"filter_extractor": 1} if malformed else {})


def test_the_extractor_over_several_libraries_asks_once(make_stack, stub):
    stack, _ = make_stack(RAGSPINE_FILTER_EXTRACTOR="llm")
    stub.answer = '{"topic": "claims"}'
    assert sorted(doc_ids(stack)) == ["s1", "s3"]
    assert stub.calls == 1


# -- the per-request call budget (RAGSPINE_LLM_MAX_CALLS) --------------------------------------------------------
def test_the_budget_stops_the_call_after_the_last_one_and_the_request_still_answers(make_stack, stub):
    fused = doc_ids(make_stack()[0])  # both libraries, no judge
    stack, stats = make_stack(RAGSPINE_LIBRARY_ROUTER="llm", RAGSPINE_RERANKER="listwise", RAGSPINE_LLM_MAX_CALLS="1")
    stub.answer = '["support", "finance"]'
    answer = doc_ids(stack)
    assert stub.calls == 1  # the router's call; support's judge was refused (finance's one candidate needs none)
    assert stats.failures[("openai", "budget")] == 1
    assert answer == fused  # degraded to the fused order, nothing lost
    doc_ids(stack)  # the next request has its own budget
    assert stub.calls == 2


def test_the_budget_counts_every_seam_of_one_request(make_stack, stub):
    stack, stats = make_stack(RAGSPINE_LIBRARY_ROUTER="llm", RAGSPINE_RERANKER="listwise", RAGSPINE_FILTER_EXTRACTOR="llm",
                              RAGSPINE_LLM_MAX_CALLS="3")
    stub.answer = lambda body: '{"topic": "claims"}' if "metadata filters" in body["messages"][0]["content"] else (
        '["support", "finance"]' if "libraries" in body["messages"][0]["content"] else "1, 0")
    assert sorted(doc_ids(stack)) == ["s1", "s3"]
    assert stub.calls == 3  # extractor, router, the support judge; finance has one candidate (no judge)
    assert_no_restricted_prompt(stub)


def _filter(field: str, value: str):
    from ragspine.retrieval.filtering.filters import parse_filter

    return parse_filter({field: value})


def test_no_restricted_text_reaches_a_spy_provider_through_any_seam(make_stack, tmp_path):
    spy = ScriptedLLMProvider(lambda prompt: "bogus" if "Rank" in prompt else "[]")
    stack, _ = make_stack(RAGSPINE_LIBRARY_ROUTER="llm", RAGSPINE_RERANKER="listwise", RAGSPINE_FILTER_EXTRACTOR="llm")
    with Stack(stack.settings, provider=spy) as spied:
        for query in (QUERY, f"{SECRET} board memo", "gearbox"):
            spied.retriever().search(query, top_k=10)
            spied.retriever(["support"]).search(query, top_k=10)
    assert spy.calls >= 6
    rank_prompts = [p for p in spy.prompts if "Rank the passages" in p]
    assert rank_prompts and all("Gearbox warranty claims board memo" not in p for p in rank_prompts)
    assert all("[3]" not in p for p in rank_prompts)  # only the three open candidates were shown
