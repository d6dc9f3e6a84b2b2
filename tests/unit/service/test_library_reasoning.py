"""A library's own query-time reasoning and RAPTOR switch: chosen at creation (checked: 4xx),
kept, applied to its searches and not to another library's, overridden by a request; a search
over libraries whose reasoning differs lets each reason over its own answer."""

from __future__ import annotations

import json

import pytest

from tests.helpers import needs

needs("openai")

from fastapi.testclient import TestClient

from ragspine.retrieval.reasoning import CORRECTIVE_REFUSAL
from ragspine.service.app import create_app
from ragspine.testing.openai_stub import OpenAIStub
from ragspine.testing.reasoning import scripted_answer, seam_of
from tests.unit.service.conftest import doc, ingest, make_settings, new_library, new_tenant, retrieve

MARK = "zqmarkzq"
SECRET = "xylophonequartz"
DOCS = [doc("d1", "Gearbox warranty is 36 months."), doc("d2", "Gearbox repairs take days after supply delays."),
        doc("d3", f"Gearbox warranty claims board memo {SECRET}.", sensitivity="RESTRICTED")]
REASONING = ("query_transform", "decompose", "adaptive", "corrective", "query_fanout", "raptor")


@pytest.fixture
def stub():
    with OpenAIStub(lambda body: scripted_answer(body["messages"][-1]["content"], MARK)) as s:
        yield s


def seams(stub: OpenAIStub) -> list[str]:
    return [seam_of(prompt) for prompt in stub.prompts]


def test_a_librarys_reasoning_is_kept_applied_to_it_alone_and_overridden_by_a_request(tmp_path, stub) -> None:
    settings = make_settings(tmp_path, RAGSPINE_LLM=stub.url, RAGSPINE_LLM_MODEL="stub-model", RAGSPINE_LLM_RETRIES="0")
    with TestClient(create_app(settings)) as client:
        headers = new_tenant(client)
        plain = new_library(client, headers, "plain")
        assert [plain[k] for k in REASONING] == [None] * 6  # the server's at each search
        made = new_library(client, headers, "fused", query_transform="RAGFusion", corrective=True, query_fanout=2)
        assert [made[k] for k in REASONING] == ["rag_fusion", None, None, True, 2, None]  # canonical
        shown = client.get("/v1/libraries/fused", headers=headers).json()
        assert [shown[k] for k in REASONING] == ["rag_fusion", None, None, True, 2, None]
        for name in ("plain", "fused"):
            ingest(client, headers, name, *DOCS)

        body = retrieve(client, headers, "gearbox warranty", libraries=["fused"]).json()
        assert [s["step"] for s in body["trace"]][:3] == ["transform", "search", "grade"] and "library" not in body["trace"][0]
        assert seams(stub) == ["rag_fusion"] and stub.prompts[0].startswith("Write 2 ")  # the library's fan-out
        assert body["snippets"] and MARK not in json.dumps(body) and SECRET not in json.dumps(body)

        other = retrieve(client, headers, "gearbox warranty", libraries=["plain"]).json()
        assert set(other) == {"query", "libraries", "snippets", "filters_dropped", "dense_incomplete"}  # plain, byte for byte
        assert seams(stub) == ["rag_fusion"]  # no model call for the other library

        off = retrieve(client, headers, "gearbox warranty", libraries=["fused"], query_transform="none").json()
        assert [s["step"] for s in off["trace"]] == ["search", "grade"] and seams(stub) == ["rag_fusion"]  # the request wins
        on = retrieve(client, headers, "gearbox warranty", libraries=["plain"], query_transform="step_back").json()
        assert [s["step"] for s in on["trace"]] == ["transform", "search"] and seams(stub)[-1] == "step_back"
        assert all(SECRET not in prompt for prompt in stub.prompts)


def test_libraries_whose_reasoning_differs_each_reason_over_their_own_answer(tmp_path, stub) -> None:
    settings = make_settings(tmp_path, RAGSPINE_LLM=stub.url, RAGSPINE_LLM_MODEL="stub-model", RAGSPINE_LLM_RETRIES="0")
    with TestClient(create_app(settings)) as client:
        headers = new_tenant(client)
        new_library(client, headers, "hyde", query_transform="hyde")
        new_library(client, headers, "plain")
        ingest(client, headers, "hyde", *DOCS)
        ingest(client, headers, "plain", doc("p1", "Gearbox warranty terms for the plain library."))
        r = retrieve(client, headers, "gearbox warranty")
        assert r.status_code == 200, r.text
        body = r.json()
        assert {s["library_id"] for s in body["snippets"]} == {"hyde", "plain"}
        transform = [s for s in body["trace"] if s["step"] == "transform"]
        assert [(s["library"], s["transform"]) for s in transform] == [("hyde", "hyde")]  # the tenant's name, no tenant prefix
        assert body["trace"][-1]["step"] == "search" and "library" not in body["trace"][-1]  # the fused search
        assert seams(stub) == ["hyde"] and MARK not in r.text and SECRET not in r.text and "acme/" not in r.text
        # a request's choice applies to every library: one reasoning again (here none: the plain answer)
        same = retrieve(client, headers, "gearbox warranty", query_transform="none").json()
        assert "trace" not in same and same["snippets"] and seams(stub) == ["hyde"]


def test_a_librarys_corrective_loop_refuses_for_it_alone(tmp_path) -> None:
    with TestClient(create_app(make_settings(tmp_path))) as client:  # no LLM: the corrective loop needs none
        headers = new_tenant(client)
        new_library(client, headers, "strict", corrective=True)
        new_library(client, headers, "loose")
        for name in ("strict", "loose"):
            ingest(client, headers, name, *DOCS[:2])
        strict = retrieve(client, headers, "quantum chromodynamics lattice", libraries=["strict"]).json()
        assert strict["snippets"] == [] and strict["refusal"] == CORRECTIVE_REFUSAL
        loose = retrieve(client, headers, "quantum chromodynamics lattice", libraries=["loose"]).json()
        assert "refusal" not in loose and "trace" not in loose
        assert "refusal" not in retrieve(client, headers, "quantum chromodynamics lattice", libraries=["strict"], corrective=False).json()


def test_choices_that_cannot_run_here_are_4xx_and_nothing_is_made(tmp_path) -> None:
    with TestClient(create_app(make_settings(tmp_path, RAGSPINE_QUERY_FANOUT="2"))) as client:
        headers = new_tenant(client)

        def refused(status: int, **fields: object) -> str:
            r = client.post("/v1/libraries", json={"name": "x", **fields}, headers=headers)
            assert r.status_code == status, r.text
            return json.dumps(r.json())

        for fields in ({"query_transform": "hyde"}, {"decompose": "llm"}, {"adaptive": "llm"}, {"adaptive": "heuristic"}):
            assert "RAGSPINE_LLM" in refused(400, **fields) and next(iter(fields)) in refused(400, **fields)
        assert "rag_fusion" in refused(400, query_transform="hide")  # the choices, from the registry
        assert "RAGSPINE_QUERY_FANOUT" in refused(400, query_fanout=3)
        refused(422, query_fanout=9)
        refused(422, corrective="maybe")
        assert "economy" in refused(400, raptor=True, embedding_model="none")
        assert client.get("/v1/libraries", headers=headers).json() == []
        made = new_library(client, headers, "ok", corrective=True, query_fanout=1, raptor=False)
        assert (made["corrective"], made["query_fanout"], made["raptor"]) == (True, 1, False)


def test_a_librarys_raptor_switch_is_its_own_and_a_request_overrides_it(tmp_path) -> None:
    with TestClient(create_app(make_settings(tmp_path, RAGSPINE_RAPTOR_THRESHOLD="0.3"))) as client:
        headers = new_tenant(client)
        new_library(client, headers, "tree", raptor=True)
        new_library(client, headers, "flat")
        for name in ("tree", "flat"):
            ingest(client, headers, name, *DOCS)
        r = retrieve(client, headers, "gearbox", libraries=["tree"])
        assert r.status_code == 400 and "POST /v1/libraries/tree/raptor" in r.json()["detail"]  # on: it needs a tree
        assert retrieve(client, headers, "gearbox", libraries=["tree"], raptor=False).status_code == 200
        assert retrieve(client, headers, "gearbox", libraries=["flat"]).status_code == 200  # the server's: off
        assert client.post("/v1/libraries/tree/raptor", headers=headers).status_code == 200
        both = retrieve(client, headers, "gearbox warranty")
        assert both.status_code == 200 and SECRET not in both.text
        flat_off = retrieve(client, headers, "gearbox", libraries=["flat"], raptor=True)
        assert flat_off.status_code == 400 and "flat" in flat_off.json()["detail"]  # the request's switch, for every library


def test_raptor_off_for_an_economy_library_on_a_raptor_server(tmp_path) -> None:
    with TestClient(create_app(make_settings(tmp_path, RAGSPINE_RAPTOR="1"))) as client:
        headers = new_tenant(client)
        new_library(client, headers, "eco", embedding_model="none", raptor=False)
        ingest(client, headers, "eco", *DOCS[:2])
        assert retrieve(client, headers, "gearbox").status_code == 200  # its own switch: no RAPTOR, no refusal
