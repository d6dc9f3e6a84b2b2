"""The Redis job queue (RQ): the server enqueues, a worker anywhere runs the job."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from ragspine.service.app import create_app
from ragspine.service.jobs import queue_target, run_queued_job, set_worker_context
from tests.helpers import needs
from tests.unit.service.conftest import (
    ADMIN,
    doc,
    make_settings,
    new_library,
    new_tenant,
    retrieve,
)

needs("rq")



def test_queue_target_follows_the_settings(tmp_path) -> None:
    assert queue_target(make_settings(tmp_path)) == "inprocess"
    assert queue_target(make_settings(tmp_path, RAGSPINE_EMBEDDING_CACHE="redis://h:6379/0")) == "redis://h:6379/0"
    assert queue_target(make_settings(tmp_path, RAGSPINE_EMBEDDING_CACHE="redis://h/0", RAGSPINE_JOB_QUEUE="inprocess")) == "inprocess"
    assert queue_target(make_settings(tmp_path, RAGSPINE_JOB_QUEUE="redis://q:6379/2")) == "redis://q:6379/2"
    with pytest.raises(ValueError, match="RAGSPINE_JOB_QUEUE"):
        queue_target(make_settings(tmp_path, RAGSPINE_JOB_QUEUE="kafka://x"))


def test_jobs_wait_in_redis_until_a_worker_runs_them(tmp_path, private_redis) -> None:
    import redis
    from rq import Queue, SimpleWorker

    settings = make_settings(tmp_path, RAGSPINE_JOB_QUEUE=private_redis.url)
    with TestClient(create_app(settings)) as client:
        headers = new_tenant(client)
        new_library(client, headers, "hb")
        first = client.post("/v1/libraries/hb/documents", json=doc("d1", "Gearbox warranty is 36 months."), headers=headers).json()
        second = client.post("/v1/libraries/hb/documents/batch", json={"documents": [doc("d2", "Repairs take days.")]}, headers=headers).json()
        ctx = client.app.state.service
        assert ctx.queue.kind == "redis" and client.get("/readyz", headers=ADMIN).json()["checks"]["job queue (redis)"] == "ok"
        assert client.get(f"/v1/jobs/{first['job_id']}", headers=headers).json()["state"] == "queued"  # no worker yet

        connection = redis.Redis.from_url(private_redis.url)
        queue = Queue(f"{settings.redis_prefix}ingest", connection=connection)
        assert set(queue.job_ids) == {first["job_id"], second["job_id"]}
        set_worker_context(ctx)  # what `ragspine worker` does with its own context
        try:
            SimpleWorker([queue], connection=connection).work(burst=True)
        finally:
            set_worker_context(None)
        for job in (first, second):
            assert client.get(f"/v1/jobs/{job['job_id']}", headers=headers).json()["state"] == "succeeded"
        assert {s["doc_id"] for s in retrieve(client, headers, "gearbox repairs").json()["snippets"]} == {"d1", "d2"}

        # a lost message (Redis restarted without persistence) is re-sent at start-up
        lost = client.post("/v1/libraries/hb/documents", json=doc("d3", "Spare parts ship weekly."), headers=headers).json()
        connection.flushdb()
        ctx.queue.recover()
        assert queue.job_ids == [lost["job_id"]]
        set_worker_context(ctx)
        try:
            run_queued_job(lost["job_id"])
            run_queued_job(lost["job_id"])  # a job handed out twice runs once
        finally:
            set_worker_context(None)
        job = client.get(f"/v1/jobs/{lost['job_id']}", headers=headers).json()
        assert job["state"] == "succeeded" and job["done"] == 1
        connection.close()


def test_worker_command_needs_a_redis_queue(capsys) -> None:
    from ragspine.cli import main

    assert main(["worker", "--burst"]) == 2
    assert "RAGSPINE_JOB_QUEUE" in capsys.readouterr().err
