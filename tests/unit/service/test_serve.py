"""`ragspine serve` and `ragspine worker` as real processes on loopback."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import httpx

from tests.backends import free_port
from tests.helpers import needs

needs("uvicorn")


def test_serve_and_worker_processes(tmp_path, private_redis) -> None:
    port = free_port()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("RAGSPINE_")},
        "RAGSPINE_CHUNK_STORE": str(tmp_path / "chunks.db"),
        "RAGSPINE_EMBEDDING": "deterministic",
        "RAGSPINE_ADMIN_TOKEN": "admin-secret",
        "RAGSPINE_JOB_QUEUE": private_redis.url,
    }
    cli = [sys.executable, "-m", "ragspine.cli"]
    server = subprocess.Popen([*cli, "serve", "--port", str(port)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert server.poll() is None and time.monotonic() < deadline, server.stdout.read().decode() if server.stdout else ""
            time.sleep(0.1)
        with httpx.Client(base_url=base, timeout=10) as http:
            key = http.post("/v1/admin/tenants", json={"tenant_id": "acme"}, headers={"Authorization": "Bearer admin-secret"}).json()["api_key"]["key"]
            headers = {"Authorization": f"Bearer {key}"}
            assert http.post("/v1/libraries", json={"name": "hb"}, headers=headers).status_code == 201
            job = http.post("/v1/libraries/hb/documents", json={"doc_id": "d1", "text": "Gearbox warranty is 36 months."}, headers=headers).json()
            worker = subprocess.run([*cli, "worker", "--burst"], env=env, capture_output=True, text=True, timeout=120)
            assert worker.returncode == 0, worker.stderr
            assert http.get(f"/v1/jobs/{job['job_id']}", headers=headers).json()["state"] == "succeeded"
            records = http.post("/retrieval", json={"knowledge_id": "hb", "query": "gearbox warranty"}, headers=headers).json()["records"]
            assert records[0]["metadata"]["document_id"] == "d1" and 0 < records[0]["score"] <= 1
            assert http.get("/readyz").status_code == 200
    finally:
        server.terminate()
        server.wait(15)
        if server.stdout:
            server.stdout.close()
