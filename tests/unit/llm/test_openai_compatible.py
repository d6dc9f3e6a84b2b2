"""``OpenAICompatibleLLMProvider`` against a stub OpenAI-compatible server the tests start:
what it sends, bounded retries, timeouts, and every failure wrapped in RAGSpine's tree."""

from __future__ import annotations

import time

import pytest

from tests.helpers import needs

needs("openai")

from ragspine.deadline import deadline
from ragspine.errors import BackendError, ConfigError
from ragspine.llm import openai_compatible
from ragspine.llm.base import LLMTimeoutError, make_llm_provider
from ragspine.llm.openai_compatible import OpenAICompatibleLLMProvider
from ragspine.testing.openai_stub import OpenAIStub, Raw, Slow, Status

HELLO = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Rank: [0] a [1] b"}]


@pytest.fixture
def stub(monkeypatch):
    monkeypatch.setattr(openai_compatible, "_BACKOFF", 0.01)  # the retry pauses, shortened
    with OpenAIStub("1, 0") as s:
        yield s


def provider(stub: OpenAIStub, **options) -> OpenAICompatibleLLMProvider:
    options = {"model": "stub-model", "timeout": 2.0, "retries": 2, **options}
    built = make_llm_provider(stub.url, **options)
    assert isinstance(built, OpenAICompatibleLLMProvider)
    return built


def test_sends_model_messages_and_temperature_zero(stub):
    assert provider(stub, api_key="sk-test", max_tokens=64).chat(HELLO) == "1, 0"
    (body,) = stub.requests
    assert body["model"] == "stub-model"
    assert body["messages"] == HELLO
    assert body["temperature"] == 0
    assert body["max_tokens"] == 64
    assert "seed" not in body
    assert stub.headers[0]["authorization"] == "Bearer sk-test"


def test_a_base_url_needs_no_key_and_a_seed_is_sent_when_set(stub):
    OpenAICompatibleLLMProvider(model="m", base_url=stub.url, seed=7).chat(HELLO)
    assert stub.requests[0]["seed"] == 7
    assert stub.headers[0]["authorization"] == "Bearer not-needed"


@pytest.mark.parametrize("failure", [Status(500), Status(503), Status(429, retry_after=0), Status(408)])
def test_retryable_failures_are_retried_then_answered(stub, failure):
    stub.script(failure, failure)
    assert provider(stub, retries=2).chat(HELLO) == "1, 0"
    assert stub.calls == 3


@pytest.mark.parametrize("retries", [0, 1, 3])
def test_retries_are_bounded_and_the_last_failure_is_a_backend_error(stub, retries):
    stub.answer = Status(500)
    with pytest.raises(BackendError, match="HTTP 500") as info:
        provider(stub, retries=retries).chat(HELLO)
    assert stub.calls == retries + 1
    assert len(str(info.value).splitlines()) == 1 and "RAGSPINE_LLM_RETRIES" in str(info.value)


@pytest.mark.parametrize("code,fix", [(400, "refused"), (401, "RAGSPINE_LLM_API_KEY"), (403, "RAGSPINE_LLM_API_KEY"),
                                      (404, "RAGSPINE_LLM_MODEL")])
def test_client_errors_are_not_retried_and_name_the_fix(stub, code, fix):
    stub.answer = Status(code)
    with pytest.raises(BackendError, match=fix):
        provider(stub, retries=3).chat(HELLO)
    assert stub.calls == 1


def test_a_slow_answer_times_out_as_a_backend_error(stub):
    stub.answer = Slow(3.0, "too late")
    started = time.monotonic()
    with pytest.raises(LLMTimeoutError, match="RAGSPINE_LLM_TIMEOUT") as info:
        provider(stub, timeout=0.3, retries=1).chat(HELLO)
    assert isinstance(info.value, BackendError)
    assert stub.calls == 2  # a timeout is retried, boundedly
    assert time.monotonic() - started < 2.5


def test_the_request_deadline_bounds_each_attempt_and_stops_retrying(stub):
    stub.answer = Slow(3.0, "too late")
    started = time.monotonic()
    with deadline(0.4), pytest.raises(LLMTimeoutError):
        provider(stub, timeout=10.0, retries=5).chat(HELLO)
    assert time.monotonic() - started < 1.5
    assert stub.calls == 1


@pytest.mark.parametrize("body", [b"{not json", b"<html>502</html>", b'{"choices": []}', b'{"foo": 1}'])
def test_a_malformed_http_answer_is_a_backend_error(stub, body):
    stub.answer = Raw(body, "application/json")
    with pytest.raises(BackendError):
        provider(stub, retries=0).chat(HELLO)


def test_a_server_that_is_not_there_is_a_backend_error_saying_so():
    with OpenAIStub() as gone:
        url = gone.url
    with pytest.raises(BackendError, match="is the server running"):
        OpenAICompatibleLLMProvider(model="m", base_url=url, timeout=1.0, retries=1).chat(HELLO)


def test_configuration_errors_name_the_setting():
    with pytest.raises(ConfigError, match="RAGSPINE_LLM_MODEL"):
        OpenAICompatibleLLMProvider(base_url="http://127.0.0.1:1/v1")
    with pytest.raises(ConfigError, match="RAGSPINE_LLM_TIMEOUT"):
        OpenAICompatibleLLMProvider(model="m", base_url="http://127.0.0.1:1/v1", timeout=0)
    with pytest.raises(ConfigError, match="RAGSPINE_LLM_TIMEOUT"):
        OpenAICompatibleLLMProvider(model="m", base_url="http://127.0.0.1:1/v1", retries=11)


def test_the_constructor_does_no_io(stub):
    provider(stub)
    assert stub.calls == 0
