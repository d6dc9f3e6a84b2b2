"""A hung or failing model degrades a request, it never fails it: the model's time comes out of
the request's deadline less the reserve kept for the plain search (RAGSPINE_LLM_RESERVE, by
default a quarter of RAGSPINE_REQUEST_TIMEOUT), and every HTTP attempt out of
RAGSPINE_LLM_MAX_CALLS.

The model is an :class:`OpenAIStub` on loopback that answers after 120 s (or always fails);
the service runs under TestClient with RAGSPINE_REQUEST_TIMEOUT=3 and RAGSPINE_LLM_TIMEOUT=2,
the attack's 30 s / 20 s scaled down. Before, HyDE and HyDE + listwise answered 504 at 3.0 s
and /v1/answer with the server's HyDE and judge as well."""

from __future__ import annotations

import time

import pytest

from tests.helpers import needs

needs("openai")

from fastapi.testclient import TestClient  # noqa: E402

from ragspine.service.app import create_app  # noqa: E402
from ragspine.testing.openai_stub import OpenAIStub, Slow, Status  # noqa: E402
from tests.unit.service.conftest import doc, ingest, make_settings, new_library, new_tenant  # noqa: E402

TIMEOUT = 3.0
DOCS = [doc("d1", "Gearbox warranty is 36 months."), doc("d2", "Gearbox repairs take days."),
        doc("d3", "Shipping of spare parts is weekly.")]
QUESTION = "How long is the gearbox warranty?"
#: name -> (the server's own LLM settings, the request: path and body)
REQUESTS = {
    "hyde": ({}, ("/v1/retrieve", {"query": "gearbox warranty", "query_transform": "hyde"})),
    "listwise": ({}, ("/v1/retrieve", {"query": "gearbox warranty", "reranker": "listwise"})),
    "hyde+listwise": ({}, ("/v1/retrieve", {"query": "gearbox warranty", "query_transform": "hyde", "reranker": "listwise"})),
    "answer": ({"RAGSPINE_QUERY_TRANSFORM": "hyde", "RAGSPINE_RERANKER": "listwise"}, ("/v1/answer", {"question": QUESTION})),
}


def served(tmp_path, stub: OpenAIStub, **env: str) -> TestClient:
    env = {"RAGSPINE_LLM": stub.url, "RAGSPINE_LLM_MODEL": "stub-model", "RAGSPINE_LLM_TIMEOUT": "2", "RAGSPINE_LLM_RETRIES": "2",
           "RAGSPINE_REQUEST_TIMEOUT": f"{TIMEOUT:g}", **env}
    settings = make_settings(tmp_path, **env)
    return TestClient(create_app(settings))


def library(client: TestClient) -> dict[str, str]:
    headers = new_tenant(client)
    new_library(client, headers, "hb")
    ingest(client, headers, "hb", *DOCS)
    return headers


def plain(client: TestClient, headers: dict[str, str], path: str, body: dict) -> dict:
    """The same request without the model (the degraded answer it must equal)."""
    if path == "/v1/retrieve":
        body = {**body, "query_transform": "none", "reranker": "none"}
    r = client.post(path, json=body, headers=headers)
    assert r.status_code == 200, r.text
    return r.json()


@pytest.mark.parametrize("name", list(REQUESTS))
def test_a_hung_model_degrades_within_the_request_timeout(tmp_path, name) -> None:
    server, (path, body) = REQUESTS[name]
    with OpenAIStub(Slow(120)) as stub, served(tmp_path, stub, **server) as client:
        headers = library(client)
        if path == "/v1/retrieve":
            expected = [s["chunk_id"] for s in plain(client, headers, path, body)["snippets"]]
        started = time.monotonic()
        r = client.post(path, json=body, headers=headers)
        took = time.monotonic() - started
        assert r.status_code == 200, f"{r.status_code} after {took:.2f} s: {r.text}"
        assert took < TIMEOUT, took
        if path == "/v1/retrieve":
            assert [s["chunk_id"] for s in r.json()["snippets"]] == expected  # the plain search's answer
        else:
            answer = r.json()
            assert answer["route"] == "narrative" and answer["narrative"]["mode"] == "refused"  # no prose, no guess
            assert answer["narrative"]["citations"] == []
        assert stub.calls <= 2  # one attempt, perhaps a short second call; never a retry into the reserve


@pytest.mark.parametrize("name", ["hyde+listwise", "answer"])
def test_retries_count_against_the_call_budget(tmp_path, name) -> None:
    """RAGSPINE_LLM_MAX_CALLS=3 with 2 retries: a failing model got 3 attempts for each of the
    request's calls (6 for HyDE + judge, 9 for /v1/answer's HyDE, judge and prose)."""
    server, (path, body) = REQUESTS[name]
    with OpenAIStub(Status(500)) as stub:
        settings = {**server, "RAGSPINE_LLM_MAX_CALLS": "3", "RAGSPINE_REQUEST_TIMEOUT": "30"}
        with served(tmp_path, stub) as setup:
            headers = library(setup)
        with served(tmp_path, stub, **settings) as client:
            before = stub.calls
            r = client.post(path, json=body, headers=headers)
            assert r.status_code == 200, r.text
            assert stub.calls - before == 3
            metrics = client.get("/metrics").text
    assert 'ragspine_llm_failures_total{provider="openai",reason="budget"}' in metrics
