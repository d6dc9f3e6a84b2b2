"""``/v1/retrieve``'s query-time reasoning per request (through a stub OpenAI-compatible server),
the security gate on /v1/retrieve and Dify's endpoint, the limits, and the metrics."""

from __future__ import annotations

import pytest

from tests.helpers import needs

needs("openai")

from fastapi.testclient import TestClient

from ragspine.retrieval.reasoning import GATE_REFUSAL
from ragspine.service.app import create_app
from ragspine.testing.openai_stub import OpenAIStub
from ragspine.testing.reasoning import scripted_answer
from tests.unit.service.conftest import doc, ingest, make_settings, new_library, new_tenant, retrieve

DOCS = [doc("d1", "Gearbox warranty is 36 months."), doc("d2", "Gearbox repairs take days after supply delays."),
        doc("d3", "Gearbox warranty claims board memo xylophonequartz.", sensitivity="RESTRICTED")]
MARK = "zqmarkzq"


@pytest.fixture
def stub():
    with OpenAIStub(lambda body: scripted_answer(body["messages"][-1]["content"], MARK)) as s:
        yield s


@pytest.fixture
def deny(tmp_path):
    path = tmp_path / "deny.yaml"
    path.write_text("entities:\n  ACME:\n    en: [Acme]\n    ja: [アクメ]\n", encoding="utf-8")
    return str(path)


def test_a_request_chooses_its_transform_and_the_answer_carries_the_trace(tmp_path, stub) -> None:
    settings = make_settings(tmp_path, RAGSPINE_LLM=stub.url, RAGSPINE_LLM_MODEL="stub-model", RAGSPINE_LLM_RETRIES="0")
    with TestClient(create_app(settings)) as client:
        headers = new_tenant(client)
        new_library(client, headers, "hb")
        ingest(client, headers, "hb", *DOCS)
        plain = retrieve(client, headers, "gearbox warranty")
        assert plain.status_code == 200 and set(plain.json()) == {"query", "libraries", "snippets", "filters_dropped", "dense_incomplete"}
        for transform in ("rag_fusion", "hyde", "step_back"):
            r = retrieve(client, headers, "gearbox warranty", query_transform=transform, corrective=True)
            assert r.status_code == 200, r.text
            body = r.json()
            assert body["snippets"] and MARK not in r.text and "xylophonequartz" not in r.text
            assert [s["step"] for s in body["trace"]][:3] == ["transform", "search", "grade"] and body["refused"] == []
        text = client.get("/metrics").text
    assert stub.calls == 3 and all("xylophonequartz" not in p for p in stub.prompts)
    for transform in ("rag_fusion", "hyde", "step_back"):
        assert f'ragspine_query_transforms_total{{outcome="applied",transform="{transform}"}} 1.0' in text
    assert 'ragspine_corrective_rounds_total{action="keep"} 3.0' in text


def test_the_gate_refuses_on_both_endpoints_and_is_counted(tmp_path, deny) -> None:
    settings = make_settings(tmp_path, RAGSPINE_SECURITY_DENYLIST=deny)
    with TestClient(create_app(settings)) as client:
        headers = new_tenant(client, "kestrel")
        new_library(client, headers, "hb")
        ingest(client, headers, "hb", *DOCS)
        r = retrieve(client, headers, "アクメ gearbox warranty")
        assert r.status_code == 200 and r.json()["snippets"] == [] and r.json()["refusal"] == GATE_REFUSAL
        assert r.json()["refused"] == [{"kind": "question", "entity": "ACME", "query": "アクメ gearbox warranty"}]
        ok = retrieve(client, headers, "gearbox warranty").json()
        assert ok["snippets"] and ok["refused"] == [] and "refusal" not in ok
        dify = client.post("/retrieval", json={"knowledge_id": "hb", "query": "Acme gearbox", "retrieval_setting": {"top_k": 3}}, headers=headers)
        assert dify.status_code == 200 and dify.json() == {"records": []}
        assert client.post("/retrieval", json={"knowledge_id": "hb", "query": "gearbox"}, headers=headers).json()["records"]
        text = client.get("/metrics").text
    assert 'ragspine_query_refusals_total{reason="gate"} 2.0' in text


def test_options_outside_the_limits_are_400s(tmp_path, stub) -> None:
    with TestClient(create_app(make_settings(tmp_path, RAGSPINE_QUERY_FANOUT="2"))) as client:
        headers = new_tenant(client)
        new_library(client, headers, "hb")
        r = retrieve(client, headers, "gearbox", query_transform="hyde")
        assert r.status_code == 400 and "needs an LLM provider" in r.json()["detail"]
        assert retrieve(client, headers, "gearbox", query_transform="nope").status_code == 400
        assert retrieve(client, headers, "gearbox", query_fanout=3, corrective=True).status_code == 400
        assert retrieve(client, headers, "gearbox", query_fanout=9).status_code == 422
        assert retrieve(client, headers, "gearbox", corrective=True).status_code == 200  # no model needed: the keyword rewrite


def test_the_call_budget_covers_every_seam_of_a_request(tmp_path, stub) -> None:
    settings = make_settings(tmp_path, RAGSPINE_LLM=stub.url, RAGSPINE_LLM_MODEL="stub-model", RAGSPINE_LLM_MAX_CALLS="2")
    with TestClient(create_app(settings)) as client:
        headers = new_tenant(client)
        new_library(client, headers, "hb")
        ingest(client, headers, "hb", *DOCS)
        r = retrieve(client, headers, "gearbox warranty and supply delays", decompose="llm", query_transform="rag_fusion")
        assert r.status_code == 200 and r.json()["snippets"]
        text = client.get("/metrics").text
    assert stub.calls == 2  # the decomposition and the question's variants; each sub-question's transform degraded
    assert 'ragspine_llm_failures_total{provider="openai",reason="budget"} 2.0' in text
    assert 'ragspine_query_transforms_total{outcome="degraded",transform="rag_fusion"} 2.0' in text
