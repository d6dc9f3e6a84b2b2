"""ReasoningRetriever: the gate before any retrieval (a refused text never reaches an index),
decomposition fused deterministically, transforms as probes, the corrective loop's rounds."""

from __future__ import annotations

import json
import re

from ragspine.llm.budget import GuardedLLMProvider
from ragspine.llm.observe import LLMStats
from ragspine.retrieval.filtering.filters import parse_filter
from ragspine.retrieval.fusion import rrf_fuse, sort_fused
from ragspine.retrieval.query.decompose import LLMQueryDecomposer, QueryRewrite
from ragspine.retrieval.query.probes import DENSE_LEG, EVERY_LEG, PROBE_WEIGHT, Probe, search_probes, transform_probes
from ragspine.retrieval.query.transforms import HyDETransform, RAGFusionTransform, StepBackTransform
from ragspine.retrieval.reasoning import CORRECTIVE_REFUSAL, GATE_REFUSAL, ReasoningRetriever, ReasoningStats
from ragspine.testing.llm import ScriptedLLMProvider
from ragspine.testing.reasoning import scripted_provider
from tests.unit.retrieval.reasoning.conftest import SECRET

DIGITS = re.compile(r"[0-9\uff10-\uff19]")


def ids(answer) -> list[str]:
    return [s["doc_id"] for s in answer.snippets]


def test_a_refused_question_reaches_no_index_and_no_model(library, exit_, gate):
    _, spy = library
    provider = scripted_provider()
    stats = ReasoningStats()
    retriever = ReasoningRetriever(exit_, gate=gate, transform=RAGFusionTransform(provider), observer=stats)
    answer = retriever.search("What was ＡＣＭＥ revenue in 2023?", top_k=5)
    assert answer.snippets == [] and answer.refusal == GATE_REFUSAL and not DIGITS.search(GATE_REFUSAL)
    assert answer.refused == [{"kind": "question", "entity": "ACME", "query": "What was ＡＣＭＥ revenue in 2023?"}]
    assert spy.searched == [] and provider.calls == 0 and stats.refused == {"gate": 1}


def test_a_refused_sub_question_never_reaches_an_index_and_the_answer_says_so(library, exit_, gate):
    _, spy = library
    provider = ScriptedLLMProvider("What was gearbox revenue?\nWhat was Acme revenue?\nWhat was motor revenue?")
    retriever = ReasoningRetriever(exit_, gate=gate, decomposer=LLMQueryDecomposer(provider))
    answer = retriever.search("How did our revenue compare?", top_k=5)
    assert not spy.saw("acme") and spy.saw("gearbox") and spy.saw("motor")
    assert answer.refused == [{"kind": "sub_question", "entity": "ACME", "query": "What was Acme revenue?"}]
    step = next(s for s in answer.trace if s["step"] == "decompose")
    assert step["searched"] == ["What was gearbox revenue?", "What was motor revenue?"]
    assert {"gearbox", "motor"} <= set(ids(answer)) and "memo" not in ids(answer)


def test_decomposition_fuses_the_question_and_its_sub_questions_by_rrf_deterministically(exit_):
    subs = ["gearbox revenue", "motor revenue"]
    retriever = ReasoningRetriever(exit_, decomposer=LLMQueryDecomposer(ScriptedLLMProvider("\n".join(subs))))
    answer = retriever.search("revenue by product", top_k=10)
    rankings = [[("lib", s["chunk_id"]) for s in exit_.search(q, top_k=10).snippets] for q in ["revenue by product", *subs]]
    expected = sort_fused(rrf_fuse(rankings))[:10]
    assert [(s["library_id"], s["chunk_id"]) for s in answer.snippets] == [key for key, _ in expected]
    assert [s["scores"]["fused"] for s in answer.snippets] == [score for _, score in expected]
    assert json.dumps(retriever.search("revenue by product", top_k=10).snippets) == json.dumps(answer.snippets)


def test_a_refused_variant_is_not_searched_the_others_are(library, exit_, gate):
    _, spy = library
    provider = ScriptedLLMProvider("motor revenue growth\nAcme revenue\n艾克米 营收")
    answer = ReasoningRetriever(exit_, gate=gate, transform=RAGFusionTransform(provider)).search("gearbox revenue", top_k=5)
    assert [r["query"] for r in answer.refused] == ["Acme revenue", "艾克米 营收"]
    assert spy.saw("motor") and not spy.saw("acme") and not spy.saw("艾克米")
    step = next(s for s in answer.trace if s["step"] == "transform")
    assert step["probes"] == ["motor revenue growth"] and step["refused"] == 2


def test_hyde_passages_are_probes_never_shown_even_when_refused(library, exit_, gate):
    _, spy = library
    token = "zqxhydetokenzq"
    answer = ReasoningRetriever(exit_, gate=gate, transform=HyDETransform(scripted_provider(token))).search("gearbox revenue", top_k=5)
    assert spy.saw(token)  # economy mode: the passage probed the lexical leg
    assert token not in json.dumps(answer.snippets) + json.dumps(answer.trace) + json.dumps(answer.refused)
    refused = ReasoningRetriever(exit_, gate=gate, transform=HyDETransform(ScriptedLLMProvider("Acme sells gearboxes to many plants."))).search(
        "gearbox revenue", top_k=5)
    assert refused.refused == [{"kind": "hyde", "entity": "ACME"}] and "Acme sells" not in json.dumps(refused.trace)


def test_a_search_runs_its_variants_then_its_probes_each_with_its_own_legs():
    probes = transform_probes(("v1",), ("passage",))
    assert probes == (Probe("v1", EVERY_LEG, PROBE_WEIGHT), Probe("passage", DENSE_LEG, PROBE_WEIGHT))
    assert search_probes(["q1"], probes) == [Probe("q1"), *probes]
    assert search_probes(["q1"]) == [Probe("q1")]  # no probes: the question's own variants only
    # a probe repeating an earlier text on the same legs is left out; on other legs it is its own
    assert search_probes(["q1", "v1"], transform_probes(("v1",), ("q1",))) == [Probe("q1"), Probe("v1"), Probe("q1", DENSE_LEG, PROBE_WEIGHT)]


def test_step_back_searches_one_broader_question_whose_rankings_count_half(library, exit_):
    _, spy = library
    answer = ReasoningRetriever(exit_, transform=StepBackTransform(ScriptedLLMProvider("northern valley rainfall spring"))).search(
        "motor revenue", top_k=3)
    assert spy.saw("rainfall") and ids(answer) == ["motor", "gearbox", "weather"]  # the probe's first ranks below the question's
    assert [s["scores"]["fused"] for s in answer.snippets] == [1 / 61, 1 / 62, PROBE_WEIGHT / 61]


def test_the_corrective_loop_drops_filters_then_rewrites_then_refuses(exit_):
    stats = ReasoningStats()
    provider = ScriptedLLMProvider("rainfall valley spring")
    retriever = ReasoningRetriever(exit_, corrective=True, rewrite=QueryRewrite(provider), observer=stats)
    answer = retriever.search("quantum chromodynamics lattice", filters=parse_filter({"region": "south"}), top_k=3)
    assert answer.snippets == [] and answer.refusal == CORRECTIVE_REFUSAL and not DIGITS.search(CORRECTIVE_REFUSAL)
    acts = [s["action"] for s in answer.trace if s["step"] == "act"]
    grades = [s["round"] for s in answer.trace if s["step"] == "grade"]
    assert acts == ["drop_filters", "rewrite"] and grades == [0, 1, 2]
    assert [s["allowed"] for s in answer.trace if s["step"] == "gate"] == []  # no gate configured: nothing recorded
    assert stats.rounds == {"drop_filters": 1, "rewrite": 1, "refuse": 1} and stats.refused == {"corrective": 1}


def test_the_corrective_loop_keeps_a_relevant_answer_and_says_when_filters_were_dropped(exit_, gate):
    retriever = ReasoningRetriever(exit_, gate=gate, corrective=True, retry_without_filters=True)
    kept = retriever.search("gearbox revenue supply delays", top_k=3)
    assert ids(kept)[0] == "gearbox" and not kept.filters_dropped and [s["step"] for s in kept.trace][-1] == "grade"
    dropped = retriever.search("motor plant output", filters=parse_filter({"region": "west"}), top_k=3)
    assert dropped.filters_dropped and ids(dropped)[0] == "motor" and all(s["filters_dropped"] for s in dropped.snippets)
    assert [s["allowed"] for s in dropped.trace if s["step"] == "gate"] == [True, True]  # the round re-ran the gate


def test_a_rewrite_naming_a_competitor_is_refused_and_the_answer_too(library, exit_, gate):
    _, spy = library
    retriever = ReasoningRetriever(exit_, gate=gate, corrective=True, rewrite=QueryRewrite(ScriptedLLMProvider("Acme gearbox revenue")))
    answer = retriever.search("quantum chromodynamics", top_k=3)
    assert answer.refusal == CORRECTIVE_REFUSAL and answer.refused[-1]["kind"] == "rewrite" and not spy.saw("acme")


def test_one_request_shares_one_call_budget(exit_):
    stats = LLMStats()
    inner = ScriptedLLMProvider(lambda prompt: "gearbox revenue\nmotor revenue" if "Split" in prompt else "sales")
    provider = GuardedLLMProvider(inner, max_calls=2, name="scripted", observer=stats)
    retriever = ReasoningRetriever(exit_, decomposer=LLMQueryDecomposer(provider), transform=StepBackTransform(provider))
    answer = retriever.search("revenue by product", top_k=3)
    assert inner.calls == 2 and stats.failures == {("scripted", "budget"): 2}  # the last two step-backs degraded
    assert [s["degraded"] for s in answer.trace if s["step"] == "transform"] == [False, True, True]
    assert SECRET not in json.dumps(answer.snippets) and all(SECRET not in p for p in inner.prompts)


def test_without_corrective_an_owned_retry_drops_filters_once_when_nothing_matched(exit_):
    retriever = ReasoningRetriever(exit_, owns_retry=True, retry_without_filters=True)
    answer = retriever.search("motor output", filters=parse_filter({"region": "west"}), top_k=3)
    assert answer.filters_dropped and ids(answer)[0] == "motor"
    strict = ReasoningRetriever(exit_, owns_retry=True, retry_without_filters=False)
    assert strict.search("motor output", filters=parse_filter({"region": "west"}), top_k=3).snippets == []


def test_a_trace_masks_the_numbers_a_model_invented_and_keeps_the_users(exit_):
    provider = ScriptedLLMProvider("gearbox revenue 2023 fell 15%\nmotor revenue ２０２３ 343.33 K")
    answer = ReasoningRetriever(exit_, transform=RAGFusionTransform(provider)).search("gearbox revenue in 2023", top_k=3)
    step = next(s for s in answer.trace if s["step"] == "transform")
    assert step["probes"] == ["gearbox revenue 2023 fell #", "motor revenue ２０２３ #"]  # a number goes with its unit and multiplier
    assert not re.search(r"15|343", json.dumps(answer.trace))
