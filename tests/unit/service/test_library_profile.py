"""A service library's ``profile`` at creation: a named recipe fills every field the request
leaves out; a field given wins; a recipe the server cannot keep is a 400 naming the fix."""

from __future__ import annotations

from fastapi.testclient import TestClient

from ragspine.profile import PROFILES
from ragspine.service.app import create_app
from tests.unit.service.conftest import make_settings, new_library, new_tenant


def test_a_named_profile_fills_the_fields_left_out(tmp_path) -> None:
    settings = make_settings(tmp_path, RAGSPINE_CHUNK_CHARS="1500")
    with TestClient(create_app(settings)) as client:
        headers = new_tenant(client)
        lib = new_library(client, headers, "lean", profile="economy")
        economy = PROFILES["economy"].profile
        assert (lib["embedding_model"], lib["retrieval_mode"], lib["contextual"]) == ("none", "economy", "header")
        assert (lib["fusion_weights"], lib["reranker"]) == (economy.ranking.fusion_weights, "none")
        mixed = new_library(client, headers, "mixed", profile="economy", contextual="none", reranker="none")
        assert mixed["contextual"] == "none"  # a field the request gives wins over the profile's
        plain = new_library(client, headers, "plain")
        assert (plain["embedding_model"], plain["contextual"]) == ("deterministic", "none")  # no profile: the server's


def test_a_profile_the_server_cannot_keep_is_refused(client) -> None:
    headers = new_tenant(client)
    r = client.post("/v1/libraries", json={"name": "lean", "profile": "economy"}, headers=headers)
    assert r.status_code == 400 and "chunk_chars=1500" in r.text and "RAGSPINE_PROFILE=economy" in r.text
    r = client.post("/v1/libraries", json={"name": "q", "profile": "quality"}, headers=headers)
    assert r.status_code == 400 and "embedding_model 'onnx' is not offered" in r.text
    r = client.post("/v1/libraries", json={"name": "x", "profile": "fastest"}, headers=headers)
    assert r.status_code == 400 and "unknown profile 'fastest'" in r.text
    assert client.get("/v1/libraries", headers=headers).json() == []  # nothing made
