"""Every request is bounded: filter size (400 naming the limit), library count (422), time
(504 past RAGSPINE_REQUEST_TIMEOUT, the work stopped), and the server drains on SIGTERM."""

from __future__ import annotations

import time

import pytest
from fastapi.testclient import TestClient

from ragspine.retrieval.pipeline import LibraryPipeline
from ragspine.service.app import create_app
from tests.unit.service.conftest import doc, ingest, make_settings, new_library, new_tenant, retrieve


@pytest.fixture
def tenant(client):
    headers = new_tenant(client)
    new_library(client, headers, "hb")
    ingest(client, headers, "hb", doc("a", "Gearbox warranty is 36 months.", metadata={"year": 2024}))
    return headers


@pytest.mark.parametrize("n", [65, 6000])
def test_a_filter_over_the_condition_limit_is_a_400_naming_it(client, tenant, n) -> None:
    body = [{"field": f"f{i}", "op": "eq", "value": i} for i in range(n)]
    r = retrieve(client, tenant, "gearbox", filters=body)
    assert r.status_code == 400 and "limit is 64" in r.json()["detail"] and "RAGSPINE_MAX_FILTER_CONDITIONS" in r.json()["detail"]
    conditions = [{"name": [f"f{i}"], "comparison_operator": "is", "value": "x"} for i in range(n)]
    r = client.post("/retrieval", json={"knowledge_id": "hb", "query": "gearbox", "metadata_condition": {"conditions": conditions}},
                    headers=tenant)
    assert r.status_code == 400 and r.json()["error_code"] == 3001 and "RAGSPINE_MAX_FILTER_CONDITIONS" in r.json()["error_msg"]


def test_operand_values_are_bounded_too(client, tenant) -> None:
    r = retrieve(client, tenant, "gearbox", filters={"year": {"in": list(range(2000))}})
    assert r.status_code == 400 and "RAGSPINE_MAX_FILTER_VALUES" in r.json()["detail"]
    assert retrieve(client, tenant, "gearbox", filters={"year": {"in": list(range(2000, 2030))}}).status_code == 200


def test_the_limits_are_settings(tmp_path) -> None:
    settings = make_settings(tmp_path, RAGSPINE_MAX_FILTER_CONDITIONS="2")
    with TestClient(create_app(settings)) as client:
        headers = new_tenant(client)
        new_library(client, headers, "hb")
        r = retrieve(client, headers, "gearbox", filters={"a": 1, "b": 2, "c": 3})
        assert r.status_code == 400 and "limit is 2" in r.json()["detail"]


def test_too_many_libraries_is_a_422(client, tenant) -> None:
    r = retrieve(client, tenant, "gearbox", libraries=[f"lib{i}" for i in range(101)])
    assert r.status_code == 422


def test_a_request_past_its_deadline_is_a_504_and_stops_its_work(tmp_path, monkeypatch) -> None:
    settings = make_settings(tmp_path, RAGSPINE_REQUEST_TIMEOUT="0.3")
    calls: list[float] = []
    real = LibraryPipeline.search_once

    def slow(self, *args, **kwargs):  # each pass of the pipeline takes 0.2 s
        calls.append(time.monotonic())
        time.sleep(0.2)
        return real(self, *args, **kwargs)

    with TestClient(create_app(settings)) as client:
        headers = new_tenant(client)
        new_library(client, headers, "hb")
        ingest(client, headers, "hb", doc("a", "Gearbox warranty is 36 months."))
        monkeypatch.setattr(LibraryPipeline, "search_once", slow)
        # six libraries' passes (0.2 s each) do not fit in the 0.3 s deadline
        for i in range(5):
            new_library(client, headers, f"l{i}")
        r = retrieve(client, headers, "gearbox")
        assert r.status_code == 504 and "RAGSPINE_REQUEST_TIMEOUT" in r.json()["detail"]
        assert len(calls) <= 3  # the work stopped at the deadline instead of running every library
        monkeypatch.setattr(LibraryPipeline, "search_once", real)
        assert retrieve(client, headers, "gearbox").status_code == 200  # the next request is unaffected
