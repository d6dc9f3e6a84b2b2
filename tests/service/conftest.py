"""The HTTP API suites, run against two stacks (``service`` is parametrized over both):

* ``embedded`` — what ``ragspine serve`` uses with no configuration: a temporary SQLite file,
  the in-process vector store and SQLite embedding cache, ingest jobs on the server's own
  thread pool (RAGSPINE_EMBEDDING=deterministic: vectors without a model download);
* ``production`` — PostgreSQL 18 + pgvector (a fresh schema), the Redis embedding cache (a
  fresh key prefix) and the Redis job queue (RQ) drained by a real ``ragspine worker``
  process, as in ``docker-compose.yml``. The queue lives on a private redis-server of the
  test's own, because RQ's keys (``rq:*``) cannot be put under a prefix. The worker is a
  separate process with its own stack, so what the server reads was written by another
  process — the server must follow the store, not its own memory.

Settings are built from an explicit environ dict (``load_settings(environ)``); the worker
gets the same dict as its environment. With RAGSPINE_REQUIRE_BACKENDS=1 (CI) a missing
PostgreSQL or Redis fails the production tests instead of skipping them (tests/backends.py).
The helpers of tests/unit/service/conftest.py (``new_tenant``, ``ingest``, ...) work on
``service.client`` unchanged.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers import needs

needs("fastapi")

from fastapi.testclient import TestClient

from ragspine.config import Settings, load_settings
from ragspine.service.app import create_app
from tests import backends
from tests.unit.service.conftest import ADMIN

STACKS = ("embedded", "production")
ADMIN_TOKEN = ADMIN["Authorization"].split()[1]


@dataclass
class Service:
    """One running API: ``client`` (in-process, lifespan started) and how it was configured."""

    stack: str
    client: TestClient
    settings: Settings
    environ: dict[str, str]
    worker: subprocess.Popen | None = None
    worker_log: Path | None = None

    def worker_output(self) -> str:
        if self.worker_log is None or not self.worker_log.exists():
            return ""
        return self.worker_log.read_text(errors="replace")[-4000:]


def embedded_environ(tmp_path: Path) -> dict[str, str]:
    return {
        "RAGSPINE_DATA_DIR": str(tmp_path / "data"),
        "RAGSPINE_CHUNK_STORE": str(tmp_path / "service.db"),
        "RAGSPINE_EMBEDDING": "deterministic",
        "RAGSPINE_ADMIN_TOKEN": ADMIN_TOKEN,
        "RAGSPINE_JOB_QUEUE": "inprocess",
    }


def production_environ(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    """PostgreSQL + pgvector, the Redis cache, RQ. Requesting the backend fixtures here is
    what makes CI fail (never skip) when one is missing."""
    try:
        import rq  # noqa: F401
    except ImportError:
        backends.unavailable("redis", "rq is not installed (pip install 'ragspine[server]')")
    url, schema = request.getfixturevalue("pg_schema")
    redis_url, prefix = request.getfixturevalue("redis_namespace")
    queue = request.getfixturevalue("private_redis")
    return {
        **embedded_environ(tmp_path),
        "RAGSPINE_CHUNK_STORE": url,
        "RAGSPINE_PG_SCHEMA": schema,
        "RAGSPINE_VECTOR_STORE": "pgvector",
        "RAGSPINE_EMBEDDING_CACHE": redis_url,
        "RAGSPINE_REDIS_PREFIX": prefix,
        "RAGSPINE_JOB_QUEUE": queue.url,
    }


def start_worker(environ: dict[str, str], log: Path) -> subprocess.Popen:
    """``ragspine worker`` (RQ SimpleWorker, not burst) with exactly ``environ``'s RAGSPINE_* values."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGSPINE_")}
    env.update(environ)
    with log.open("wb") as out:
        return subprocess.Popen([sys.executable, "-m", "ragspine.cli", "worker"], env=env, stdout=out, stderr=subprocess.STDOUT)


def stop_worker(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()  # RQ: warm shutdown (a running job finishes first)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


@contextmanager
def open_service(stack: str, environ: dict[str, str], tmp_path: Path) -> Iterator[Service]:
    """The app started, and for ``production`` its worker process."""
    settings = load_settings(environ)
    with TestClient(create_app(settings)) as client:
        service = Service(stack, client, settings, environ)
        if stack == "production":
            assert client.app.state.service.queue.kind == "redis"
            service.worker_log = tmp_path / "worker.log"
            service.worker = start_worker(environ, service.worker_log)  # after the app migrated the schema
        try:
            yield service
        finally:
            if service.worker is not None:
                stop_worker(service.worker)


@pytest.fixture(params=STACKS)
def stack_environ(request, tmp_path) -> tuple[str, dict[str, str]]:
    """``(stack name, environ)`` for each stack."""
    if request.param == "embedded":
        return "embedded", embedded_environ(tmp_path)
    return "production", production_environ(request, tmp_path)


@pytest.fixture
def service(stack_environ, tmp_path):
    stack, environ = stack_environ
    with open_service(stack, environ, tmp_path) as svc:
        yield svc


@pytest.fixture
def embedded_service(tmp_path):
    with open_service("embedded", embedded_environ(tmp_path), tmp_path) as svc:
        yield svc


# -- helpers ---------------------------------------------------------------------------------
def ok_job(service: Service, job: dict) -> dict:
    """Assert a finished job succeeded (with the worker's log when it did not)."""
    assert job["state"] == "succeeded", f"{job}\n--- worker log ---\n{service.worker_output()}"
    return job


def wait_jobs_idle(service: Service, headers: dict, timeout: float = 30.0) -> None:
    """Wait until none of the tenant's jobs is queued or running."""
    deadline = time.monotonic() + timeout
    while True:
        jobs = service.client.get("/v1/jobs?limit=500", headers=headers).json()
        if all(j["state"] in ("succeeded", "failed") for j in jobs):
            return
        assert time.monotonic() < deadline, f"jobs still pending: {jobs}\n{service.worker_output()}"
        time.sleep(0.05)
