"""Counts a principal must not learn from, on both stacks: a RAPTOR tree's totals, an embed job's,
and a failed upload's job (issue 29).

For bob (group ``board``), library ``lib`` holding hr-only documents must answer like ``mine``,
the same library without them: the tree's ``nodes``, ``chunks``, ``levels`` and ``state``; no
embed job (its counts span every document); a failed upload of a new hr-only document is the
404 of an unknown job, as is a superseded one.
"""

from __future__ import annotations

import uuid
from typing import Any

from tests.service.conftest import Service, ok_job
from tests.service.test_isolation import answer as response_bytes
from tests.service.test_principal_isolation import _people, _set_acl
from tests.unit.service.conftest import doc, ingest, new_library, wait_job

OPEN = [doc("g1", "Gearbox supply delays slowed the northern plant. Gearbox castings were late."),
        doc("g2", "Gearbox supply delays hit the south plant too. Castings for gearbox lines arrived late."),
        doc("g3", "The gearbox supplier missed castings deadlines and supply delays grew."),
        doc("w1", "Warranty claims rose in 2023. Warranty service handled claims within five days.")]
HIDDEN = [doc("p1", "Payroll band salary review rises four percent in May for engineers."),
          doc("p2", "Payroll band salary review rises four percent in May for the engineers."),
          doc("p3", "Payroll salary band review rose four percent in May for engineers.")]
TREE_FIELDS = ("state", "nodes", "chunks", "levels", "model", "summarizer")


def _tree(client: Any, library: str, key: dict) -> dict:
    r = client.get(f"/v1/libraries/{library}/raptor", headers=key)
    assert r.status_code == 200, r.text
    return {k: r.json()[k] for k in TREE_FIELDS}


def test_a_raptor_trees_totals_are_those_of_the_readable_documents(service: Service) -> None:
    client = service.client
    alice, bob, plain = _people(client)
    for name in ("lib", "mine"):
        new_library(client, plain, name)
    ok_job(service, ingest(client, plain, "lib", *OPEN, *HIDDEN))
    for d in HIDDEN:
        _set_acl(client, "lib", d["doc_id"], {"allow": ["group:hr"]})
    ok_job(service, ingest(client, plain, "mine", *OPEN))
    for name in ("lib", "mine"):
        assert client.post(f"/v1/libraries/{name}/raptor", headers=plain).status_code == 200
    rebuilt = client.post("/v1/libraries/lib/raptor", json={"force": True}, headers=plain).json()  # the builder's answer: its view
    assert {k: rebuilt[k] for k in TREE_FIELDS} == _tree(client, "mine", plain)
    for key in (bob, plain):  # neither reads the payroll documents
        assert _tree(client, "lib", key) == _tree(client, "mine", key)
    whole = _tree(client, "lib", alice)  # alice reads them all: the whole tree
    assert whole["chunks"] == len(OPEN) + len(HIDDEN) and whole["nodes"] > _tree(client, "lib", bob)["nodes"] >= 1, whole
    # a hidden document changes: bob's tree stays current, as mine's does; a readable one: both stale
    ok_job(service, ingest(client, plain, "lib", doc("p4", "Payroll band salary review for the board.", acl="group:hr")))
    ok_job(service, ingest(client, plain, "lib", {**HIDDEN[0], "text": "Payroll band salary review was postponed.", "acl": "group:hr"}))
    assert _tree(client, "lib", alice)["state"] == "stale"
    assert _tree(client, "lib", bob) == _tree(client, "mine", bob) and _tree(client, "lib", bob)["state"] == "current"
    for name in ("lib", "mine"):
        ok_job(service, ingest(client, plain, name, {**OPEN[3], "text": "Warranty claims fell in 2024."}))
    assert _tree(client, "lib", bob) == _tree(client, "mine", bob) and _tree(client, "lib", bob)["state"] == "stale"


def test_a_principal_is_shown_no_embed_job(service: Service) -> None:
    client = service.client
    alice, bob, plain = _people(client)
    new_library(client, plain, "lib")
    ok_job(service, ingest(client, plain, "lib", *OPEN, *HIDDEN))
    for d in HIDDEN:
        _set_acl(client, "lib", d["doc_id"], {"allow": ["group:hr"]})
    missing = uuid.uuid4().hex
    before = response_bytes(client.get(f"/v1/jobs/{missing}", headers=bob), missing)
    r = client.post("/v1/libraries/lib/embed", headers=plain)
    assert r.status_code == 202, r.text
    embed = wait_job(client, plain, r.json()["job_id"])
    assert embed["state"] == "succeeded", embed  # the ingest key follows it (its counts span every document)
    for key in (alice, bob):
        assert response_bytes(client.get(f"/v1/jobs/{embed['job_id']}", headers=key), embed["job_id"]) == before
        assert embed["job_id"] not in client.get("/v1/jobs?limit=500", headers=key).text


def test_a_failed_upload_of_a_new_hidden_document_stays_an_unknown_job(service: Service, monkeypatch: Any) -> None:
    """Each way a job ends without succeeding (superseded, failed by its worker, failed by the
    sweep) keeps the ACL its new document was uploaded with: bob still gets the unknown-job 404."""
    client = service.client
    alice, bob, plain = _people(client)
    new_library(client, plain, "lib")
    ok_job(service, ingest(client, plain, "lib", *OPEN))
    missing = uuid.uuid4().hex
    before = response_bytes(client.get(f"/v1/jobs/{missing}", headers=bob), missing)
    held: list[str] = []
    monkeypatch.setattr(client.app.state.service.queue, "submit", held.append)  # the jobs wait: no worker runs them
    store = client.app.state.service.store

    def upload(doc_id: str) -> str:
        r = client.post("/v1/libraries/lib/documents", json=doc(doc_id, "Payroll band for 2025 rises.", acl="group:hr"), headers=plain)
        assert r.status_code == 202, r.text
        return str(r.json()["job_id"])

    superseded = upload("pay-2025")
    by_worker = upload("pay-2025")  # supersedes the first
    store.claim_job(by_worker, "test")
    store.finish_job(by_worker, "failed", error="document 'pay-2025' failed: boom; it keeps its previous version", done=0, chunks=0)
    by_sweep = upload("pay-2026")
    store.claim_job(by_sweep, "test")
    assert store.fail_running(by_sweep, "its worker stopped")
    batch = client.post("/v1/libraries/lib/documents/batch", headers=plain, json={"documents": [
        doc("pay-2027", "Payroll band for 2027.", acl="group:hr"), doc("notes", "Open notes.")]}).json()["job_id"]
    store.claim_job(batch, "test")
    store.finish_job(batch, "failed", error="the job failed: boom", done=0, chunks=0)
    assert held == [superseded, by_worker, by_sweep, batch]
    for job_id in held:
        assert client.get(f"/v1/jobs/{job_id}", headers=plain).json()["state"] == "failed"  # the ingest key follows every job
        assert response_bytes(client.get(f"/v1/jobs/{job_id}", headers=bob), job_id) == before, job_id
        shown = client.get(f"/v1/jobs/{job_id}", headers=alice)  # alice may read them
        assert shown.status_code == 200 and shown.json()["state"] == "failed", shown.text
    listed = client.get("/v1/jobs?limit=500", headers=bob).text
    assert not any(job_id in listed for job_id in held) and "pay-20" not in listed
    assert {j["job_id"] for j in client.get("/v1/jobs?limit=500", headers=alice).json()} >= set(held)
