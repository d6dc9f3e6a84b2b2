"""HyDE, RAG-Fusion and step-back: one call each with the question alone in the prompt; the
answer read into probes; any failure or unreadable answer is no probes (degraded), counted."""

from __future__ import annotations

import pytest

from ragspine.errors import BackendError, ConfigError
from ragspine.llm.budget import GuardedLLMProvider, llm_request
from ragspine.llm.observe import LLMStats
from ragspine.retrieval.query import prompts
from ragspine.retrieval.query.base import Probes, make_query_transform
from ragspine.retrieval.query.transforms import HyDETransform, RAGFusionTransform, StepBackTransform
from ragspine.testing.llm import ScriptedLLMProvider
from ragspine.testing.reasoning import scripted_provider, seam_of

QUESTION = "Why did gearbox revenue fall in 2023?"


def guarded(answer: object = "", error: BaseException | None = None, max_calls: int = 10) -> tuple[GuardedLLMProvider, ScriptedLLMProvider, LLMStats]:
    inner = ScriptedLLMProvider(answer, error=error)  # type: ignore[arg-type]
    stats = LLMStats()
    return GuardedLLMProvider(inner, max_calls=max_calls, name="scripted", observer=stats), inner, stats


def test_hyde_returns_the_passage_as_a_dense_probe_and_asks_with_the_question_only():
    provider, inner, _ = guarded("Gearbox revenue fell because supply delays halted deliveries.")
    probes = HyDETransform(provider).probes(QUESTION)
    assert probes == Probes(dense=("Gearbox revenue fell because supply delays halted deliveries.",))
    assert inner.prompts == [prompts.hyde_prompt(QUESTION)] and seam_of(inner.prompts[0]) == "hyde"


def test_rag_fusion_reads_distinct_lines_without_numbering_or_the_question_and_caps_them():
    answer = f"1. gearbox revenue 2023\n- Gearbox Revenue 2023\n\"why revenue fell\"\n{QUESTION}\nsales drop gearbox\nfourth one"
    provider, inner, _ = guarded(answer)
    probes = RAGFusionTransform(provider, fanout=3).probes(QUESTION)
    assert probes.queries == ("gearbox revenue 2023", "why revenue fell", "sales drop gearbox") and not probes.dense
    assert "Write 3 different search queries" in inner.prompts[0]


def test_step_back_adds_one_broader_question():
    provider, _, _ = guarded("Step-back question: What drives gearbox revenue?\nextra line")
    assert StepBackTransform(provider).probes(QUESTION).queries == ("What drives gearbox revenue?",)


@pytest.mark.parametrize("cls, answer", [
    (HyDETransform, "ok"), (RAGFusionTransform, f"{QUESTION}\n\n"), (StepBackTransform, ""), (StepBackTransform, QUESTION),
    (StepBackTransform, "x" * 400),
])
def test_an_unreadable_answer_is_no_probes_and_is_counted_as_malformed(cls, answer):
    provider, _, stats = guarded(answer)
    assert cls(provider).probes(QUESTION) == Probes(degraded=True)
    assert stats.malformed == {cls.name: 1}


@pytest.mark.parametrize("cls", [HyDETransform, RAGFusionTransform, StepBackTransform])
def test_a_failed_call_or_a_spent_budget_is_no_probes(cls):
    provider, _, stats = guarded(error=BackendError("down"))
    assert cls(provider).probes(QUESTION).degraded and stats.failures == {("scripted", "error"): 1}
    provider, inner, stats = guarded("fine answer with words", max_calls=1)
    with llm_request():
        provider.chat([{"role": "user", "content": "spend the budget"}])
        assert cls(provider).probes(QUESTION).degraded
    assert inner.calls == 1 and stats.failures == {("scripted", "budget"): 1}


def test_the_factory_reads_the_registry_and_needs_a_provider():
    assert make_query_transform("none") is None
    transform = make_query_transform("RAG-Fusion".replace("-", "_"), provider=scripted_provider(), fanout=2)
    assert isinstance(transform, RAGFusionTransform) and transform.fanout == 2
    with pytest.raises(ConfigError, match="needs an LLM provider"):
        make_query_transform("hyde")  # no provider given
    with pytest.raises(ConfigError, match="unknown query transform 'nope'.*hyde, rag_fusion, step_back"):
        make_query_transform("nope", provider=scripted_provider())
    with pytest.raises(ConfigError, match="RAGSPINE_QUERY_FANOUT"):
        make_query_transform("rag_fusion", provider=scripted_provider(), fanout=9)


def test_max_tokens_is_the_seams_cap_within_the_configured_one():
    assert HyDETransform(scripted_provider(), max_tokens=256).max_tokens == 160
    assert HyDETransform(scripted_provider(), max_tokens=50).max_tokens == 50
    provider = ScriptedLLMProvider("one two three")
    HyDETransform(provider, max_tokens=40).probes(QUESTION)
    assert provider.messages[0][0]["role"] == "user"


def test_readers_are_pure_and_strict():
    assert prompts.read_lines("a\nA\n b ", "q", 5) == ["a", "b"]
    assert prompts.read_lines(None, "q", 5) is None
    assert prompts.read_passage("营收下滑的原因是供应延迟") is not None and prompts.read_passage("two words") is None
    assert len(prompts.read_passage("word " * 1000) or "") == prompts.MAX_PASSAGE_CHARS
    assert prompts.read_adaptive("It is COMPLEX.") is True and prompts.read_adaptive("simple") is False
    assert prompts.read_adaptive("maybe") is None
