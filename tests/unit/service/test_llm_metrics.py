"""The service's LLM seams from settings alone (``RAGSPINE_LLM`` = a stub OpenAI-compatible
server): calls, failures, the budget's refusals, latency and malformed answers on /metrics."""

from __future__ import annotations

import pytest

from tests.helpers import needs

needs("openai")

from fastapi.testclient import TestClient

from ragspine.service.app import create_app
from ragspine.testing.openai_stub import OpenAIStub, Status
from tests.unit.service.conftest import doc, ingest, make_settings, new_library, new_tenant, retrieve

DOCS = [doc("d1", "Gearbox warranty is 36 months."), doc("d2", "Gearbox repairs take days."),
        doc("d3", "Gearbox noise claims.", sensitivity="RESTRICTED")]


def ids(response) -> list[str]:
    assert response.status_code == 200, response.text
    return [s["doc_id"] for s in response.json()["snippets"]]


@pytest.fixture
def stub():
    with OpenAIStub() as s:
        yield s


def test_llm_calls_failures_latency_and_malformed_answers_are_metrics(tmp_path, stub) -> None:
    settings = make_settings(tmp_path, RAGSPINE_LLM=stub.url, RAGSPINE_LLM_MODEL="stub-model", RAGSPINE_LLM_RETRIES="0",
                             RAGSPINE_RERANKER="listwise", RAGSPINE_LLM_MAX_CALLS="1")
    with TestClient(create_app(settings)) as client:
        headers = new_tenant(client)
        new_library(client, headers, "hb")
        ingest(client, headers, "hb", *DOCS)
        fused = ids(retrieve(client, headers, "gearbox", reranker="none"))
        stub.answer = "1, 0"
        assert ids(retrieve(client, headers, "gearbox")) == fused[::-1]
        stub.answer = "no idea"
        assert ids(retrieve(client, headers, "gearbox")) == fused
        stub.answer = Status(503)
        assert ids(retrieve(client, headers, "gearbox")) == fused
        text = client.get("/metrics").text
    assert stub.calls == 3 and all("Gearbox noise" not in p for p in stub.prompts)
    assert 'ragspine_llm_calls_total{provider="openai"} 3.0' in text
    assert 'ragspine_llm_call_duration_seconds_count{provider="openai"} 3.0' in text
    assert 'ragspine_llm_failures_total{provider="openai",reason="error"} 1.0' in text
    assert 'ragspine_llm_malformed_answers_total{seam="listwise"} 1.0' in text


def test_the_budget_refusals_are_counted(tmp_path, stub) -> None:
    settings = make_settings(tmp_path, RAGSPINE_LLM=stub.url, RAGSPINE_LLM_MODEL="stub-model", RAGSPINE_LIBRARY_ROUTER="llm",
                             RAGSPINE_RERANKER="listwise", RAGSPINE_LLM_MAX_CALLS="1")
    stub.answer = '["a", "b"]'
    with TestClient(create_app(settings)) as client:
        headers = new_tenant(client)
        for name in ("a", "b"):
            new_library(client, headers, name)
            ingest(client, headers, name, *DOCS[:2])
        assert sorted(ids(retrieve(client, headers, "gearbox"))) == ["d1", "d1", "d2", "d2"]
        text = client.get("/metrics").text
    assert stub.calls == 1  # the router; both judges refused
    assert 'ragspine_llm_failures_total{provider="openai",reason="budget"} 2.0' in text
