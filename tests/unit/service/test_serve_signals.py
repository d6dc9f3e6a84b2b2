"""``ragspine serve`` on SIGTERM: it stops accepting, lets the request in flight finish, and
exits — bounded by the request deadline, never hanging."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import urllib.request
from pathlib import Path

from tests.backends import free_port

PLUGIN = '''
import time
from ragspine.retrieval.vector.embedding_backends import DeterministicEmbeddingBackend

class SlowBackend(DeterministicEmbeddingBackend):
    """Takes 1.5 s to embed a text containing 'slowquery' (a request that is in flight)."""
    def embed_texts(self, texts):
        if any("slowquery" in t for t in texts):
            time.sleep(1.5)
        return super().embed_texts(texts)
'''
SITECUSTOMIZE = '''
from ragspine.registries import EMBEDDING_BACKENDS
from ragspine.registry import Entry
EMBEDDING_BACKENDS.register("slow", Entry("ragspine_slow_plugin:SlowBackend"))
'''


def _call(port: int, method: str, path: str, body: dict | None = None, token: str = "") -> tuple[int, dict]:
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=20) as resp:
            return resp.status, json.loads(resp.read() or b"{}")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def test_sigterm_drains_the_request_in_flight_then_exits(tmp_path: Path) -> None:
    (tmp_path / "ragspine_slow_plugin.py").write_text(textwrap.dedent(PLUGIN), encoding="utf-8")
    (tmp_path / "sitecustomize.py").write_text(textwrap.dedent(SITECUSTOMIZE), encoding="utf-8")
    port = free_port()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("RAGSPINE_")},
           "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
           "RAGSPINE_CHUNK_STORE": str(tmp_path / "s.db"), "RAGSPINE_EMBEDDING": "slow", "RAGSPINE_ADMIN_TOKEN": "adm",
           "RAGSPINE_JOB_QUEUE": "inprocess", "RAGSPINE_DATA_DIR": str(tmp_path / "data")}
    server = subprocess.Popen([sys.executable, "-m", "ragspine.cli", "serve", "--port", str(port)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if _call(port, "GET", "/healthz")[0] == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline and server.poll() is None, "the server did not start"
            time.sleep(0.1)
        status, created = _call(port, "POST", "/v1/admin/tenants", {"tenant_id": "acme"}, "adm")
        assert status == 201, created
        key = created["api_key"]["key"]
        assert _call(port, "POST", "/v1/libraries", {"name": "hb"}, key)[0] == 201
        status, job = _call(port, "POST", "/v1/libraries/hb/documents", {"doc_id": "d", "text": "gearbox warranty"}, key)
        while _call(port, "GET", f"/v1/jobs/{job['job_id']}", token=key)[1]["state"] not in ("succeeded", "failed"):
            time.sleep(0.1)
        answer: dict = {}
        flight = threading.Thread(target=lambda: answer.update(r=_call(port, "POST", "/v1/retrieve", {"query": "slowquery gearbox"}, key)))
        flight.start()
        time.sleep(0.5)  # the request is in flight (embedding its query)
        server.send_signal(signal.SIGTERM)
        flight.join(20)
        assert answer["r"][0] == 200 and answer["r"][1]["snippets"][0]["doc_id"] == "d"  # drained, not dropped
        # uvicorn shuts down gracefully, then re-raises the signal it caught (so a supervisor
        # sees "terminated by SIGTERM"): the exit status is -SIGTERM after a clean shutdown
        assert server.wait(20) in (0, -signal.SIGTERM)
        log = server.stdout.read() if server.stdout else ""
        assert "Waiting for application shutdown" in log and "Finished server process" in log, log[-2000:]
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
