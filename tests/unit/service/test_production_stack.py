"""The same API on the production stack: PostgreSQL + pgvector, the Redis embedding cache;
deleting a library empties every store of it."""

from __future__ import annotations

import redis
import sqlalchemy as sa
from fastapi.testclient import TestClient

from ragspine.service.app import create_app
from tests.unit.service.conftest import (
    ADMIN,
    doc,
    ingest,
    make_settings,
    new_library,
    new_tenant,
    retrieve,
)


def test_postgres_pgvector_redis(tmp_path, pg_schema, redis_namespace) -> None:
    url, schema = pg_schema
    redis_url, prefix = redis_namespace
    settings = make_settings(
        tmp_path, RAGSPINE_CHUNK_STORE=url, RAGSPINE_PG_SCHEMA=schema, RAGSPINE_VECTOR_STORE="pgvector",
        RAGSPINE_EMBEDDING_CACHE=redis_url, RAGSPINE_REDIS_PREFIX=prefix, RAGSPINE_JOB_QUEUE="inprocess",
    )
    with TestClient(create_app(settings)) as client:
        acme, globex = new_tenant(client, "acme"), new_tenant(client, "globex")
        new_library(client, acme, "hb")
        new_library(client, globex, "hb")  # same name, another tenant
        job = ingest(client, acme, "hb", doc("d1", "Gearbox warranty is 36 months.", metadata={"year": 2024}), doc("d2", "Repairs take five days."))
        assert job["state"] == "succeeded"
        ingest(client, globex, "hb", doc("d1", "Globex ships turbines."))
        snippets = retrieve(client, acme, "gearbox warranty", filters={"year": {"gte": 2024}}).json()["snippets"]
        assert [s["doc_id"] for s in snippets] == ["d1"] and snippets[0]["scores"]["vector"] > 0
        assert all(s["library_id"] == "hb" for s in retrieve(client, globex, "turbines gearbox").json()["snippets"])
        assert client.get("/readyz", headers=ADMIN).json()["checks"] == {
            "chunk store": "ok", "vector store": "ok", "embedding cache": "ok", "service store": "ok", "job queue (inprocess)": "ok",
        }

        engine = client.app.state.service.stack.db.engine
        cache = redis.Redis.from_url(redis_url)

        def counts(library_id: str) -> tuple[int, int]:
            with engine.connect() as conn:
                table = conn.execute(sa.text("SELECT table_name FROM ragspine_vector_space")).scalar_one()
                vectors = conn.execute(sa.text(f'SELECT COUNT(*) FROM "{table}" WHERE library_id = :l'), {"l": library_id}).scalar_one()
                chunks = conn.execute(sa.text("SELECT COUNT(*) FROM ragspine_chunk WHERE library_id = :l"), {"l": library_id}).scalar_one()
            return chunks, vectors

        assert counts("acme/hb") == (2, 2) and counts("globex/hb") == (1, 1)
        cached = len(list(cache.scan_iter(match=f"{prefix}emb:*")))
        assert cached == 3
        assert client.delete("/v1/libraries/hb", headers=acme).status_code == 200
        assert counts("acme/hb") == (0, 0) and counts("globex/hb") == (1, 1)
        assert len(list(cache.scan_iter(match=f"{prefix}emb:*"))) == 1  # only globex's entry is left
        cache.close()
        assert retrieve(client, globex, "turbines").json()["snippets"][0]["doc_id"] == "d1"
        # a library's ranking is kept in PostgreSQL (migration 0009) and applied
        made = new_library(client, globex, "ranked", rerank_depth=20, postprocessor="lost_in_middle", fusion_weights="vector=0.5")
        shown = client.get("/v1/libraries/ranked", headers=globex).json()
        assert [shown[k] for k in ("reranker", "rerank_depth", "postprocessor", "fusion_weights")] == ["none", 20, "lost_in_middle", "vector=0.5"]
        assert made["fusion_weights"] == "vector=0.5"
        ingest(client, globex, "ranked", *(doc(f"r{i}", "Turbine blades. " + "Other words. " * i) for i in range(1, 4)))
        ranked = [s["doc_id"] for s in retrieve(client, globex, "turbine blades", libraries=["ranked"], top_k=3).json()["snippets"]]
        plain = [s["doc_id"] for s in retrieve(client, globex, "turbine blades", libraries=["ranked"], top_k=3, postprocessor="none").json()["snippets"]]
        assert ranked == [plain[0], plain[2], plain[1]]  # lost_in_middle: ranks 1, 3, 2
        # a library's query-time reasoning and RAPTOR switch are kept in PostgreSQL (migration 0012) and applied
        made = new_library(client, globex, "reasoned", corrective=True, query_fanout=1, raptor=True)
        shown = client.get("/v1/libraries/reasoned", headers=globex).json()
        assert [shown[k] for k in ("query_transform", "corrective", "query_fanout", "raptor")] == [None, True, 1, True] == [
            made[k] for k in ("query_transform", "corrective", "query_fanout", "raptor")]
        ingest(client, globex, "reasoned", doc("t1", "Turbine blades are inspected every spring."))
        r = retrieve(client, globex, "turbine blades", libraries=["reasoned"])
        assert r.status_code == 400 and "POST /v1/libraries/reasoned/raptor" in r.json()["detail"]  # its RAPTOR is on: a tree first
        assert client.post("/v1/libraries/reasoned/raptor", headers=globex).status_code == 200
        kept = retrieve(client, globex, "turbine blades", libraries=["reasoned"]).json()
        assert kept["snippets"] and [s["step"] for s in kept["trace"]] == ["search", "grade"]  # its corrective loop ran
        refused = retrieve(client, globex, "quantum chromodynamics lattice", libraries=["reasoned"]).json()
        assert refused["snippets"] == [] and refused["refusal"]
        assert "trace" not in retrieve(client, globex, "turbine blades", libraries=["ranked"]).json()  # not another library's
