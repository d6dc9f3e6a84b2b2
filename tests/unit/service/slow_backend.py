"""A slow embedding backend for tests of long work in a subprocess (``ragspine serve`` or
``ragspine worker``), registered through the embedding registry as a plugin would be.

It is the deterministic backend plus a pause: 1.5 s for a text containing ``slowquery`` (a
request in flight), 0.3 s per batch containing ``slowdoc`` (a job that runs for a while).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

PLUGIN = '''
import time
from ragspine.retrieval.vector.embedding_backends import DeterministicEmbeddingBackend

class SlowBackend(DeterministicEmbeddingBackend):
    def embed_texts(self, texts):
        if any("slowquery" in t for t in texts):
            time.sleep(1.5)
        if any("slowdoc" in t for t in texts):
            time.sleep(0.3)
        return super().embed_texts(texts)
'''
SITECUSTOMIZE = '''
from ragspine.registries import EMBEDDING_BACKENDS
from ragspine.registry import Entry
EMBEDDING_BACKENDS.register("slow", Entry("ragspine_slow_plugin:SlowBackend"))
'''


@contextmanager
def slow_backend_here(tmp_path: Path) -> Iterator[None]:
    """The ``slow`` backend in this process too (a server under TestClient beside a subprocess)."""
    from ragspine.registries import EMBEDDING_BACKENDS
    from ragspine.registry import Entry

    slow_env(tmp_path)
    sys.path.insert(0, str(tmp_path))
    EMBEDDING_BACKENDS.register("slow", Entry("ragspine_slow_plugin:SlowBackend"))
    try:
        yield
    finally:
        EMBEDDING_BACKENDS.unregister("slow")
        sys.path.remove(str(tmp_path))
        sys.modules.pop("ragspine_slow_plugin", None)


def slow_env(tmp_path: Path, **settings: str) -> dict[str, str]:
    """The environment of a subprocess that has the ``slow`` backend, with ``settings``
    (``RAGSPINE_*`` of this process are left out)."""
    (tmp_path / "ragspine_slow_plugin.py").write_text(textwrap.dedent(PLUGIN), encoding="utf-8")
    (tmp_path / "sitecustomize.py").write_text(textwrap.dedent(SITECUSTOMIZE), encoding="utf-8")
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith("RAGSPINE_")},
        "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
        "RAGSPINE_EMBEDDING": "slow", "RAGSPINE_DATA_DIR": str(tmp_path / "data"), **settings,
    }


def slow_docs(n: int) -> list[dict]:
    """``n`` documents whose embedding takes 0.3 s each (one batch per document)."""
    return [{"doc_id": f"s{i}", "title": f"S{i}", "text": f"slowdoc {i}: gearbox part {i} ships weekly."} for i in range(n)]


def http_call(port: int, method: str, path: str, body: dict | None = None, token: str = "") -> tuple[int, dict]:
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=20) as resp:
            return resp.status, json.loads(resp.read() or b"{}")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def serve(env: dict[str, str], port: int) -> subprocess.Popen:
    """``ragspine serve`` on ``port``, once it answers ``/healthz``."""
    server = subprocess.Popen([sys.executable, "-m", "ragspine.cli", "serve", "--port", str(port)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 30
    while True:
        try:
            if http_call(port, "GET", "/healthz")[0] == 200:
                return server
        except OSError:
            pass
        if time.monotonic() > deadline or server.poll() is not None:
            server.kill()
            raise AssertionError(f"the server did not start: {server.communicate()[0][-2000:]}")
        time.sleep(0.1)
