"""Dify's external knowledge API as Dify's client really calls it (``docs/http-api.md``, "Register RAGSpine in Dify")."""

from __future__ import annotations

import json

import pytest

from ragspine.service.dify import UnsupportedCondition, map_condition
from ragspine.service.models import DifyMetadataCondition
from tests.unit.service.conftest import doc, ingest, new_library, new_tenant


@pytest.fixture
def tenant(client):
    headers = new_tenant(client)
    new_library(client, headers, "kb", embedding_model="none")  # BM25 only: exact expectations
    ingest(
        client, headers, "kb",
        doc("warranty", "The gearbox warranty lasts 36 months from delivery.", metadata={"category": "policy", "year": 2024, "published": 1717200000}),
        doc("repairs", "Gearbox repairs take five working days.", metadata={"category": "ops", "year": 2023, "published": 1685577600}),
        doc("pricing", "Spare gearbox parts are priced per unit.", title="", metadata={"category": "sales", "year": 2024, "score": 9, "dataset_id": "x"}),
        doc("memo", "Board memo: gearbox warranty costs and the merger.", sensitivity="RESTRICTED"),
        doc("营收", "第三季度营收下滑，因为齿轮箱销量放缓。", title="营收报告"),
    )
    return headers


def ask(client, headers, knowledge_id="kb", query="gearbox warranty", top_k=5, threshold=0.0, condition=None, raw=None):
    body = raw if raw is not None else {
        "knowledge_id": knowledge_id, "query": query,
        "retrieval_setting": {"top_k": top_k, "score_threshold": threshold},
        **({"metadata_condition": condition} if condition is not ... else {}),
    }
    data = body if isinstance(body, bytes) else json.dumps(body).encode()  # json.dumps escapes non-ASCII, like Dify
    return client.post("/retrieval", content=data, headers={**headers, "Content-Type": "application/json"})


def test_happy_path_records(client, tenant) -> None:
    r = ask(client, tenant)
    assert r.status_code == 200
    records = r.json()["records"]
    assert records and records[0]["metadata"]["document_id"] == "warranty"
    scores = [rec["score"] for rec in records]
    assert scores == sorted(scores, reverse=True) and all(0.0 <= s <= 1.0 for s in scores)
    for rec in records:
        assert rec["content"].strip() and rec["title"].strip() and isinstance(rec["metadata"], dict)
        assert not {"score", "title", "dataset_id", "dataset_name"} & set(rec["metadata"])
        assert rec["metadata"]["document_id"] != "memo"  # RESTRICTED never comes out
    pricing = [rec for rec in records if rec["metadata"]["document_id"] == "pricing"]
    assert pricing and pricing[0]["title"] == "pricing"  # an empty title falls back to the doc id


def test_non_ascii_arrives_escaped(client, tenant) -> None:
    r = ask(client, tenant, query="营收为什么下滑")
    records = r.json()["records"]
    assert records and records[0]["title"] == "营收报告" and "营收" in records[0]["content"]


def test_top_k_and_threshold_are_applied_by_the_server(client, tenant) -> None:
    assert len(ask(client, tenant, query="gearbox", top_k=2).json()["records"]) == 2
    everything = ask(client, tenant, query="gearbox", top_k=10).json()["records"]
    assert len(everything) == 3
    cut = sorted(r["score"] for r in everything)[1]
    above = ask(client, tenant, query="gearbox", top_k=10, threshold=cut).json()["records"]
    assert above and all(r["score"] >= cut for r in above) and len(above) < len(everything)
    assert ask(client, tenant, query="gearbox", threshold=1.0).json()["records"] == [
        r for r in everything if r["score"] == 1.0
    ][:5]
    assert ask(client, tenant, query="zebra xylophone").json() == {"records": []}
    assert ask(client, tenant, query="").json() == {"records": []}


def test_score_is_rank_agreement_across_the_rankers(client, tenant) -> None:
    # economy (one ranking): rank r scores (k + 1) / (k + r)
    records = ask(client, tenant, query="gearbox", top_k=10).json()["records"]
    assert [r["score"] for r in records[:2]] == [1.0, round(61 / 62, 6)]
    assert all(0 < r["score"] <= 1 for r in records)
    # hybrid: 1.0 only when BM25 and the dense leg both rank it first; dense-only matches stay <= 0.5
    new_library(client, tenant, "dense", embedding_model="deterministic", retrieval_mode="hybrid")
    ingest(client, tenant, "dense", doc("w", "The gearbox warranty lasts 36 months."), doc("r", "Repairs take five days."))
    top = ask(client, tenant, knowledge_id="dense", query="gearbox warranty lasts 36 months").json()["records"][0]
    assert top["metadata"]["document_id"] == "w" and top["score"] == 1.0
    unrelated = ask(client, tenant, knowledge_id="dense", query="zebra xylophone").json()["records"]
    assert unrelated and max(r["score"] for r in unrelated) <= 0.5
    assert ask(client, tenant, knowledge_id="dense", query="zebra xylophone", threshold=0.6).json() == {"records": []}


@pytest.mark.parametrize("headers, code", [
    ({}, 1001),
    ({"Authorization": "Basic abc"}, 1001),
    ({"Authorization": "Bearer"}, 1001),
    ({"Authorization": "Bearer rsk_0123456789ab_" + "x" * 43}, 1002),
    ({"Authorization": "Bearer wrong"}, 1002),
])
def test_authorization_errors_are_403_with_dify_codes_before_the_body(client, tenant, headers, code) -> None:
    for body in (b'{"knowledge_id": "kb", "query": "x"}', b"{not json"):
        r = client.post("/retrieval", content=body, headers={**headers, "Content-Type": "application/json"})
        assert r.status_code == 403 and r.json()["error_code"] == code and r.json()["error_msg"]


def test_unknown_empty_or_foreign_knowledge_is_400_2001(client, tenant) -> None:
    globex = new_tenant(client, "globex")
    for headers, knowledge in ((tenant, "nope"), (tenant, ""), (globex, "kb")):
        r = ask(client, headers, knowledge_id=knowledge)
        assert r.status_code == 400 and r.json()["error_code"] == 2001
    # Dify's registration probe: an empty knowledge id and nothing else
    r = ask(client, tenant, raw={"knowledge_id": "", "query": ""})
    assert r.status_code == 400 and r.json()["error_code"] == 2001


def test_a_malformed_body_is_a_4xx_with_an_error_code(client, tenant) -> None:
    for raw in (b"{not json", {"knowledge_id": "kb", "query": "x", "retrieval_setting": {"top_k": "many"}},
                {"knowledge_id": "kb", "query": "x", "retrieval_setting": {"top_k": 3, "score_threshold": 2}}):
        r = ask(client, tenant, raw=raw)
        assert r.status_code == 422 and r.json()["error_code"] == 3002 and r.json()["error_msg"]


@pytest.mark.parametrize("condition", [..., None, {}, {"conditions": None}, {"conditions": []},
                                       {"logical_operator": None, "conditions": []}])
def test_absent_or_empty_conditions_mean_no_filter(client, tenant, condition) -> None:
    records = ask(client, tenant, query="gearbox", top_k=10, condition=condition).json()["records"]
    ids = {r["metadata"]["document_id"] for r in records}
    assert ids == {"warranty", "repairs", "pricing"}


@pytest.mark.parametrize("conditions, expected", [
    ([{"name": ["category"], "comparison_operator": "is", "value": "policy"}], {"warranty"}),
    ([{"name": ["category"], "comparison_operator": "is not", "value": "policy"}], {"repairs", "pricing"}),
    ([{"name": ["year"], "comparison_operator": "=", "value": "2024"}], {"warranty", "pricing"}),
    ([{"name": ["year"], "comparison_operator": "≠", "value": 2024}], {"repairs"}),
    ([{"name": ["year"], "comparison_operator": ">", "value": "2023"}], {"warranty", "pricing"}),
    ([{"name": ["year"], "comparison_operator": "≤", "value": 2023}], {"repairs"}),
    ([{"name": ["published"], "comparison_operator": "before", "value": 1700000000}], {"repairs"}),
    ([{"name": ["published"], "comparison_operator": "after", "value": "1700000000"}], {"warranty"}),
    ([{"name": ["category"], "comparison_operator": "in", "value": ["ops", "sales"]}], {"repairs", "pricing"}),
    ([{"name": ["category"], "comparison_operator": "not in", "value": "ops, sales"}], {"warranty"}),
    ([{"name": ["category"], "comparison_operator": "is", "value": "policy"},
      {"name": ["year"], "comparison_operator": "≥", "value": 2024}], {"warranty"}),
    ([{"name": ["category"], "comparison_operator": "is", "value": "nothing"}], set()),
])
def test_operators_map_onto_our_filters(client, tenant, conditions, expected) -> None:
    condition = {"logical_operator": "and", "conditions": conditions}
    r = ask(client, tenant, query="gearbox", top_k=10, condition=condition)
    assert r.status_code == 200 and {rec["metadata"]["document_id"] for rec in r.json()["records"]} == expected


@pytest.mark.parametrize("operator", ["contains", "not contains", "start with", "end with", "empty", "not empty", "like"])
def test_unsupported_operators_are_400_3001_naming_them(client, tenant, operator) -> None:
    condition = {"logical_operator": "and", "conditions": [{"name": ["category"], "comparison_operator": operator, "value": "po"}]}
    r = ask(client, tenant, condition=condition)
    assert r.status_code == 400 and r.json()["error_code"] == 3001 and repr(operator) in r.json()["error_msg"]


def test_or_across_conditions_and_odd_conditions_are_refused(client, tenant) -> None:
    two = [{"name": ["category"], "comparison_operator": "is", "value": "ops"},
           {"name": ["category"], "comparison_operator": "is", "value": "sales"}]
    r = ask(client, tenant, condition={"logical_operator": "or", "conditions": two})
    assert r.status_code == 400 and r.json()["error_code"] == 3001 and "'or'" in r.json()["error_msg"]
    one = ask(client, tenant, query="gearbox", condition={"logical_operator": "or", "conditions": two[:1]})
    assert {rec["metadata"]["document_id"] for rec in one.json()["records"]} == {"repairs"}
    for bad in ({"name": ["a", "b"], "comparison_operator": "is", "value": "x"},
                {"name": ["published"], "comparison_operator": "before", "value": "yesterday"},
                {"name": ["year"], "comparison_operator": ">", "value": "abc"},  # a number operator on text
                {"name": ["year"], "comparison_operator": "=", "value": True},
                {"name": ["category"], "comparison_operator": "is", "value": None}):
        r = ask(client, tenant, condition={"logical_operator": "and", "conditions": [bad]})
        assert r.status_code == 400 and r.json()["error_code"] == 3001


def test_map_condition_is_pure() -> None:
    cond = DifyMetadataCondition.model_validate({"conditions": [{"name": "year", "comparison_operator": "≥", "value": "2024.5"}]})
    assert map_condition(cond) == [{"field": "year", "op": "gte", "value": 2024.5}]
    cond = DifyMetadataCondition.model_validate({"conditions": [{"name": ["t"], "comparison_operator": "is", "value": "2024"}]})
    assert map_condition(cond) == [{"field": "t", "op": "eq", "value": "2024"}]  # "is" compares strings
    with pytest.raises(UnsupportedCondition):
        map_condition(DifyMetadataCondition.model_validate(
            {"logical_operator": "xor", "conditions": [{"name": "a", "comparison_operator": "is", "value": "b"}]}))


def test_an_endpoint_saved_with_a_trailing_slash_still_answers(client, tenant) -> None:
    # Dify appends "/retrieval" to the saved endpoint: "http://host:8000/" gives "//retrieval"
    body = {"knowledge_id": "kb", "query": "gearbox", "retrieval_setting": {"top_k": 2, "score_threshold": 0}}
    for path in ("//retrieval", "/retrieval/", "///retrieval//"):
        r = client.post(f"http://testserver{path}", json=body, headers=tenant)
        assert r.status_code == 200 and r.json()["records"], (path, r.text)
    r = client.post("http://testserver//retrieval", json={**body, "knowledge_id": "nope"}, headers=tenant)
    assert r.status_code == 400 and r.json()["error_code"] == 2001  # Dify's shape, not a bare 404
    r = client.post("http://testserver//retrieval", json=body, headers={"Authorization": "Bearer wrong"})
    assert r.status_code == 403 and r.json()["error_code"] == 1002
    assert client.get("http://testserver//v1/libraries/", headers=tenant).status_code == 200


def test_a_record_keeps_the_child_as_content_and_carries_its_expansion_in_metadata() -> None:
    from ragspine.service.dify import record

    snippet = {"text": "Vacation is 25 days.", "doc_id": "hb", "chunk_id": "hb#0", "source_locator": "hb#char=8,28", "version": 1,
               "metadata": {"topic": "hr"}, "heading": "Leave", "parent_id": "hb#sec=0,60",
               "parent_locator": "hb#char=0,60", "prompt_text": "# Leave\nVacation is 25 days.\nSick leave is separate."}
    got = record(snippet, 0.9, "handbook")
    assert got["content"] == "Vacation is 25 days."
    assert got["metadata"]["prompt_text"] == snippet["prompt_text"] and got["metadata"]["parent_locator"] == "hb#char=0,60"
    assert got["metadata"]["heading"] == "Leave" and got["metadata"]["source_locator"] == "hb#char=8,28"
    sibling = {**snippet, "chunk_id": "hb#1", "prompt_text_in": "hb#0"}
    del sibling["prompt_text"]
    meta = record(sibling, 0.8, "handbook")["metadata"]
    assert meta["prompt_text_in"] == "hb#0" and "prompt_text" not in meta
    plain = record({k: snippet[k] for k in ("text", "doc_id", "chunk_id", "source_locator", "version", "metadata")}, 0.5, "handbook")
    assert not {"prompt_text", "parent_locator", "heading"} & set(plain["metadata"])


def test_in_list_items_keep_their_exact_values(client, tenant) -> None:
    """`in [" alpha "]` matches " alpha " as `is " alpha "` does — never trimmed to "alpha"; a
    comma-separated string is Dify's typed list, its items trimmed."""
    new_library(client, tenant, "tags", embedding_model="none")
    ingest(
        client, tenant, "tags",
        doc("spaced", "Gearbox tag sheet one.", metadata={"tag": " alpha ", "code": "10"}),
        doc("plain", "Gearbox tag sheet two.", metadata={"tag": "alpha", "code": 10}),
    )
    for conditions, expected in (
        ([{"name": ["tag"], "comparison_operator": "in", "value": [" alpha "]}], {"spaced"}),
        ([{"name": ["tag"], "comparison_operator": "is", "value": " alpha "}], {"spaced"}),
        ([{"name": ["tag"], "comparison_operator": "not in", "value": [" alpha "]}], {"plain"}),
        ([{"name": ["tag"], "comparison_operator": "in", "value": ["alpha"]}], {"plain"}),
        ([{"name": ["tag"], "comparison_operator": "in", "value": " alpha , beta"}], {"plain"}),
        ([{"name": ["code"], "comparison_operator": "in", "value": ["10"]}], {"spaced"}),
        ([{"name": ["code"], "comparison_operator": "in", "value": [10]}], {"plain"}),
    ):
        r = ask(client, tenant, knowledge_id="tags", query="gearbox tag sheet", top_k=10,
                condition={"logical_operator": "and", "conditions": conditions})
        assert r.status_code == 200 and {rec["metadata"]["document_id"] for rec in r.json()["records"]} == expected, conditions
    cond = DifyMetadataCondition.model_validate({"conditions": [{"name": "tag", "comparison_operator": "in", "value": [" a ", 1]}]})
    assert map_condition(cond) == [{"field": "tag", "op": "in", "value": [" a ", 1]}]
