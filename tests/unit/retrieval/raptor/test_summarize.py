"""Synthesis texts: extractive (verbatim, central, bounded) and the LLM's (its prompt, its fallbacks)."""

from __future__ import annotations

import pytest

from ragspine.errors import BackendError, ConfigError
from ragspine.retrieval.raptor.summarize import ExtractiveSummarizer, LLMSummarizer, make_summarizer, summary_prompt
from ragspine.testing.llm import ScriptedLLMProvider

MEMBERS = [
    "Gearbox supply delays slowed the northern plant. The canteen menu changed.",
    "Gearbox supply delays hit the south plant. Castings arrived late.",
    "Supply delays of gearbox castings grew in 2023.",
]


def test_extractive_takes_central_sentences_verbatim_in_reading_order() -> None:
    text, by = ExtractiveSummarizer().summarize(MEMBERS, max_chars=200)
    assert by == "extractive"
    sentences = [s for m in MEMBERS for s in m.replace(". ", ".|").split("|")]
    chosen = [s for s in sentences if s in text]
    assert text == " ".join(chosen) and len(text) <= 200
    assert text.startswith("Gearbox supply delays slowed the northern plant.")
    tight, _ = ExtractiveSummarizer().summarize(MEMBERS, max_chars=120)
    assert "canteen" not in tight and "Gearbox supply delays hit the south plant." in tight  # the off-topic sentence comes last


def test_extractive_is_bounded_and_deterministic() -> None:
    summarizer = ExtractiveSummarizer()
    short, _ = summarizer.summarize(MEMBERS, max_chars=60)
    assert len(short) <= 60 and short == summarizer.summarize(list(MEMBERS), max_chars=60)[0]
    head, _ = summarizer.summarize(["x" * 500 + "."], max_chars=40)
    assert head == "x" * 40  # a first sentence longer than the budget: its head
    assert summarizer.summarize([], max_chars=40) == ("", "extractive")
    with pytest.raises(ConfigError):
        summarizer.summarize(MEMBERS, max_chars=0)


def test_extractive_reads_cjk() -> None:
    text, _ = ExtractiveSummarizer().summarize(["齿轮箱供应延误。食堂换了菜单。", "齿轮箱供应延误影响南方工厂。"], max_chars=40)
    assert "齿轮箱供应延误" in text and len(text) <= 40


def test_llm_summary_is_cut_at_a_sentence_and_its_prompt_holds_only_the_members() -> None:
    provider = ScriptedLLMProvider("Summary: Gearbox supply was late at every plant. Castings were the cause. " + "More. " * 50)
    text, by = LLMSummarizer(provider).summarize(MEMBERS, max_chars=80)
    assert by == "llm" and len(text) <= 80 and text.endswith(".") and text.startswith("Gearbox supply was late")
    assert provider.prompts == [summary_prompt(MEMBERS)]
    assert all(m in provider.prompts[0] for m in MEMBERS)


@pytest.mark.parametrize("provider", [ScriptedLLMProvider("   "), ScriptedLLMProvider(error=BackendError("timeout"))])
def test_llm_failure_falls_back_to_the_extractive_text(provider: ScriptedLLMProvider) -> None:
    text, by = LLMSummarizer(provider).summarize(MEMBERS, max_chars=120)
    assert text == ExtractiveSummarizer().summarize(MEMBERS, max_chars=120)[0]
    assert by.startswith("extractive") and provider.calls == 1


def test_llm_summarizer_needs_a_model_and_the_registry_builds_both() -> None:
    with pytest.raises(ConfigError, match="RAGSPINE_LLM"):
        make_summarizer("llm")
    assert make_summarizer("extractive").name == "extractive"
    assert make_summarizer("llm", provider=ScriptedLLMProvider("x")).name == "llm"
    with pytest.raises(ConfigError, match="extractive, llm"):
        make_summarizer("abstractive")


def test_prompt_is_bounded() -> None:
    prompt = summary_prompt(["word " * 1000] * 20)
    assert len(prompt) < 5000
