"""Work stops at the deadline, and bulk requests leave the server to plain queries.

Measured before (issue 25): 41 small ``POST /v1/facts`` CSV bodies all got 504, a normal query
sent during them waited 37.3 s and got 504 too, and 40 threads were still running afterwards:
the deadline answered but did not stop the work, and the bulk requests held every thread of
the pool (40) and shared one GIL with the query.

Here a real server (uvicorn on loopback, in a thread of this process) gets 41 hostile bodies
at once — 10,000 fact rows each (the most a request may send), and the 73 KB headers of the
attack — while a monitor samples which of the server's worker threads are busy in RAGSpine
code. Every thread is idle within a second of its request's answer (504 or not), and a plain
``/v1/retrieve`` sent in the middle of the storm answers 200 within its usual time.
"""

from __future__ import annotations

import bisect
import json
import os
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

httpx = pytest.importorskip("httpx")
uvicorn = pytest.importorskip("uvicorn", reason="the [server] extra is not installed")

from ragspine.service.app import create_app  # noqa: E402
from tests.backends import free_port  # noqa: E402
from tests.unit.service.conftest import ADMIN, make_settings  # noqa: E402

RAGSPINE_DIR = str(Path(__import__("ragspine").__file__).parent) + os.sep
TIMEOUT = 2.0  # RAGSPINE_REQUEST_TIMEOUT of the server under test
STORM = 41  # the attack's count: one more than the thread pool's 40 tokens
HEADER = "metric,entity,period,value,source_doc_id,source_locator,valid_as_of"


def heavy_csv(seed: int) -> str:
    """10,000 rows (MAX_FACT_ROWS) that parse and check slowly and are all refused (no write)."""
    rows = (f"revenue,Kestrel,{2000 + i % 40}Q{i % 4 + 1},{seed}.{i},doc{i % 97},{'p' * 40}{i},2024-10-3{i % 2}" for i in range(10_000))
    return HEADER + "\n" + "\n".join(rows).replace("Kestrel", "Kestrell")  # an entity no glossary knows: every row a 422


def wide_header() -> str:
    """The attack's body: one header line of ~73 KB (the columns are capped now: a quick 422)."""
    return ",".join(f"column{i}" for i in range(7_300)) + "\nx\n"


class Server:
    """``create_app(settings)`` served by uvicorn on 127.0.0.1 in a daemon thread."""

    def __init__(self, settings) -> None:
        self.port = free_port()
        self.server = uvicorn.Server(uvicorn.Config(create_app(settings), host="127.0.0.1", port=self.port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, name="uvicorn-under-test", daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert self.thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.02)
        return f"http://127.0.0.1:{self.port}"

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(15)


def busy_workers() -> int:
    """The server's pool threads now running RAGSpine code (an idle one waits in anyio's queue)."""
    frames = sys._current_frames()
    busy = 0
    for thread in threading.enumerate():
        if thread.name != "AnyIO worker thread" or thread.ident not in frames:
            continue
        frame = frames[thread.ident]
        while frame is not None:
            if frame.f_code.co_filename.startswith(RAGSPINE_DIR):
                busy += 1
                break
            frame = frame.f_back
    return busy


class Monitor(threading.Thread):
    """Samples :func:`busy_workers` every 10 ms: ``[(time, busy)]``."""

    def __init__(self) -> None:
        super().__init__(name="busy-monitor", daemon=True)
        self.samples: list[tuple[float, int]] = []
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            self.samples.append((time.monotonic(), busy_workers()))
            time.sleep(0.01)


def test_a_storm_of_bulk_bodies_stops_at_its_deadline_and_a_query_still_answers(tmp_path) -> None:
    settings = make_settings(tmp_path, RAGSPINE_REQUEST_TIMEOUT=str(TIMEOUT), RAGSPINE_JOB_QUEUE="inprocess")
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


def test_one_bulk_body_past_its_deadline_stops_at_the_deadline(tmp_path) -> None:
    """Alone, a body whose rows take longer than the deadline is a 504 at the deadline, naming
    the rows it was reading (before: at the backstop, ``grace`` seconds later, its thread still
    parsing), and its thread is idle at once."""
    settings = make_settings(tmp_path, RAGSPINE_REQUEST_TIMEOUT="0.2", RAGSPINE_JOB_QUEUE="inprocess")
    with Server(settings) as base, httpx.Client(base_url=base, timeout=60) as http:
        key = http.post("/v1/admin/tenants", json={"tenant_id": "acme"}, headers=ADMIN).json()["api_key"]["key"]
        headers = {"Authorization": f"Bearer {key}"}
        http.post("/v1/libraries", json={"name": "kb"}, headers=headers)
        start = time.monotonic()
        r = http.post("/v1/facts", json={"library": "kb", "csv": heavy_csv(0)}, headers=headers)
        took = time.monotonic() - start
        assert r.status_code == 504 and "rows ran past its 0.2 s deadline" in r.json()["detail"], r.text[:300]  # stopped reading the rows
        assert took < 1.5, took  # the backstop answers at 0.2 + 2 s
        idle_by = time.monotonic() + 0.5
        while busy_workers() and time.monotonic() < idle_by:
            time.sleep(0.01)
        assert busy_workers() == 0


def test_a_huge_dify_query_stops_at_the_deadline(tmp_path) -> None:
    """Dify's ``query`` has no length limit: a query of 2 MB is tokenized and scored in loops
    that check the deadline (before: tokenized and scored to the end, 504 at the backstop, in
    /v1's shape where Dify reads ``error_code``, and the thread busy seconds after it)."""
    settings = make_settings(tmp_path, RAGSPINE_REQUEST_TIMEOUT="0.3", RAGSPINE_JOB_QUEUE="inprocess")
    words = ("revenue", "kestrel", "q3", "2024", "gearbox", "warranty", "months", "营收", "第三季度")
    query = " ".join(words[i % len(words)] for i in range(300_000))[:2_000_000]
    with Server(settings) as base, httpx.Client(base_url=base, timeout=60) as http:
        key = http.post("/v1/admin/tenants", json={"tenant_id": "acme"}, headers=ADMIN).json()["api_key"]["key"]
        headers = {"Authorization": f"Bearer {key}"}
        http.post("/v1/libraries", json={"name": "kb"}, headers=headers)
        start = time.monotonic()
        r = http.post("/retrieval", json={"knowledge_id": "kb", "query": query}, headers=headers)
        took = time.monotonic() - start
        assert r.status_code == 504 and r.json()["error_code"] == 5004 and "0.3 s deadline" in r.json()["error_msg"], r.text[:300]
        assert took < 1.5, took  # the backstop answers at 0.3 + 2 s
        idle_by = time.monotonic() + 0.5
        while busy_workers() and time.monotonic() < idle_by:
            time.sleep(0.01)
        assert busy_workers() == 0


def test_the_backstop_504_of_dify_is_in_difys_shape() -> None:
    import asyncio

    from ragspine.service.limits import DeadlineMiddleware

    async def hung(scope, receive, send) -> None:  # work that never checks the deadline
        await asyncio.sleep(5)

    sent: list[dict] = []

    async def send(message) -> None:
        sent.append(message)

    async def receive() -> dict:
        return {"type": "http.request", "body": b"", "more_body": False}

    for path, shape in (("/retrieval", {"error_code", "error_msg"}), ("/v1/retrieve", {"detail"})):
        sent.clear()
        asyncio.run(DeadlineMiddleware(hung, timeout=0.05, grace=0.05)({"type": "http", "path": path, "headers": []}, receive, send))
        assert sent[0]["status"] == 504 and set(json.loads(sent[1]["body"])) == shape, (path, sent)


@pytest.mark.parametrize(("module", "function", "path", "body"), [
    ("facts", "_ingest", "/v1/facts", {"library": "kb", "csv": HEADER}),
    ("raptor", "_build_tree", "/v1/libraries/kb/raptor", {}),
])
def test_a_lane_runs_one_request_at_a_time_and_the_others_wait_without_a_thread(tmp_path, monkeypatch, module, function, path, body) -> None:
    from concurrent.futures import ThreadPoolExecutor as Pool

    from fastapi.responses import JSONResponse
    from fastapi.testclient import TestClient

    import ragspine.service.routes.facts
    import ragspine.service.routes.raptor
    from tests.unit.service.conftest import new_library, new_tenant

    routes = getattr(ragspine.service.routes, module)
    running, most = [0], [0]
    lock = threading.Lock()

    def slow(*args):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.15)
        with lock:
            running[0] -= 1
        return JSONResponse({"ok": True})

    monkeypatch.setattr(routes, function, slow)
    with TestClient(create_app(make_settings(tmp_path, RAGSPINE_REQUEST_TIMEOUT="0.5"))) as client:
        headers = new_tenant(client)
        new_library(client, headers, "kb")
        with Pool(6) as pool:
            responses = list(pool.map(lambda _: client.post(path, json=body, headers=headers), range(6)))
    statuses = sorted(r.status_code for r in responses)
    assert most[0] == 1, most  # one at a time
    assert 200 in statuses and 504 in statuses, statuses  # 6 x 0.15 s do not fit in 0.5 s: the last wait past their deadline
    waited = [r.json()["detail"] for r in responses if r.status_code == 504]
    assert all("waited past the request's deadline for one of 1 turns" in d for d in waited), waited
