"""POST /v1/retrieve: filters in the nine-operator grammar, several libraries (routed and
fused), modes, full lineage — and never a RESTRICTED chunk."""

from __future__ import annotations

import pytest

from tests.unit.service.conftest import doc, ingest, new_library, new_tenant, retrieve


@pytest.fixture
def tenant(client):
    headers = new_tenant(client)
    new_library(client, headers, "finance", description="quarterly results revenue finance")
    new_library(client, headers, "support", description="warranty claims repairs support")
    ingest(
        client, headers, "finance",
        doc("q3", "Revenue fell in the third quarter because gearbox sales slowed.", metadata={"year": 2024, "region": "EU"}),
        doc("q2", "Revenue grew in the second quarter on gearbox demand.", metadata={"year": 2023, "region": "US"}),
        doc("memo", "Board memo: gearbox revenue and the secret merger.", sensitivity="RESTRICTED", metadata={"year": 2024}),
    )
    ingest(client, headers, "support", doc("claims", "Gearbox warranty claims rose in the third quarter.", metadata={"year": 2024}))
    return headers


def test_lineage_and_no_restricted(client, tenant) -> None:
    r = retrieve(client, tenant, "gearbox revenue", libraries=["finance"], top_k=10)
    assert r.status_code == 200
    body = r.json()
    assert body["libraries"] == ["finance"]
    snippets = body["snippets"]
    assert {s["doc_id"] for s in snippets} == {"q3", "q2"}  # the RESTRICTED memo never comes out
    for s in snippets:
        assert s["library_id"] == "finance" and "acme" not in str(s)
        assert set(s["scores"]) == {"bm25", "vector", "fused"} and s["chunk_id"] and s["source_locator"]


def test_filters_narrow_with_every_form(client, tenant) -> None:
    forms = [
        {"year": 2024},
        {"year": {"gte": 2024}},
        [{"field": "region", "op": "in", "value": ["EU", "APAC"]}],
        {"year": {"between": [2024, 2025]}, "region": {"ne": "US"}},
    ]
    for filters in forms:
        snippets = retrieve(client, tenant, "gearbox revenue", libraries=["finance"], filters=filters).json()["snippets"]
        assert [s["doc_id"] for s in snippets] == ["q3"], filters
    none = retrieve(client, tenant, "gearbox revenue", libraries=["finance"], filters={"year": 1999}).json()["snippets"]
    assert none == []  # no silent retry without the filter...
    retried = retrieve(client, tenant, "gearbox revenue", libraries=["finance"], filters={"year": 1999}, retry_without_filters=True)
    assert {s["doc_id"] for s in retried.json()["snippets"]} == {"q3", "q2"}  # ...unless asked for


@pytest.mark.parametrize(
    "filters, named",
    [
        ({"year": {"like": 2024}}, "'like'"),
        ([{"field": "year", "op": "contains", "value": "x"}], "'contains'"),
        ({"year": {"in": "2024"}}, "in"),
        ({"year": {"gt": True}}, "gt"),
        ({"year": {"between": [1, "z"]}}, "between"),
        ("year=2024", "filter"),
    ],
)
def test_a_bad_filter_is_a_400_naming_the_operator(client, tenant, filters, named) -> None:
    r = retrieve(client, tenant, "gearbox", filters=filters)
    assert r.status_code == 400 and named in r.json()["detail"], r.json()


def test_several_libraries_are_fused_with_their_names(client, tenant) -> None:
    snippets = retrieve(client, tenant, "gearbox third quarter", top_k=10).json()["snippets"]
    assert {s["library_id"] for s in snippets} == {"finance", "support"}
    fused = [s["scores"]["fused"] for s in snippets]
    assert fused == sorted(fused, reverse=True)
    only = retrieve(client, tenant, "gearbox", libraries=["support", "finance"], filters={"year": 2024}).json()
    assert {s["doc_id"] for s in only["snippets"]} == {"q3", "claims"} and only["libraries"] == ["support", "finance"]


def test_keyword_router_reads_the_descriptions(tmp_path) -> None:
    from fastapi.testclient import TestClient

    from ragspine.service.app import create_app
    from tests.unit.service.conftest import make_settings

    with TestClient(create_app(make_settings(tmp_path, RAGSPINE_LIBRARY_ROUTER="keyword"))) as client:
        headers = new_tenant(client)
        new_library(client, headers, "finance", description="quarterly results revenue")
        new_library(client, headers, "support", description="warranty claims")
        ingest(client, headers, "finance", doc("q3", "Gearbox revenue fell."))
        ingest(client, headers, "support", doc("c", "Gearbox warranty claims rose."))
        snippets = retrieve(client, headers, "gearbox warranty claims").json()["snippets"]
        assert {s["library_id"] for s in snippets} == {"support"}


def test_mode_per_request(client, tenant) -> None:
    economy = retrieve(client, tenant, "gearbox revenue", libraries=["finance"], mode="economy").json()["snippets"]
    assert economy and all(s["scores"]["vector"] == 0.0 for s in economy)
    vector = retrieve(client, tenant, "gearbox revenue", libraries=["finance"], mode="vector").json()["snippets"]
    assert vector and all(s["scores"]["bm25"] == 0.0 for s in vector)
    assert retrieve(client, tenant, "gearbox", mode="turbo").status_code == 400


@pytest.mark.parametrize("body", [{"query": ""}, {"query": "x", "top_k": 0}, {"query": "x", "top_k": 1000}, {"q": "x"}, {"query": "x", "libraries": "finance"}])
def test_malformed_requests_are_422_naming_the_field(client, tenant, body) -> None:
    r = client.post("/v1/retrieve", json=body, headers=tenant)
    assert r.status_code == 422
    assert r.json()["message"].startswith("body.")


def test_a_tenant_without_libraries_gets_nothing(client) -> None:
    headers = new_tenant(client, "empty")
    assert retrieve(client, headers, "anything").json() == {
        "query": "anything", "libraries": [], "snippets": [], "filters_dropped": False, "dense_incomplete": [],
    }


def test_a_retry_without_filters_says_so(client, tenant) -> None:
    nothing = {"year": 1999}
    body = retrieve(client, tenant, "gearbox revenue", libraries=["finance"], filters=nothing, retry_without_filters=True).json()
    assert body["filters_dropped"] is True and body["snippets"]
    assert all(s["filters_dropped"] is True for s in body["snippets"])
    assert {s["doc_id"] for s in body["snippets"]} <= {"q3", "q2"}  # the library scope stays; no RESTRICTED
    both = retrieve(client, tenant, "gearbox", filters=nothing, retry_without_filters=True).json()
    assert both["filters_dropped"] is True and {s["library_id"] for s in both["snippets"]} == {"finance", "support"}
    strict = retrieve(client, tenant, "gearbox revenue", libraries=["finance"], filters=nothing).json()
    assert strict["filters_dropped"] is False and strict["snippets"] == []
    matched = retrieve(client, tenant, "gearbox revenue", filters={"year": 2024}, retry_without_filters=True).json()
    assert matched["filters_dropped"] is False and all("filters_dropped" not in s for s in matched["snippets"])


@pytest.mark.parametrize("libraries", [["finance"], ["finance", "support"], None])
def test_the_filter_is_parsed_once_per_request(client, tenant, monkeypatch, libraries) -> None:
    """The edge parses the request's filter into a MetadataFilter once; every layer below takes
    that object (counted: FilterConditions built while the request runs)."""
    from ragspine.retrieval.filtering import filters as module

    built = []
    real = module.FilterCondition.__post_init__
    monkeypatch.setattr(module.FilterCondition, "__post_init__", lambda self: (built.append(self.field), real(self))[1])
    body = {"libraries": libraries} if libraries else {}
    r = retrieve(client, tenant, "gearbox revenue", filters={"year": {"gte": 2024}}, **body)
    assert r.status_code == 200 and r.json()["snippets"]
    assert built == ["year"]
