"""Work stops at the deadline: one bulk body past its deadline, a Dify query of megabytes,
the backstop's Dify shape, and the lanes (one bulk request at a time per process). The helpers
here — a uvicorn server in a thread, the busy-thread monitor, the hostile bodies — also serve
the storm on both stacks: tests/service/test_work_stops.py (41 bodies at once, a plain query
meanwhile, every worker thread idle within a second of its answer).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.helpers import needs

needs("httpx")

import httpx

needs("uvicorn")
import uvicorn

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
