"""A library whose chunker cannot run is refused when it is created: ``chunker: semantic``
cuts by embedding similarity, and a library in economy mode (or without an embedding model)
computes no embeddings. Before, such a library was created (201) and then every ingest job
failed; now it is a 422 on ``chunker`` (the documented validation shape) naming the problem
and the fix, and nothing is created."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from ragspine.service.app import create_app
from tests.unit.service.conftest import doc, ingest, make_settings, new_tenant


def assert_refused(r, *, why: str) -> None:
    assert r.status_code == 422, r.text
    body = r.json()
    assert isinstance(body["detail"], list) and body["detail"][0]["loc"] == ["body", "chunker"], body
    message = body["message"]
    assert message.startswith("body.chunker: ") and why in message and "every ingest would fail" in message, message
    assert "retrieval_mode auto, hybrid or vector" in message and "layout" in message and "semantic)" not in message, message


@pytest.mark.parametrize(("body", "why"), [
    ({"chunker": "semantic", "retrieval_mode": "economy"}, "runs in economy mode"),
    ({"chunker": "SEMANTIC", "retrieval_mode": "lexical"}, "runs in economy mode"),  # an alias of economy, any case
    ({"chunker": "semantic", "embedding_model": "none"}, "has no embedding model"),
])
def test_semantic_without_embeddings_is_a_422_and_nothing_is_created(client, body, why) -> None:
    headers = new_tenant(client)
    assert_refused(client.post("/v1/libraries", json={"name": "s1", **body}, headers=headers), why=why)
    assert client.get("/v1/libraries", headers=headers).json() == []
    assert client.app.state.service.stack.library("acme/s1") is None


def test_the_servers_economy_mode_or_default_chunker_count_too(tmp_path) -> None:
    settings = make_settings(tmp_path, RAGSPINE_RETRIEVAL_MODE="economy", RAGSPINE_CHUNKER="semantic")
    with TestClient(create_app(settings)) as client:
        headers = new_tenant(client)
        r = client.post("/v1/libraries", json={"name": "s1"}, headers=headers)
        assert_refused(r, why="has no embedding model")
        assert "this server's default chunker (RAGSPINE_CHUNKER) is semantic" in r.json()["message"]
        assert client.post("/v1/libraries", json={"name": "s2", "chunker": "layout"}, headers=headers).status_code == 201


def test_semantic_with_embeddings_is_created_and_its_jobs_succeed(client) -> None:
    headers = new_tenant(client)
    r = client.post("/v1/libraries", json={"name": "s1", "chunker": "semantic", "retrieval_mode": "hybrid"}, headers=headers)
    assert r.status_code == 201, r.text
    job = ingest(client, headers, "s1", doc("d1", "The gearbox warranty lasts 36 months. Repairs take five days."))
    assert job["state"] == "succeeded", job
    r = client.post("/v1/libraries", json={"name": "s2", "chunker": "layout", "retrieval_mode": "economy"}, headers=headers)
    assert r.status_code == 201, r.text
