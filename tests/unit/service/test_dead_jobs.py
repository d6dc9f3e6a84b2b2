"""Jobs always finish: a worker killed mid-job, or cut off from its database, leaves a job
``failed`` with the reason — never ``running`` forever — and a message lost with Redis is
re-sent from the database; ``ragspine worker`` outlives a Redis restart.

The kills are real (SIGKILL of a ``ragspine serve`` / ``ragspine worker`` subprocess), the
outages too (a private redis-server stopped and restarted empty; PostgreSQL behind a TCP
proxy that is cut). Jobs run long enough to be caught mid-way through the ``slow`` embedding
backend (0.3 s per document). ``RAGSPINE_JOB_STALE_AFTER`` is 2 s here, so the sweeps come
every second.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from urllib.parse import urlsplit

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from ragspine.service.app import create_app
from ragspine.service.jobs import heartbeating, reap, worker_name
from ragspine.service.schema import job as job_table
from ragspine.service.store import ServiceStore, sqlite_engine
from tests.backends import TcpProxy, free_port, start_private_redis
from tests.helpers import needs
from tests.unit.service.conftest import doc, make_settings, new_library, new_tenant, wait_job
from tests.unit.service.slow_backend import http_call, serve, slow_backend_here, slow_docs, slow_env

STALE = "2"


def wait_for(predicate, timeout: float = 30.0, what: str = "the condition"):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


# -- the sweep, on the store ------------------------------------------------------------------
@pytest.fixture
def store(tmp_path):
    s = ServiceStore(sqlite_engine(str(tmp_path / "jobs.db")), create=True)
    yield s
    s.close()


def _running(store: ServiceStore, job_id: str, worker: str) -> None:
    store.create_job(job_id, "t", "t/lib", ["d"], {"documents": []})
    assert store.claim_job(job_id, worker) is not None


def test_a_silent_worker_is_failed_after_the_stale_time_and_a_beating_one_is_not(store) -> None:
    _running(store, "silent", "elsewhere:4242@1")  # another host: only its heartbeat can tell
    _running(store, "alive", "elsewhere:4243@1")
    now = time.time()
    assert reap(store, 60, now=now + 30) == []  # 30 s of silence, under the 60 s allowed
    store.heartbeat("alive")
    with store.engine.begin() as conn:  # the silent one last beat 100 s ago
        conn.execute(job_table.update().where(job_table.c.job_id == "silent").values(heartbeat_at=now - 100))
    assert reap(store, 60, now=now + 1) == ["silent"]
    job = store.get_job("silent")
    assert job.state == "failed" and "no heartbeat from its worker elsewhere:4242" in job.error
    assert "RAGSPINE_JOB_STALE_AFTER=60" in job.error and "keep their previous version" in job.error
    assert store.get_job("alive").state == "running"
    assert reap(store, 60, now=now + 1) == []  # failed once, by one sweep


def test_a_worker_process_that_is_gone_is_failed_at_once(store) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    here = worker_name()
    _running(store, "orphan", here.replace(here.split(":")[1].split("@")[0], str(dead.pid), 1))
    _running(store, "mine", here)  # this process: alive
    assert reap(store, 3600) == ["orphan"]
    assert "stopped while the job ran (the process is gone)" in store.get_job("orphan").error
    assert store.get_job("mine").state == "running"


def test_a_heartbeat_keeps_a_long_job_alive(store) -> None:
    _running(store, "long", "elsewhere:1@1")
    with heartbeating(store, "long", interval=0.05):
        for _ in range(8):
            time.sleep(0.1)
            assert reap(store, 0.3) == []  # 0.8 s in all, far past the 0.3 s allowed
    time.sleep(0.4)
    assert reap(store, 0.3) == ["long"]  # the beat stopped with the block


def test_an_older_sqlite_file_gets_the_heartbeat_columns(tmp_path) -> None:
    path = str(tmp_path / "old.db")
    engine = sa.create_engine(f"sqlite:///{path}")
    with engine.begin() as conn:  # ragspine_job as 0003_service made it
        conn.execute(sa.text(
            "CREATE TABLE ragspine_job (job_id VARCHAR(32) PRIMARY KEY, tenant_id VARCHAR(64) NOT NULL,"
            " library_id VARCHAR(200) NOT NULL, state VARCHAR(16) NOT NULL, done INTEGER NOT NULL DEFAULT 0,"
            " total INTEGER NOT NULL DEFAULT 0, doc_ids JSON NOT NULL, chunks INTEGER NOT NULL DEFAULT 0, error TEXT,"
            " warning TEXT, created_at FLOAT NOT NULL, started_at FLOAT, finished_at FLOAT)"
        ))
        conn.execute(sa.text("INSERT INTO ragspine_job VALUES ('old', 't', 't/l', 'succeeded', 1, 1, '[\"d\"]', 3, NULL, NULL, 1, 2, 3)"))
    engine.dispose()
    store = ServiceStore(sqlite_engine(path), create=True)
    try:
        assert store.get_job("old").chunks == 3 and store.get_job("old").heartbeat_at is None
        _running(store, "new", worker_name())
        assert store.get_job("new").heartbeat_at is not None
    finally:
        store.close()


# -- real kills and outages -------------------------------------------------------------------
def _batch(client_or_port, key_headers, n: int = 40) -> str:
    r = client_or_port.post("/v1/libraries/hb/documents/batch", json={"documents": slow_docs(n)}, headers=key_headers)
    assert r.status_code == 202, r.text
    return r.json()["job_id"]


def test_a_server_killed_mid_job_leaves_it_failed_when_a_server_starts_again(tmp_path) -> None:
    port = free_port()
    env = slow_env(tmp_path, RAGSPINE_CHUNK_STORE=str(tmp_path / "s.db"), RAGSPINE_ADMIN_TOKEN="admin-secret",
                   RAGSPINE_JOB_QUEUE="inprocess", RAGSPINE_JOB_STALE_AFTER=STALE)
    server = serve(env, port)
    try:
        key = http_call(port, "POST", "/v1/admin/tenants", {"tenant_id": "acme"}, "admin-secret")[1]["api_key"]["key"]
        assert http_call(port, "POST", "/v1/libraries", {"name": "hb"}, key)[0] == 201
        status, job = http_call(port, "POST", "/v1/libraries/hb/documents/batch", {"documents": slow_docs(40)}, key)
        assert status == 202, job
        wait_for(lambda: http_call(port, "GET", f"/v1/jobs/{job['job_id']}", token=key)[1]["done"] >= 1, what="progress")
        server.send_signal(signal.SIGKILL)
        server.wait(10)
    finally:
        server.kill()
        server.communicate()
    settings = make_settings(tmp_path, RAGSPINE_CHUNK_STORE=str(tmp_path / "s.db"), RAGSPINE_JOB_STALE_AFTER=STALE,
                             RAGSPINE_JOB_QUEUE="inprocess")
    with TestClient(create_app(settings)) as client:  # the next start (same host: the dead pid is seen at once)
        got = client.get(f"/v1/jobs/{job['job_id']}", headers={"Authorization": f"Bearer {key}"}).json()
        assert got["state"] == "failed" and "process is gone" in got["error"], got
        assert 1 <= got["done"] < 40


def test_an_rq_worker_killed_mid_job_leaves_it_failed_and_the_next_worker_runs_new_jobs(tmp_path, private_redis) -> None:
    needs("rq")
    env = slow_env(tmp_path, RAGSPINE_CHUNK_STORE=str(tmp_path / "s.db"), RAGSPINE_JOB_QUEUE=private_redis.url,
                   RAGSPINE_JOB_STALE_AFTER=STALE)
    with slow_backend_here(tmp_path), TestClient(create_app(make_settings(tmp_path, **env))) as client:
        headers = new_tenant(client)
        new_library(client, headers, "hb")
        job_id = _batch(client, headers)
        worker = subprocess.Popen([sys.executable, "-m", "ragspine.cli", "worker"], env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_for(lambda: client.get(f"/v1/jobs/{job_id}", headers=headers).json()["done"] >= 1, what="progress")
            worker.send_signal(signal.SIGKILL)
            worker.wait(10)
        finally:
            worker.kill()
        got = wait_for(lambda: (j := client.get(f"/v1/jobs/{job_id}", headers=headers).json())["state"] == "failed" and j,
                       timeout=15, what="the server's sweep")  # the server's own watch, within a sweep or two
        assert "stopped while the job ran" in got["error"] and got["done"] < 40, got
        # a new worker runs what comes next
        new = client.post("/v1/libraries/hb/documents", json=doc("after", "Gearbox warranty."), headers=headers).json()
        subprocess.run([sys.executable, "-m", "ragspine.cli", "worker", "--burst"], env=env, timeout=120, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        assert wait_job(client, headers, new["job_id"])["state"] == "succeeded"


def test_a_job_whose_database_goes_away_mid_job_is_failed_once_it_is_back(tmp_path, pg15_schema) -> None:
    url, schema = pg15_schema
    target = urlsplit(url)
    proxy = TcpProxy(target.hostname or "127.0.0.1", target.port or 5432)
    settings = make_settings(tmp_path, RAGSPINE_CHUNK_STORE=proxy.url(url), RAGSPINE_PG_SCHEMA=schema, RAGSPINE_EMBEDDING="slow",
                             RAGSPINE_JOB_QUEUE="inprocess", RAGSPINE_JOB_STALE_AFTER=STALE)
    try:
        with slow_backend_here(tmp_path), TestClient(create_app(settings), raise_server_exceptions=False) as client:
            headers = new_tenant(client)
            new_library(client, headers, "hb")
            job_id = _batch(client, headers)
            wait_for(lambda: client.get(f"/v1/jobs/{job_id}", headers=headers).json()["done"] >= 1, what="progress")
            proxy.cut()
            time.sleep(3)  # past RAGSPINE_JOB_STALE_AFTER: the worker could record nothing
            proxy.restore()
            got = wait_for(lambda: (j := client.get(f"/v1/jobs/{job_id}", headers=headers).json())["state"] == "failed" and j,
                           timeout=15, what="the sweep after the outage")
            assert "lost the database" in got["error"] or "BackendError" in got["error"], got
            assert retrieve_ok(client, headers)
    finally:
        proxy.cut()


def retrieve_ok(client, headers) -> bool:
    return client.post("/v1/retrieve", json={"query": "gearbox"}, headers=headers).status_code == 200


def _worker(env: dict, log_path) -> subprocess.Popen:
    with open(log_path, "w") as log:  # the worker writes to its own copy of the descriptor
        return subprocess.Popen([sys.executable, "-m", "ragspine.cli", "worker"], env=env, stdout=log, stderr=log)


def _stops_promptly(worker: subprocess.Popen, log_path, within: float = 10.0) -> None:
    """SIGTERM: the worker drains and exits 0 within ``within`` seconds."""
    worker.send_signal(signal.SIGTERM)
    try:
        code = worker.wait(within)
    except subprocess.TimeoutExpired:
        worker.kill()
        raise AssertionError(f"no exit {within:g} s after SIGTERM:\n{log_path.read_text()[-3000:]}") from None
    assert code == 0, log_path.read_text()[-3000:]


def _told_once(log_path, outages: int = 1) -> None:
    """An outage is one line when lost and one when back; no traceback, none of RQ's retry lines."""
    text = log_path.read_text()
    assert text.count("lost the job queue at redis://127.0.0.1:") == outages, text[-3000:]
    assert text.count("is back after") == outages, text[-3000:]
    assert "Traceback" not in text and "could not connect to Redis" not in text, text[-3000:]
    assert text.count("job sweep failed") <= outages, text[-3000:]


def test_the_worker_outlives_a_redis_restart_and_lost_messages_are_resent(tmp_path) -> None:
    needs("rq")
    import redis as redis_client
    from rq import Queue

    redis = start_private_redis()
    port = int(urlsplit(redis.url).port or 0)
    env = slow_env(tmp_path, RAGSPINE_CHUNK_STORE=str(tmp_path / "s.db"), RAGSPINE_JOB_QUEUE=redis.url,
                   RAGSPINE_JOB_STALE_AFTER=STALE, RAGSPINE_EMBEDDING="deterministic")
    log_path = tmp_path / "worker.log"
    worker = None
    try:
        with TestClient(create_app(make_settings(tmp_path, **env))) as client:
            headers = new_tenant(client)
            new_library(client, headers, "hb")
            worker = _worker(env, log_path)
            first = client.post("/v1/libraries/hb/documents", json=doc("a", "Gearbox warranty."), headers=headers).json()
            assert wait_job(client, headers, first["job_id"], timeout=60)["state"] == "succeeded"

            redis.stop()  # Redis restarts, empty (no persistence), after several of RQ's own retries
            time.sleep(4)
            redis = start_private_redis(port)
            time.sleep(1.5)
            assert worker.poll() is None, "the worker exited when Redis went away"
            second = client.post("/v1/libraries/hb/documents", json=doc("b", "Repairs take days."), headers=headers).json()
            assert wait_job(client, headers, second["job_id"], timeout=60)["state"] == "succeeded"  # the same worker
            _told_once(log_path)

            # SIGTERM after a Redis restart: RQ's pub/sub thread waits for a subscription that
            # never comes, and redis-py 8 joined it without a bound (60 s; "warm shut down requested")
            _stops_promptly(worker, log_path)
            worker = None
            # no worker now; a message is queued, then lost with Redis
            third = client.post("/v1/libraries/hb/documents", json=doc("c", "Spare parts ship weekly."), headers=headers).json()
            redis.stop()
            redis = start_private_redis(port)
            queue = Queue(f"{client.app.state.service.settings.redis_prefix}ingest", connection=redis_client.Redis.from_url(redis.url))
            wait_for(lambda: third["job_id"] in queue.job_ids, timeout=15, what="the server's sweep to re-send the job")
            subprocess.run([sys.executable, "-m", "ragspine.cli", "worker", "--burst"], env=env, timeout=120, check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            assert wait_job(client, headers, third["job_id"])["state"] == "succeeded"
    finally:
        if worker is not None:
            worker.kill()
        redis.stop()


def test_the_worker_outlives_redis_going_away_mid_job_and_runs_what_comes_after(tmp_path) -> None:
    """The attack's outage: Redis stopped while a job runs. The worker used to exit on its first
    reconnect (RQ names its connection when a worker is built: a traceback) and the jobs queued
    after it waited for a manual restart."""
    needs("rq")
    redis = start_private_redis()
    port = int(urlsplit(redis.url).port or 0)
    env = slow_env(tmp_path, RAGSPINE_CHUNK_STORE=str(tmp_path / "s.db"), RAGSPINE_JOB_QUEUE=redis.url,
                   RAGSPINE_JOB_STALE_AFTER="30")
    log_path = tmp_path / "worker.log"
    worker = None
    try:
        with slow_backend_here(tmp_path), TestClient(create_app(make_settings(tmp_path, **env))) as client:
            headers = new_tenant(client)
            new_library(client, headers, "hb")
            worker = _worker(env, log_path)
            job_id = _batch(client, headers, n=12)  # 0.3 s a document
            wait_for(lambda: client.get(f"/v1/jobs/{job_id}", headers=headers).json()["done"] >= 1, what="progress")
            redis.stop()
            time.sleep(4)  # the job ends meanwhile: RQ's record of it fails, the database's does not
            redis = start_private_redis(port)
            assert wait_job(client, headers, job_id, timeout=30)["state"] == "succeeded"
            after = client.post("/v1/libraries/hb/documents", json=doc("after", "Spare parts ship weekly."), headers=headers).json()
            assert wait_job(client, headers, after["job_id"], timeout=60)["state"] == "succeeded", log_path.read_text()[-3000:]
            assert worker.poll() is None
            _told_once(log_path)
            _stops_promptly(worker, log_path)
            worker = None
    finally:
        if worker is not None:
            worker.kill()
        redis.stop()


def test_a_stop_while_redis_is_away_exits_at_once(tmp_path) -> None:
    needs("rq")
    redis = start_private_redis()
    env = slow_env(tmp_path, RAGSPINE_CHUNK_STORE=str(tmp_path / "s.db"), RAGSPINE_JOB_QUEUE=redis.url,
                   RAGSPINE_EMBEDDING="deterministic")
    log_path = tmp_path / "worker.log"
    worker = _worker(env, log_path)
    try:
        wait_for(lambda: "Listening on" in log_path.read_text(), what="the worker to start")
        redis.stop()
        wait_for(lambda: "lost the job queue" in log_path.read_text(), timeout=15, what="the outage line")
        _stops_promptly(worker, log_path, within=5)
        assert "Traceback" not in log_path.read_text()
        worker = None
    finally:
        if worker is not None:
            worker.kill()
        redis.stop()
