"""An LLM call's time comes out of the request's deadline less a reserve for the plain search,
and every HTTP attempt — retries included — out of the request's call budget.

Real HTTP: the OpenAI-compatible adapter against :class:`OpenAIStub` (a model that hangs for
120 s, or one that always fails), behind :class:`GuardedLLMProvider`."""

from __future__ import annotations

import time

import pytest

from tests.helpers import needs

needs("openai")

from ragspine import deadline  # noqa: E402
from ragspine.errors import BackendError  # noqa: E402
from ragspine.llm.base import LLMBudgetExceeded, LLMTimeoutError  # noqa: E402
from ragspine.llm.budget import GuardedLLMProvider, llm_request  # noqa: E402
from ragspine.llm.observe import LLMStats  # noqa: E402
from ragspine.llm.openai_compatible import OpenAICompatibleLLMProvider  # noqa: E402
from ragspine.testing.openai_stub import OpenAIStub, Slow, Status  # noqa: E402

HELLO = [{"role": "user", "content": "hello"}]


def guarded(stub: OpenAIStub, *, timeout: float = 2.0, retries: int = 2, max_calls: int = 10,
            reserve: float | None = None) -> tuple[GuardedLLMProvider, LLMStats]:
    inner = OpenAICompatibleLLMProvider(model="m", base_url=stub.url, timeout=timeout, retries=retries)
    stats = LLMStats()
    kept = {} if reserve is None else {"reserve": reserve}
    return GuardedLLMProvider(inner, max_calls=max_calls, name="openai", observer=stats, **kept), stats


def test_reserve_ends_the_work_inside_that_much_before_the_deadline() -> None:
    with deadline.reserve(5) as left:
        assert left is None and deadline.remaining() is None  # no deadline: nothing is bounded
    with deadline.deadline(10):
        with deadline.reserve(4) as left:
            assert left is not None and 5.9 < left <= 6.0
            with deadline.reserve(4) as inner:  # nested: the time is not kept twice
                assert inner is not None and 5.9 < inner <= 6.0
        remaining = deadline.remaining()
        assert remaining is not None and remaining > 9.9
        with deadline.reserve(20) as left:
            assert left == 0.0 and deadline.expired()
        assert not deadline.expired()


def test_a_hung_model_never_takes_the_time_kept_for_the_plain_search() -> None:
    """RAGSPINE_REQUEST_TIMEOUT=4, RAGSPINE_LLM_TIMEOUT=2, retries 2, the default reserve (a
    quarter: 1 s). Before, the retry took what was left and the request reached its deadline
    inside the model call (504)."""
    with OpenAIStub(Slow(120)) as stub:
        provider, stats = guarded(stub)
        with deadline.deadline(4), llm_request():
            started = time.monotonic()
            with pytest.raises(LLMTimeoutError, match="within 2 s"):
                provider.chat(HELLO)
            assert stub.calls == 1  # 1 s left for the model: no room for a whole attempt, no retry
            with pytest.raises(LLMTimeoutError, match="what the request's deadline left it"):
                provider.chat(HELLO)  # the next call gets what is left of the model's 3 s
            assert stub.calls == 2
            with pytest.raises(LLMTimeoutError, match="no time left for an LLM call"):
                provider.chat(HELLO)  # none left: not sent
            assert stub.calls == 2
            left = deadline.remaining()
            assert left is not None and left > 0.8, left  # the reserve is intact
            assert time.monotonic() - started < 3.3
    assert stats.failures[("openai", "timeout")] == 2 and stats.failures[("openai", "budget")] == 1


def test_a_set_reserve_is_kept_and_a_retry_runs_when_a_whole_attempt_fits() -> None:
    with OpenAIStub() as stub:
        stub.script(Status(503, retry_after=0), "fine")
        provider, _ = guarded(stub, timeout=1.0, reserve=2.5)
        with deadline.deadline(5), llm_request():
            assert provider.chat(HELLO) == "fine"  # 2.5 s for the model: the retry fits
        assert stub.calls == 2
        stub.script(Status(503, retry_after=0), "fine")
        with deadline.deadline(3), llm_request(), pytest.raises(BackendError, match="HTTP 503"):
            provider.chat(HELLO)  # 0.5 s for the model: no retry
        assert stub.calls == 3


def test_every_http_attempt_takes_from_the_request_budget() -> None:
    """RAGSPINE_LLM_MAX_CALLS=4 with retries: a failing model got 1 + retries attempts per call,
    every call — 12 requests for two calls here before; now 4 in all."""
    with OpenAIStub(Status(500)) as stub:
        provider, stats = guarded(stub, retries=5, max_calls=4)
        with llm_request() as calls:
            with pytest.raises(BackendError, match="HTTP 500"):
                provider.chat(HELLO)  # 1 attempt + 3 retries, then the budget is spent
            with pytest.raises(LLMBudgetExceeded, match="retries count"):
                provider.chat(HELLO)
            assert calls.calls == 4
        assert stub.calls == 4
    assert stats.failures[("openai", "budget")] == 1


def test_outside_a_request_scope_retries_are_not_counted() -> None:
    with OpenAIStub(Status(500)) as stub:
        provider, _ = guarded(stub, retries=2, max_calls=1)
        for _ in range(2):
            with pytest.raises(BackendError, match="HTTP 500"):
                provider.chat(HELLO)
        assert stub.calls == 6
