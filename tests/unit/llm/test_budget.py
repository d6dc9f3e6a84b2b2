"""The per-request LLM call budget and the observer: the N+1th call of a request never reaches
the model; calls, failures, timeouts and refusals are reported."""

from __future__ import annotations

import threading

import pytest

from ragspine.errors import BackendError, ConfigError
from ragspine.llm.base import LLMBudgetExceeded, LLMTimeoutError
from ragspine.llm.budget import GuardedLLMProvider, llm_request
from ragspine.llm.observe import LLMStats, report_malformed
from ragspine.testing.llm import ScriptedLLMProvider

HI = [{"role": "user", "content": "hi"}]


def guarded(max_calls: int = 3, **script) -> tuple[GuardedLLMProvider, ScriptedLLMProvider, LLMStats]:
    inner = ScriptedLLMProvider(script.pop("answer", "ok"), **script)
    stats = LLMStats()
    return GuardedLLMProvider(inner, max_calls=max_calls, name="scripted", observer=stats), inner, stats


@pytest.mark.parametrize("max_calls", [1, 2, 5])
def test_the_budget_stops_the_call_after_the_last_one_allowed(max_calls):
    provider, inner, stats = guarded(max_calls)
    with llm_request():
        for _ in range(max_calls):
            assert provider.chat(HI) == "ok"
        with pytest.raises(LLMBudgetExceeded, match="RAGSPINE_LLM_MAX_CALLS") as info:
            provider.chat(HI)
    assert isinstance(info.value, BackendError)  # what every seam already degrades on
    assert inner.calls == max_calls  # the refused call never reached the model
    assert stats.calls["scripted"] == max_calls and stats.failures[("scripted", "budget")] == 1


def test_each_request_has_its_own_budget_and_nested_scopes_share_one():
    provider, inner, _ = guarded(2)
    for _ in range(3):
        with llm_request():
            provider.chat(HI)
            with llm_request() as inner_scope:  # a library's search inside a multi-library search
                provider.chat(HI)
                assert inner_scope.calls == 2
                with pytest.raises(LLMBudgetExceeded):
                    provider.chat(HI)
    assert inner.calls == 6


def test_threads_of_one_request_share_its_budget():
    provider, inner, _ = guarded(4)
    refused: list[BaseException] = []

    def call() -> None:
        try:
            provider.chat(HI)
        except LLMBudgetExceeded as exc:
            refused.append(exc)

    with llm_request() as scope:
        import contextvars

        threads = [threading.Thread(target=contextvars.copy_context().run, args=(call,)) for _ in range(10)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert scope.calls == 4 and inner.calls == 4 and len(refused) == 6


def test_outside_a_request_calls_are_not_counted():
    provider, inner, _ = guarded(1)
    for _ in range(3):
        provider.chat(HI)
    assert inner.calls == 3


def test_failures_are_reported_and_raised_unchanged():
    provider, _, stats = guarded(error=LLMTimeoutError("slow"))
    with pytest.raises(LLMTimeoutError):
        provider.chat(HI)
    provider.inner = ScriptedLLMProvider(error=RuntimeError("boom"))
    with pytest.raises(RuntimeError):
        provider.chat(HI)
    assert stats.calls["scripted"] == 2
    assert stats.failures == {("scripted", "timeout"): 1, ("scripted", "error"): 1}
    assert len(stats.seconds) == 2


def test_malformed_answers_reach_the_observer_through_the_provider(caplog):
    provider, _, stats = guarded()
    report_malformed(provider, "router", "I think finance?")
    report_malformed(ScriptedLLMProvider(), "router", "an unwrapped provider: only logged")
    assert stats.malformed == {"router": 1}
    assert "I think finance?" in caplog.text


def test_a_budget_must_allow_a_call():
    with pytest.raises(ConfigError, match="RAGSPINE_LLM_MAX_CALLS"):
        GuardedLLMProvider(ScriptedLLMProvider(), max_calls=0)
