"""An outage is a 503 with the documented shape, never a 500 — and the service recovers.

PostgreSQL (the chunk and service store) and Redis (the job queue) are reached through a TCP
proxy the test cuts: every route the tenant uses, the auth check included, answers 503 (Dify's
``/retrieval`` in Dify's error shape); an upload during a queue outage answers 503 and leaves
no job behind; once the proxy is restored everything answers again.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from fastapi.testclient import TestClient

from ragspine.service.app import create_app
from tests.backends import TcpProxy
from tests.helpers import needs
from tests.unit.service.conftest import ADMIN, doc, ingest, make_settings, new_library, new_tenant, retrieve


@pytest.fixture
def pg_through_proxy(pg15_schema):
    url, schema = pg15_schema
    target = urlsplit(url)
    proxy = TcpProxy(target.hostname or "127.0.0.1", target.port or 5432)
    yield proxy.url(url), schema, proxy
    proxy.cut()


def test_a_postgresql_outage_is_a_503_everywhere_and_the_service_recovers(tmp_path, pg_through_proxy) -> None:
    url, schema, proxy = pg_through_proxy
    settings = make_settings(tmp_path, RAGSPINE_CHUNK_STORE=url, RAGSPINE_PG_SCHEMA=schema, RAGSPINE_RETRIEVAL_MODE="economy",
                             RAGSPINE_JOB_QUEUE="inprocess")
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        headers = new_tenant(client)
        new_library(client, headers, "hb")
        ingest(client, headers, "hb", doc("d", "Gearbox warranty is 36 months."))
        assert retrieve(client, headers, "gearbox").status_code == 200
        proxy.cut()
        calls = {
            "retrieve": lambda: retrieve(client, headers, "gearbox"),
            "jobs": lambda: client.get("/v1/jobs", headers=headers),
            "libraries": lambda: client.get("/v1/libraries", headers=headers),
            "upload": lambda: client.post("/v1/libraries/hb/documents", json=doc("e", "text"), headers=headers),
            "dify": lambda: client.post("/retrieval", json={"knowledge_id": "hb", "query": "gearbox"}, headers=headers),
        }
        for name, call in calls.items():
            r = call()
            assert r.status_code == 503, (name, r.status_code, r.text[:300])
            body = r.json()
            if name == "dify":
                assert body["error_code"] == 5003 and body["error_msg"]
            else:
                assert "unavailable" in body["detail"]
        assert client.get("/readyz").status_code == 503
        proxy.restore()
        assert retrieve(client, headers, "gearbox").status_code == 200
        assert client.post("/retrieval", json={"knowledge_id": "hb", "query": "gearbox"}, headers=headers).status_code == 200


def test_an_upload_during_a_job_queue_outage_is_a_503_and_leaves_no_job(tmp_path, redis_server) -> None:
    needs("rq")
    target = urlsplit(redis_server.url)
    proxy = TcpProxy(target.hostname or "127.0.0.1", target.port or 6379)
    settings = make_settings(tmp_path, RAGSPINE_JOB_QUEUE=proxy.url(redis_server.url), RAGSPINE_RETRIEVAL_MODE="economy",
                             RAGSPINE_REDIS_PREFIX=f"outage{proxy.port}:")
    try:
        with TestClient(create_app(settings), raise_server_exceptions=False) as client:
            headers = new_tenant(client)
            new_library(client, headers, "hb")
            proxy.cut()
            r = client.post("/v1/libraries/hb/documents", json=doc("d", "Gearbox warranty."), headers=headers)
            assert r.status_code == 503 and "job queue" in r.json()["detail"], r.text
            ready = client.get("/readyz", headers=ADMIN)
            assert ready.status_code == 503 and ready.json()["checks"]["job queue (redis)"] != "ok"
            proxy.restore()
            assert client.get("/v1/jobs", headers=headers).json() == []  # nothing half-queued
            r = client.post("/v1/libraries/hb/documents", json=doc("d", "Gearbox warranty."), headers=headers)
            assert r.status_code == 202, r.text
    finally:
        proxy.cut()


def test_hostile_inputs_are_4xx_never_500(tmp_path, pg15_schema) -> None:
    """Input that once crashed a handler: front matter nested past Python's recursion limit, a
    lone surrogate (undecodable UTF-8 in the path) looked up on PostgreSQL."""
    url, schema = pg15_schema
    settings = make_settings(tmp_path, RAGSPINE_CHUNK_STORE=url, RAGSPINE_PG_SCHEMA=schema, RAGSPINE_RETRIEVAL_MODE="economy",
                             RAGSPINE_JOB_QUEUE="inprocess")
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        headers = new_tenant(client)
        new_library(client, headers, "hb")
        nested = "---\na: " + "[" * 5000 + "]" * 5000 + "\n---\nbody\n"
        r = client.post("/v1/libraries/hb/documents/upload", files={"file": ("n.md", nested.encode(), "text/markdown")},
                        headers=headers)
        assert r.status_code == 422 and "nested too deeply" in r.json()["message"], r.text
        for method, path in (("GET", "/v1/libraries/%ED%A0%80"), ("GET", "/v1/libraries/%ED%A0%80/documents"),
                             ("DELETE", "/v1/libraries/hb/documents/%ED%A0%80"), ("GET", "/v1/jobs/%ED%A0%80")):
            r = client.request(method, path, headers=headers)
            assert r.status_code in (404, 422), (path, r.status_code, r.text[:200])
        body = b'{"knowledge_id": "\\ud800", "query": "q"}'  # JSON's escape: a lone surrogate after parsing
        r = client.post("/retrieval", content=body, headers={**headers, "Content-Type": "application/json"})
        assert r.status_code in (400, 404, 422) and "error_code" in r.json(), r.text


def test_a_stack_that_cannot_store_vectors_refuses_a_library_and_leaves_nothing(tmp_path, pg15_schema) -> None:
    url, schema = pg15_schema  # PostgreSQL 15 here has no pgvector
    settings = make_settings(tmp_path, RAGSPINE_CHUNK_STORE=url, RAGSPINE_PG_SCHEMA=schema, RAGSPINE_VECTOR_STORE="pgvector",
                             RAGSPINE_JOB_QUEUE="inprocess")
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        headers = new_tenant(client)
        r = client.post("/v1/libraries", json={"name": "hb"}, headers=headers)
        assert r.status_code == 503 and "pgvector is not available" in r.json()["detail"], r.text
        assert client.get("/v1/libraries", headers=headers).json() == []
        assert client.app.state.service.stack.library("acme/hb") is None
        ready = client.get("/readyz", headers=ADMIN).json()
        assert "pgvector is not available" in ready["checks"]["vector store"]
        # a library without vectors is still possible on this stack
        assert client.post("/v1/libraries", json={"name": "plain", "embedding_model": "none"}, headers=headers).status_code == 201
