"""``GET /v1/workflow/preview``: a tenant key, the server's or one's own library's pipeline, no secret."""

from __future__ import annotations

import yaml
from fastapi.testclient import TestClient

from ragspine.service.app import create_app
from ragspine.workflow import check_dify_graph
from tests.unit.service.conftest import ADMIN, make_settings, new_library, new_tenant

PREVIEW = "/v1/workflow/preview"


def test_a_tenant_gets_the_servers_pipeline_and_its_own_librarys(client) -> None:
    assert client.get(PREVIEW).status_code == 401
    assert client.get(PREVIEW, headers=ADMIN).status_code == 401  # the admin token is not a tenant key
    a = new_tenant(client, "acme")
    r = client.get(PREVIEW, headers=a)
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/json")
    server = r.json()
    check_dify_graph(server)
    assert any(n["id"] == "dense_leg" for n in server["workflow"]["graph"]["nodes"])  # deterministic embedding: hybrid
    new_library(client, a, "kb", chunker="sentence_window", retrieval_mode="economy", reranker="none", postprocessor="mmr")
    own = client.get(PREVIEW, params={"library": "kb", "format": "yaml"}, headers=a)
    assert own.status_code == 200 and own.headers["content-type"].startswith("application/yaml")
    document = yaml.safe_load(own.text)
    check_dify_graph(document)
    nodes = {n["id"]: n for n in document["workflow"]["graph"]["nodes"]}
    assert "dense_leg" not in nodes and nodes["postprocess"]["data"]["desc"] == "mmr"
    assert "sentence_window" in nodes["note_index"]["data"]["text"] and "kb" not in own.text.replace("knowledge", "")


def test_another_tenants_library_is_a_404_like_a_missing_one(client) -> None:
    a, b = new_tenant(client, "acme"), new_tenant(client, "globex")
    new_library(client, b, "vault", chunker="laws")
    missing = client.get(PREVIEW, params={"library": "nope"}, headers=a)
    other = client.get(PREVIEW, params={"library": "vault"}, headers=a)
    assert (other.status_code, other.json()["detail"].replace("vault", "nope")) == (404, missing.json()["detail"])
    assert client.get(PREVIEW, params={"library": "vault"}, headers=b).status_code == 200
    assert client.get(PREVIEW, params={"format": "xml"}, headers=a).status_code == 422
    assert client.get(PREVIEW, params={"library": "kb\x00"}, headers=a).status_code == 404
    assert client.get(PREVIEW + "?library=%ED%A0%80", headers=a).status_code == 404  # not UTF-8: no such library
    assert client.get(PREVIEW, params={"library": "x" * 3000}, headers=a).status_code == 422


def test_no_secret_of_the_servers_settings_is_in_the_picture(tmp_path) -> None:
    secrets = {"RAGSPINE_LLM": "http://u:llm-pw-1@llm.internal:8000/v1", "RAGSPINE_LLM_MODEL": "m", "RAGSPINE_LLM_API_KEY": "sk-topsecret",
               "RAGSPINE_SECURITY_DENYLIST": str(tmp_path / "deny-list-private.yaml")}
    (tmp_path / "deny-list-private.yaml").write_text("entities:\n  ACME: {en: [Acme]}\n", encoding="utf-8")
    with TestClient(create_app(make_settings(tmp_path, **secrets))) as client:
        a = new_tenant(client, "acme")
        for fmt in ("json", "yaml"):
            text = client.get(PREVIEW, params={"format": fmt}, headers=a).text
            assert not any(s in text for s in ("llm-pw-1", "llm.internal", "sk-topsecret", "admin-secret", "deny-list-private", str(tmp_path)))
            assert "Security gate" in text
