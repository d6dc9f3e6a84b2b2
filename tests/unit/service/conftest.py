"""The service in-process (fastapi TestClient) on the embedded default: a temporary SQLite
file, the deterministic embedding backend (fast, no model), the in-process job queue."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.helpers import needs

needs("fastapi")

from fastapi.testclient import TestClient

from ragspine.config import load_settings
from ragspine.service.app import create_app

ADMIN = {"Authorization": "Bearer admin-secret"}


def make_settings(tmp_path, **env: str) -> Any:
    base = {
        "RAGSPINE_CHUNK_STORE": str(tmp_path / "service.db"),
        "RAGSPINE_EMBEDDING": "deterministic",
        "RAGSPINE_ADMIN_TOKEN": "admin-secret",
    }
    base.update(env)
    return load_settings(base)


@pytest.fixture
def settings(tmp_path):
    return make_settings(tmp_path)


@pytest.fixture
def client(settings):
    with TestClient(create_app(settings)) as c:
        yield c


def new_tenant(client: TestClient, tenant_id: str = "acme") -> dict[str, str]:
    """Create a tenant; the headers of its first API key."""
    r = client.post("/v1/admin/tenants", json={"tenant_id": tenant_id, "name": tenant_id.title()}, headers=ADMIN)
    assert r.status_code == 201, r.text
    return {"Authorization": f"Bearer {r.json()['api_key']['key']}"}


def new_library(client: TestClient, headers: dict, name: str = "handbook", **fields: Any) -> dict:
    r = client.post("/v1/libraries", json={"name": name, "description": fields.pop("description", name), **fields}, headers=headers)
    assert r.status_code == 201, r.text
    return r.json()


def wait_job(client: TestClient, headers: dict, job_id: str, timeout: float = 20.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        job = client.get(f"/v1/jobs/{job_id}", headers=headers).json()
        if job["state"] in ("succeeded", "failed") or time.monotonic() > deadline:
            return job
        time.sleep(0.02)


def ingest(client: TestClient, headers: dict, library: str, *docs: dict) -> dict:
    """Upload documents (one job) and wait for it; the finished job."""
    if len(docs) == 1:
        r = client.post(f"/v1/libraries/{library}/documents", json=docs[0], headers=headers)
    else:
        r = client.post(f"/v1/libraries/{library}/documents/batch", json={"documents": list(docs)}, headers=headers)
    assert r.status_code == 202, r.text
    return wait_job(client, headers, r.json()["job_id"])


def doc(doc_id: str, text: str, **fields: Any) -> dict:
    return {"doc_id": doc_id, "title": fields.pop("title", doc_id.title()), "text": text, **fields}


def retrieve(client: TestClient, headers: dict, query: str, **body: Any) -> Any:
    return client.post("/v1/retrieve", json={"query": query, **body}, headers=headers)
