"""Work stops at the deadline, and bulk requests leave the server to plain queries — on both
stacks (the embedded default; PostgreSQL 18 + pgvector + Redis with a ``ragspine worker``).

Measured before (issue 25): 41 small ``POST /v1/facts`` CSV bodies all got 504, a normal query
sent during them waited 37.3 s and got 504 too, and 40 threads were still running afterwards:
the deadline answered but did not stop the work, and the bulk requests held every thread of
the pool (40) and shared one GIL with the query.

Here a real server (uvicorn on loopback, in a thread of this process) gets 41 hostile bodies
at once — 10,000 fact rows each (the most a request may send), and the 73 KB headers of the
attack — while a monitor samples which of the server's worker threads are busy in RAGSpine
code. Every thread is idle within a second of its request's answer (504 or not), and plain
``/v1/retrieve`` queries sent in the middle of the storm answer 200 within their usual time.
The single-request cases, the lanes and the Dify query: tests/unit/service/test_work_stops.py.
"""

from __future__ import annotations

import bisect
import json
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

from tests.helpers import needs

needs("httpx")

import httpx

needs("uvicorn")

from ragspine.config import load_settings  # noqa: E402
from tests.service.conftest import start_worker, stop_worker  # noqa: E402
from tests.unit.service.conftest import ADMIN  # noqa: E402
from tests.unit.service.test_work_stops import STORM, TIMEOUT, Monitor, Server, busy_workers, heavy_csv, wide_header  # noqa: E402


def test_a_storm_of_bulk_bodies_stops_at_its_deadline_and_a_query_still_answers(stack_environ, tmp_path) -> None:
    """On both stacks: the embedded default, and PostgreSQL 18 + pgvector + Redis with a
    ``ragspine worker`` process (tests/service/conftest.py)."""
    stack, environ = stack_environ
    environ = {**environ, "RAGSPINE_REQUEST_TIMEOUT": str(TIMEOUT)}
    worker = start_worker(environ, tmp_path / "worker.log") if stack == "production" else None
    try:
        storm(load_settings(environ))
    finally:
        if worker is not None:
            stop_worker(worker)


def storm(settings) -> None:
    with Server(settings) as base, httpx.Client(base_url=base, timeout=60) as http:
        key = http.post("/v1/admin/tenants", json={"tenant_id": "acme"}, headers=ADMIN).json()["api_key"]["key"]
        headers = {"Authorization": f"Bearer {key}"}
        assert http.post("/v1/libraries", json={"name": "kb"}, headers=headers).status_code == 201
        job = http.post("/v1/libraries/kb/documents", json={"doc_id": "d1", "text": "The gearbox warranty lasts 36 months."},
                        headers=headers).json()
        for _ in range(200):
            if http.get(f"/v1/jobs/{job['job_id']}", headers=headers).json()["state"] == "succeeded":
                break
            time.sleep(0.05)

        def query() -> tuple[int, float]:
            start = time.monotonic()
            r = http.post("/v1/retrieve", json={"query": "gearbox warranty"}, headers=headers)
            return r.status_code, time.monotonic() - start

        usual = statistics.median(query()[1] for _ in range(5))
        bodies = [{"library": "kb", "csv": heavy_csv(i)} for i in range(STORM)] + [{"library": "kb", "csv": wide_header()}] * 4
        encoded = [json.dumps(body).encode() for body in bodies]  # the client threads do no work in the storm
        answered: list[tuple[float, int]] = []

        def send(body: bytes) -> None:
            with httpx.Client(base_url=base, timeout=60) as own:
                r = own.post("/v1/facts", content=body, headers={**headers, "Content-Type": "application/json"})
            answered.append((time.monotonic(), r.status_code))

        monitor = Monitor()
        monitor.start()
        with ThreadPoolExecutor(len(encoded)) as pool:
            sent = [pool.submit(send, body) for body in encoded]
            during = []
            for _ in range(3):  # the storm's bodies have arrived: they run or wait for their turn
                time.sleep(0.4)
                during.append(query())
            for future in sent:
                future.result()
        time.sleep(1.2)
        monitor.done.set()
        monitor.join()

    statuses = sorted(s for _, s in answered)
    assert set(statuses) <= {422, 504}, statuses  # refused (nothing written) or past the deadline
    assert 504 in statuses, statuses  # the storm did outlast its deadline
    # each thread is idle within a second of its request's answer: at every sample, no more
    # threads are busy than requests unanswered a second earlier
    times = sorted(t for t, _ in answered)
    late = [(t, busy, len(times) - bisect.bisect_left(times, t - 1.0)) for t, busy in monitor.samples]
    assert all(busy <= open_then for _, busy, open_then in late), [x for x in late if x[1] > x[2]][:10]
    assert monitor.samples[-1][1] == 0 and busy_workers() == 0
    # the plain queries answered in their usual time, within their deadline (before: none of
    # the 40 threads was free until the storm's work ended, long after the deadline)
    assert all(status == 200 for status, _ in during), during
    took = statistics.median(t for _, t in during)
    assert took <= max(1.0, 10 * usual) and max(t for _, t in during) < TIMEOUT, (during, usual)
