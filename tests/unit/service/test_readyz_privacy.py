"""What an unauthenticated caller learns during an outage: ``/readyz`` says ready / not ready
and nothing else (before: each store's driver error — the database's user, host, port and
name); the admin token sees each store's check. A made-up API key during a service-store
outage gets a 503 without the driver's words either (the caller is not authenticated yet)."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from fastapi.testclient import TestClient

from ragspine.service.app import create_app
from tests.backends import TcpProxy, free_port
from tests.unit.service.conftest import ADMIN, make_settings, new_tenant

FAKE_KEY = {"Authorization": "Bearer rsk_0123456789ab_" + "A" * 43}


def secrets_of(url: str) -> list[str]:
    """What an outage's error may name: user, host:port, port, database."""
    parts = urlsplit(url)
    return [f"{parts.username}@", f":{parts.port}", str(parts.port), parts.path.strip("/")]


def test_readyz_says_only_ready_or_not_without_the_admin_token(tmp_path) -> None:
    port = free_port()
    dead = f"redis://127.0.0.1:{port}/0"
    with TestClient(create_app(make_settings(tmp_path, RAGSPINE_EMBEDDING_CACHE=dead))) as client:
        for headers in ({}, {"Authorization": "Bearer wrong"}, FAKE_KEY, new_tenant(client)):
            r = client.get("/readyz", headers=headers)
            assert (r.status_code, r.json()) == (503, {"status": "unavailable"}), (headers, r.text)
            assert str(port) not in r.text
        r = client.get("/readyz", headers=ADMIN)
        assert r.status_code == 503 and r.json()["status"] == "unavailable"
        assert r.json()["checks"]["chunk store"] == "ok" and str(port) in r.json()["checks"]["embedding cache"]


def test_a_ready_server_says_ready_to_anyone(client) -> None:
    assert client.get("/readyz").json() == {"status": "ready"}
    assert set(client.get("/readyz", headers=ADMIN).json()["checks"].values()) == {"ok"}


def test_a_postgresql_outage_names_no_database_to_an_unauthenticated_caller(tmp_path, pg15_schema) -> None:
    url, schema = pg15_schema
    target = urlsplit(url)
    proxy = TcpProxy(target.hostname or "127.0.0.1", target.port or 5432)
    proxied = proxy.url(url)
    settings = make_settings(tmp_path, RAGSPINE_CHUNK_STORE=proxied, RAGSPINE_PG_SCHEMA=schema, RAGSPINE_RETRIEVAL_MODE="economy",
                             RAGSPINE_JOB_QUEUE="inprocess")
    try:
        with TestClient(create_app(settings), raise_server_exceptions=False) as client:
            assert client.get("/readyz").json() == {"status": "ready"}
            proxy.cut()
            hidden = secrets_of(proxied)
            for method, path, headers, body in (
                ("GET", "/readyz", {}, None),
                ("GET", "/v1/libraries", FAKE_KEY, None),  # the auth check cannot reach the key table
                ("POST", "/retrieval", FAKE_KEY, {"knowledge_id": "hb", "query": "gearbox"}),
            ):
                r = client.request(method, path, headers=headers, json=body)
                assert r.status_code == 503, (path, r.status_code, r.text)
                leaked = [s for s in hidden if s in r.text] + [w for w in ("psycopg", "OperationalError", "PostgreSQL") if w in r.text]
                assert not leaked, (path, leaked, r.text)
            assert client.get("/readyz").json() == {"status": "unavailable"}
            checks = client.get("/readyz", headers=ADMIN).json()["checks"]
            assert checks["chunk store"] != "ok" and str(urlsplit(proxied).port) in checks["chunk store"], checks
    finally:
        proxy.cut()


@pytest.mark.parametrize("path", ["/healthz", "/readyz", "/metrics"])
def test_the_public_ops_routes_need_no_key(client, path) -> None:
    assert client.get(path).status_code == 200
