"""RQ's own keys live under RAGSPINE_REDIS_PREFIX, beside RAGSpine's.

RQ reads its key prefix once, when it is first imported, so this runs in fresh processes: a
server (``create_app`` under TestClient) that queues a job, then ``ragspine worker --burst``
that runs it; every key in the Redis database starts with the prefix.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from tests.helpers import needs

SERVER = textwrap.dedent('''
    import sys
    from fastapi.testclient import TestClient
    from ragspine.config import load_settings
    from ragspine.service.app import create_app
    import os
    with TestClient(create_app(load_settings())) as client:
        admin = {"Authorization": "Bearer adm"}
        key = client.post("/v1/admin/tenants", json={"tenant_id": "acme"}, headers=admin).json()["api_key"]["key"]
        headers = {"Authorization": f"Bearer {key}"}
        assert client.post("/v1/libraries", json={"name": "hb"}, headers=headers).status_code == 201
        r = client.post("/v1/libraries/hb/documents", json={"doc_id": "d", "text": "Gearbox warranty."}, headers=headers)
        assert r.status_code == 202, r.text
        print(r.json()["job_id"])
''')


def test_every_redis_key_is_under_the_prefix(tmp_path, private_redis) -> None:
    needs("rq")
    import redis

    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAGSPINE_", "RQ_"))}
    env.update(RAGSPINE_CHUNK_STORE=str(tmp_path / "s.db"), RAGSPINE_JOB_QUEUE=private_redis.url, RAGSPINE_EMBEDDING="deterministic",
               RAGSPINE_EMBEDDING_CACHE=private_redis.url, RAGSPINE_REDIS_PREFIX="acme-rag:", RAGSPINE_ADMIN_TOKEN="adm",
               RAGSPINE_DATA_DIR=str(tmp_path / "data"))
    out = subprocess.run([sys.executable, "-c", SERVER], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    done = subprocess.run([sys.executable, "-m", "ragspine.cli", "worker", "--burst"], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    client = redis.Redis.from_url(private_redis.url)
    try:
        keys = sorted(k.decode() for k in client.keys("*"))
    finally:
        client.close()
    assert any(k.startswith("acme-rag:rq:") for k in keys) and any(":job:" in k for k in keys), keys  # RQ's
    assert all(k.startswith("acme-rag:") for k in keys), [k for k in keys if not k.startswith("acme-rag:")]


def test_rq_imported_earlier_under_another_prefix_is_refused_with_the_fix(monkeypatch) -> None:
    needs("rq")
    import rq  # noqa: F401 - imported here under this process's RQ_KEY_PREFIX

    from ragspine.errors import ConfigError
    from ragspine.service.jobs import import_rq

    monkeypatch.delenv("RQ_KEY_PREFIX", raising=False)
    with pytest.raises(ConfigError, match=r"workers would not see this process's jobs; set RQ_KEY_PREFIX=other:rq"):
        import_rq("other:")
    monkeypatch.setenv("RQ_KEY_PREFIX", rq.defaults.RQ_KEY_PREFIX)  # the explicit prefix every process shares
    assert import_rq("other:") is rq
