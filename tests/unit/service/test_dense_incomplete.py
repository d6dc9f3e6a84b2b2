"""No query embeds a library, over HTTP: a library without vectors answers at once from BM25,
``dense_incomplete`` says how many chunks lack one (and the metric counts it), and
``POST /v1/libraries/{name}/embed`` computes them in a job."""

from __future__ import annotations

from tests.unit.service.conftest import doc, ingest, new_library, new_tenant, retrieve, wait_job


def test_missing_vectors_are_reported_then_embedded_by_a_job(client) -> None:
    headers = new_tenant(client)
    new_library(client, headers, "hb", retrieval_mode="economy")  # its jobs compute no vectors
    job = ingest(client, headers, "hb", doc("a", "Gearbox warranty is 36 months."), doc("b", "Repairs take five days."))
    assert job["state"] == "succeeded"
    body = retrieve(client, headers, "gearbox warranty", mode="hybrid").json()
    assert body["snippets"] and all(s["scores"]["vector"] == 0.0 for s in body["snippets"])
    assert body["dense_incomplete"] == [{"library": "hb", "missing": 2, "total": 2}]
    assert retrieve(client, headers, "gearbox warranty").json()["dense_incomplete"] == []  # economy: no dense leg
    metrics = client.get("/metrics").text
    assert 'ragspine_dense_incomplete_queries_total{endpoint="retrieve"} 1.0' in metrics

    r = client.post("/v1/libraries/hb/embed", headers=headers)
    assert r.status_code == 202, r.text
    done = wait_job(client, headers, r.json()["job_id"])
    assert done["state"] == "succeeded" and done["done"] == 2 and done["total"] == 2, done
    body = retrieve(client, headers, "gearbox warranty", mode="hybrid").json()
    assert body["dense_incomplete"] == [] and any(s["scores"]["vector"] != 0.0 for s in body["snippets"])
    again = wait_job(client, headers, client.post("/v1/libraries/hb/embed", headers=headers).json()["job_id"])
    assert again["state"] == "succeeded" and again["done"] == 0 and again["total"] == 0  # nothing left


def test_embedding_a_library_without_a_model_is_a_failed_job_saying_why(client) -> None:
    headers = new_tenant(client)
    new_library(client, headers, "plain", embedding_model="none")
    job = wait_job(client, headers, client.post("/v1/libraries/plain/embed", headers=headers).json()["job_id"])
    assert job["state"] == "failed" and "no embedding model" in job["error"]
    assert client.post("/v1/libraries/nope/embed", headers=headers).status_code == 404
