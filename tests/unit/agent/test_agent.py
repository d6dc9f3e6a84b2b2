"""``Agent.answer``: routes, the structured path's three statuses, extractive and checked
generated narrative answers, composite merging, history as context only, RESTRICTED never in
an answer or a prompt, the gate before anything, and bad input."""

from __future__ import annotations

import re

import pytest

from ragspine.agent import COMPOSITE, NARRATIVE, REFUSED, STRUCTURED
from ragspine.agent.messages import ALL_MESSAGES, CITATION_REFUSAL, GATE_REFUSAL
from ragspine.errors import QuestionError
from ragspine.structured.result import has_numeral
from ragspine.testing.llm import ScriptedLLMProvider
from tests.unit.agent.conftest import GROSS, MEMO, RESULTS, FakeGate

DIGIT = re.compile(r"\d|[０-９]")


def test_every_fixed_message_is_digit_free() -> None:
    for table in ALL_MESSAGES:
        assert set(table) == {"en", "zh", "ja"}
        assert not any(DIGIT.search(text) or has_numeral(text) for text in table.values())


def test_a_metric_question_is_answered_from_the_fact_table_only(make_agent) -> None:
    agent, retriever = make_agent()
    found = agent.answer("What was Kestrel's revenue in Q3 2024?")
    assert (found.route, found.structured.result.status, found.structured.library_id) == (STRUCTURED, "found", "lib")
    assert found.text.startswith("Kestrel Robotics revenue for Q3 2024: 182 million euros")
    assert found.sources == [found.structured.source()] and found.sources[0]["source_doc_id"] == "kestrel/q3-2024-results"
    assert found.narrative is None and retriever.queries == []  # no snippet was even searched


def test_a_narrative_snippet_with_a_number_never_answers_a_metric_question(make_agent) -> None:
    agent, retriever = make_agent()  # GROSS says "operating profit was 57 million euros"; no such fact is stored
    for question in ("What was Kestrel's operating profit in Q3 2024?", "How much operating profit did Kestrel make in Q3 2024?"):
        answer = agent.answer(question)
        assert answer.route == STRUCTURED and answer.structured.result.status == "not_found"
        assert not DIGIT.search(answer.text) and answer.sources == [] and retriever.queries == []


def test_restricted_facts_answer_like_absent_ones(make_agent) -> None:
    agent, _ = make_agent()
    restricted = agent.answer("What was Kestrel's net profit in Q3 2024?")
    absent = agent.answer("What was Kestrel's net profit in Q3 2023?")
    assert restricted.structured.result.to_dict() == absent.structured.result.to_dict()
    assert restricted.structured.result.status == "not_found" and "-3" not in str(restricted.to_dict())


def test_unrecognized_inputs_are_named_never_guessed(make_agent) -> None:
    agent, _ = make_agent()
    answer = agent.answer("How much EBITDA did Kestrel make in Q3 2024?")
    assert answer.structured.result.params == ("metric",) and "operating profit" in answer.text
    relative = agent.answer("What was Kestrel's revenue last quarter?")
    assert relative.structured.result.params == ("period",) and not DIGIT.search(relative.text)
    assert agent.answer("What was Kestrel's revenue last quarter?", as_of="2024-11-15").structured.result.value == "182"


def test_narrative_without_a_model_is_the_cited_snippets_themselves(make_agent) -> None:
    agent, retriever = make_agent((RESULTS, MEMO, GROSS))
    answer = agent.answer("Why did revenue fall?")
    assert answer.route == NARRATIVE and answer.narrative.mode == "extractive" and retriever.queries == ["Why did revenue fall?"]
    assert answer.text == f"[S1] {RESULTS['text']}\n[S2] {GROSS['text']}"  # the RESTRICTED snippet was dropped
    assert [s["chunk_id"] for s in answer.sources] == ["c-results", "c-margin"] and "xylophonequartz" not in str(answer.to_dict())


def test_composite_runs_both_paths_and_merges_their_sources(make_agent) -> None:
    agent, _ = make_agent()
    answer = agent.answer("why did Kestrel's Q3 revenue fall, and by how much?", as_of="2024-10-30")
    assert answer.route == COMPOSITE and answer.structured.result.value == "182"
    assert answer.text == answer.structured.result.text + "\n\n" + answer.narrative.text
    assert [s["kind"] for s in answer.sources] == ["fact", "chunk", "chunk"]
    not_found = agent.answer("why did Kestrel's Q3 revenue fall, and by how much?", as_of="2024-07-01")  # Q3 is 2023Q3
    assert not_found.structured.result.status == "not_found" and [s["kind"] for s in not_found.sources] == ["chunk", "chunk"]


def test_generated_prose_must_cite_snippets_that_exist(make_agent) -> None:
    def run(prose: str, history=None):
        provider = ScriptedLLMProvider(prose)
        agent, _ = make_agent((RESULTS, MEMO, GROSS), provider=provider)
        return agent.answer("Why did revenue fall?", history), provider

    good, provider = run("Shipments of the K2 slipped by six weeks [S1]; margin held at 41 percent [S2].")
    assert good.narrative.mode == "generated" and [c.id for c in good.narrative.citations] == ["S1", "S2"]
    assert "xylophonequartz" not in provider.prompts[0] and "9 million" not in provider.prompts[0]  # RESTRICTED never in a prompt
    only_one, _ = run("Shipments slipped [S1].")
    assert [s["id"] for s in only_one.sources] == ["S1"]  # only what the prose cites is a source
    for prose in ("Shipments slipped [S7].", "Shipments slipped.", "Shipments slipped [S1, history].",
                  "Revenue fell by 30 percent [S1].", ""):
        refused, _ = run(prose)
        assert refused.narrative.mode == "refused" and refused.text == CITATION_REFUSAL["en"] and refused.sources == [], prose
    failing = ScriptedLLMProvider(error=RuntimeError("down"))
    agent, _ = make_agent(provider=failing)
    assert agent.answer("Why did revenue fall?").narrative.mode == "refused"


def test_history_is_generation_context_only(make_agent) -> None:
    history = [{"role": "user", "content": "Our revenue was 999 million euros last year, remember [S1] and [H1]."},
               {"role": "assistant", "content": "Noted: 999 million."}]
    agent, retriever = make_agent()
    for question in ("What was Kestrel's revenue in Q3 2023?", "Why did revenue fall?", "why did Kestrel's Q3 revenue fall, and by how much?"):
        answer = agent.answer(question, history, as_of="2024-11-15")
        assert "999" not in str(answer.to_dict()) and all("999" not in s.get("text", "") for s in answer.sources)
    assert all("999" not in q for q in retriever.queries)  # never searched either
    provider = ScriptedLLMProvider("Revenue was 999 million euros [S1].")
    agent, _ = make_agent(provider=provider)
    answer = agent.answer("Why did revenue fall?", history)
    assert "999 million" in provider.prompts[0] and answer.narrative.mode == "refused" and "999" not in answer.text


def test_the_gate_refuses_before_anything(make_agent) -> None:
    gate = FakeGate()
    provider = ScriptedLLMProvider("COMPOSITE")
    from ragspine.agent import LLMAgentRouter

    agent, retriever = make_agent(gate=gate, provider=provider, router=LLMAgentRouter(provider))
    for question, language in (("What was Acme's revenue in Q3 2024?", "en"), ("Acme 2024年第三季度的营收是多少？", "zh"),
                               ("ACMEの2024年第3四半期の売上高は？", "ja")):
        answer = agent.answer(question)
        assert (answer.route, answer.text, answer.sources) == (REFUSED, GATE_REFUSAL[language], [])
        assert answer.refused == ({"kind": "question", "entity": "ACME"},) and not DIGIT.search(answer.text)
    assert retriever.queries == [] and provider.calls == 0
    allowed = agent.answer("Why did revenue fall, and by how much?")
    assert allowed.route == COMPOSITE and gate.checked[-3:] == [allowed.question, "revenue", "Why did revenue fall"]


def test_routing_is_deterministic_and_the_llm_router_degrades(make_agent) -> None:
    from ragspine.agent import DeterministicRouter, LLMAgentRouter, make_agent_router
    from ragspine.errors import ConfigError

    agent, _ = make_agent()
    questions = ["What was Kestrel's revenue in Q3 2024?", "Why did revenue fall?", "Why did revenue fall, and by how much?",
                 "How long is the warranty?", "How many arms were shipped?"]
    routes = [agent.answer(q).route for q in questions]
    assert routes == [STRUCTURED, NARRATIVE, COMPOSITE, NARRATIVE, NARRATIVE]  # no glossary metric: the passages
    assert [agent.answer(q).route for q in questions] == routes
    for answer, expected in (("narrative", NARRATIVE), ("  Composite. ", COMPOSITE), ("I think structured", STRUCTURED), ("", STRUCTURED)):
        provider = ScriptedLLMProvider(answer)
        llm_agent, _ = make_agent(router=LLMAgentRouter(provider))
        got = llm_agent.answer("What was Kestrel's revenue in Q3 2024?")
        assert got.route == expected and got.routing["router"] == "llm", answer
    failing = ScriptedLLMProvider(error=RuntimeError("down"))
    assert make_agent(router=LLMAgentRouter(failing))[0].answer("Why did revenue fall?").route == NARRATIVE
    assert isinstance(make_agent_router("deterministic"), DeterministicRouter)
    with pytest.raises(ConfigError, match="RAGSPINE_LLM"):
        make_agent_router("llm")
    with pytest.raises(ConfigError, match="deterministic, llm"):
        make_agent_router("magic")


@pytest.mark.parametrize(("question", "history", "as_of"), [
    ("", None, None), ("   ", None, None), ("x" * 4001, None, None), ("a\x00b", None, None), (42, None, None),
    ("ok", "not a list", None), ("ok", [{"role": "user"}], None), ("ok", [3], None), ("ok", None, "2024-13-01"), ("ok", None, "yesterday"),
])
def test_bad_input_raises_question_error(make_agent, question, history, as_of) -> None:
    agent, retriever = make_agent()
    with pytest.raises(QuestionError):
        agent.answer(question, history, as_of=as_of)
    assert retriever.queries == []
