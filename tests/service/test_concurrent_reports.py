"""Concurrent requests on one cached pipeline: each response reports its own search.

``/v1/retrieve`` runs in the server's thread pool, and every request of a library in one mode
searches the one pipeline the stack caches for it. One library here has vectors for its
``north`` documents (embedded by a job) and none for its ``south`` ones (ingested afterwards
by an economy library's job, which computes none). Four threads, released together by a
barrier, ask it in hybrid mode again and again — two filtered to ``north`` (every dense
candidate has a vector), two to ``south`` (none has) — with the interpreter switching threads
as often as it can. Each response's ``dense_incomplete`` must be its own query's, never that of
whichever search ran the shared dense leg last, and the metric counts exactly the responses
that said so.
"""

from __future__ import annotations

import re
import sys
import threading
from typing import Any

from tests.service.conftest import Service, ok_job
from tests.unit.service.conftest import doc, ingest, new_library, new_tenant, wait_job

ROUNDS = 150  # requests per thread
THREADS_PER_REGION = 2  # before the fix, on the embedded stack: 4 threads x 150 caught the race in 13 runs of 13, 2 threads in 2 of 5
QUERY = "depot gearbox report"
EXPECTED = {"north": [], "south": [{"library": "mixed", "missing": 2, "total": 2}]}
METRIC = re.compile(r'^ragspine_dense_incomplete_queries_total\{endpoint="retrieve"\} (\S+)$', re.M)


def incomplete_count(service: Service) -> float:
    found = METRIC.search(service.client.get("/metrics").text)
    return float(found.group(1)) if found else 0.0


def test_concurrent_requests_on_one_pipeline_each_report_their_own_dense_incomplete(service: Service) -> None:
    client = service.client
    headers = new_tenant(client)
    new_library(client, headers, "mixed", retrieval_mode="economy")  # its ingest jobs compute no vectors
    north = [doc(f"north-{n}", f"North depot gearbox report {n}.", metadata={"region": "north"}) for n in range(2)]
    south = [doc(f"south-{n}", f"South depot gearbox report {n}.", metadata={"region": "south"}) for n in range(2)]
    ok_job(service, ingest(client, headers, "mixed", *north))
    r = client.post("/v1/libraries/mixed/embed", headers=headers)
    assert r.status_code == 202, r.text
    ok_job(service, wait_job(client, headers, r.json()["job_id"], timeout=60))
    ok_job(service, ingest(client, headers, "mixed", *south))  # no vectors for these

    def ask(region: str) -> dict[str, Any]:
        body = {"query": QUERY, "libraries": ["mixed"], "mode": "hybrid", "filters": {"region": region}}
        r = client.post("/v1/retrieve", json=body, headers=headers)
        assert r.status_code == 200, r.text
        return dict(r.json())

    for region, expected in EXPECTED.items():  # one at a time, first: the premise
        answer = ask(region)
        assert {s["doc_id"] for s in answer["snippets"]} == {f"{region}-0", f"{region}-1"}
        assert answer["dense_incomplete"] == expected, region
    before = incomplete_count(service)

    regions = [region for region in EXPECTED for _ in range(THREADS_PER_REGION)]
    barrier = threading.Barrier(len(regions))
    reports: list[tuple[str, int, list[dict[str, Any]]]] = []  # appended to by every thread (list.append is atomic)

    def asker(region: str) -> None:
        barrier.wait(10)
        for i in range(ROUNDS):
            reports.append((region, i, ask(region)["dense_incomplete"]))

    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # interleave the requests as finely as the interpreter can
    try:
        threads = [threading.Thread(target=asker, args=(region,), name=region) for region in regions]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
    finally:
        sys.setswitchinterval(switch)
    assert not any(t.is_alive() for t in threads) and len(reports) == len(regions) * ROUNDS
    wrong = [f"{region} #{i}: {found}" for region, i, found in reports if found != EXPECTED[region]]
    assert not wrong, f"{len(wrong)} of {len(reports)} responses reported another request's dense coverage: {wrong[:5]}"
    assert incomplete_count(service) == before + regions.count("south") * ROUNDS  # the metric: exactly the south responses
