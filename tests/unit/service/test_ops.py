"""/healthz, /readyz, /metrics and the published OpenAPI document."""

from __future__ import annotations

from fastapi.testclient import TestClient

from ragspine.service.app import create_app
from tests.backends import free_port
from tests.unit.service.conftest import (
    ADMIN,
    doc,
    ingest,
    make_settings,
    new_library,
    new_tenant,
)


def test_healthz_and_readyz(client) -> None:
    assert client.get("/healthz").json()["status"] == "ok"
    r = client.get("/readyz", headers=ADMIN)
    assert r.status_code == 200
    assert r.json() == {"status": "ready", "checks": {"chunk store": "ok", "service store": "ok", "job queue (inprocess)": "ok"}}


def test_readyz_names_each_unreachable_store(tmp_path) -> None:
    dead = f"redis://127.0.0.1:{free_port()}/0"
    settings = make_settings(tmp_path, RAGSPINE_EMBEDDING_CACHE=dead, RAGSPINE_JOB_QUEUE=dead)
    with TestClient(create_app(settings)) as client:
        assert client.get("/healthz").status_code == 200  # the process is alive...
        r = client.get("/readyz", headers=ADMIN)  # ...but not ready
        assert r.status_code == 503 and r.json()["status"] == "unavailable"
        checks = r.json()["checks"]
        assert checks["chunk store"] == "ok" and checks["embedding cache"] != "ok" and checks["job queue (redis)"] != "ok"


def test_metrics_expose_latency_ingest_and_cache_counters(client) -> None:
    headers = new_tenant(client)
    new_library(client, headers, "hb")
    ingest(client, headers, "hb", doc("d1", "Gearbox warranty is 36 months."), doc("d2", "Repairs take days."))
    client.post("/v1/retrieve", json={"query": "gearbox"}, headers=headers)
    client.post("/retrieval", json={"knowledge_id": "hb", "query": "gearbox"}, headers=headers)
    text = client.get("/metrics").text
    assert 'ragspine_http_request_duration_seconds_bucket{le="0.005",method="POST",route="/v1/retrieve"}' in text
    assert 'ragspine_http_requests_total{method="POST",route="/v1/libraries/{name}/documents/batch",status="202"} 1.0' in text
    assert 'ragspine_retrieval_duration_seconds_count{endpoint="retrieve",mode="library"} 1.0' in text
    assert 'ragspine_retrieval_duration_seconds_count{endpoint="dify",mode="auto"} 1.0' in text
    assert 'ragspine_ingest_documents_total{outcome="succeeded"} 2.0' in text
    assert "ragspine_ingest_chunks_total 2.0" in text
    assert 'ragspine_ingest_jobs{state="succeeded"} 1.0' in text
    for name in ("hits", "misses", "errors", "fallbacks"):
        assert f"ragspine_embedding_cache_{name}_total" in text
    assert "ragspine_embedding_cache_misses_total 0.0" not in text  # the ingest embedded (cache misses)


def test_two_apps_in_one_process_keep_their_own_metrics(tmp_path) -> None:
    with TestClient(create_app(make_settings(tmp_path / "a"))) as a, TestClient(create_app(make_settings(tmp_path / "b"))) as b:
        a.get("/healthz")
        assert 'route="/healthz"' in a.get("/metrics").text and 'route="/healthz"' not in b.get("/metrics").text


def test_openapi_is_published(client) -> None:
    spec = client.get("/openapi.json").json()
    paths = set(spec["paths"])
    assert {"/v1/admin/tenants", "/v1/libraries", "/v1/libraries/{name}/documents", "/v1/libraries/{name}/documents/upload",
            "/v1/jobs/{job_id}", "/v1/retrieve", "/retrieval", "/healthz", "/readyz", "/metrics"} <= paths
    assert "HTTPBearer" in spec["components"]["securitySchemes"]
    assert client.get("/docs").status_code == 200
