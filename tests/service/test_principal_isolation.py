"""Document ACLs on every route that shows documents, snippets, jobs, counts or facts, on both stacks.

One tenant, three callers: ``alice`` (a key bound to her, group ``hr``), ``bob`` (bound, group
``board``) and ``plain`` (the tenant's key, no principal). Library ``lib`` holds an hr-only
document (``hr-pay``), a board-only one, an open one, and a RESTRICTED one both groups may read
by ACL. The ACLs are given over HTTP (``PUT /v1/admin/.../acl``). Checked:

* bob never sees ``hr-pay``'s text, id or counts anywhere: listings, counts, retrieval (every
  mode), Dify, the agent, the jobs, the facts read from it;
* what bob may not see is answered byte for byte like what does not exist: ``DELETE`` of
  ``hr-pay``, ``GET`` of its job, the metric read from it (the probes run before the resources
  exist and after, like the tenant matrix of ``test_isolation.py``);
* ``/v1/retrieve`` and Dify's ``/retrieval`` for a principal equal the same search over a second
  library holding only what that principal may read (snippets, order, scores — Dify's
  normalized score too);
* RESTRICTED stays hidden from everyone, whatever its ACL lets;
* a key acting as a user only reads: every write route answers it the same 403, whatever it names;
* an ACL set and then removed leaves every answer as it was (no ACL: byte-identical).
"""

from __future__ import annotations

import uuid
from typing import Any

from tests.service.conftest import Service, ok_job
from tests.service.test_isolation import answer as response_bytes
from tests.service.test_isolation import dify_body
from tests.unit.service.conftest import ADMIN, doc, ingest, new_library, new_tenant

HR_DOC, BOARD_DOC, OPEN_DOC, VAULT_DOC = "hr-pay", "board-minutes", "handbook", "vault"
HR_MARKER, VAULT_MARKER = "SALARYBAND", "TOPSECRETX"
TEXTS = {
    HR_DOC: f"Payroll {HR_MARKER}: the gearbox engineers' pay band rises four percent in May after the merger review.",
    BOARD_DOC: "Board minutes: the gearbox division merger closes in May; the pay review follows the merger.",
    OPEN_DOC: "Handbook: the gearbox warranty lasts 36 months; pay is reviewed every May.",
    VAULT_DOC: f"Vault {VAULT_MARKER}: the gearbox merger price and the pay band of the board.",
}
ACLS = {HR_DOC: {"allow": ["group:hr"]}, BOARD_DOC: {"allow": ["group:board"]}, VAULT_DOC: {"allow": ["group:hr", "group:board"]}}
FACT_VALUE = "777.25"
FACT = {"metric": "revenue", "entity": "Kestrel", "period": "2024Q3", "value": FACT_VALUE, "unit": "EUR_M",
        "source_doc_id": HR_DOC, "source_locator": "payroll, line 4", "valid_as_of": "2024-10-30"}
METRIC = {"metric": "revenue", "entity": "Kestrel", "period": "2024Q3"}
QUERIES = ["gearbox pay May", "merger board review", f"{HR_MARKER} pay band", "warranty months", f"{VAULT_MARKER} merger price"]


def _doc(doc_id: str) -> dict:
    return doc(doc_id, TEXTS[doc_id], metadata={"team": "ops"}, **({"sensitivity": "RESTRICTED"} if doc_id == VAULT_DOC else {}))


def _key(client: Any, **body: Any) -> dict[str, str]:
    r = client.post("/v1/admin/tenants/acme/keys", json=body, headers=ADMIN)
    assert r.status_code == 201, r.text
    return {"Authorization": f"Bearer {r.json()['key']}"}


def _people(client: Any) -> tuple[dict, dict, dict]:
    """``(alice, bob, plain)`` headers."""
    plain = new_tenant(client, "acme")
    for kind, name in (("users", "alice"), ("users", "bob"), ("groups", "hr"), ("groups", "board")):
        assert client.post(f"/v1/admin/tenants/acme/{kind}", json={"name": name}, headers=ADMIN).status_code == 201
    for group, user in (("hr", "alice"), ("board", "bob")):
        assert client.put(f"/v1/admin/tenants/acme/groups/{group}/members/{user}", headers=ADMIN).status_code == 201
    return _key(client, principal="alice"), _key(client, principal="bob"), plain


def _set_acl(client: Any, library: str, doc_id: str, acl: dict | None) -> dict:
    r = client.put(f"/v1/admin/tenants/acme/libraries/{library}/documents/{doc_id}/acl", json=acl or {}, headers=ADMIN)
    assert r.status_code == 200, r.text
    return r.json()


def _fill(service: Service, plain: dict, library: str, doc_ids: list[str]) -> dict[str, str]:
    """Ingest ``doc_ids`` (the board and open documents in one job, each other in its own); ``{doc_id: job_id}``."""
    client = service.client
    jobs: dict[str, str] = {}
    shared = [d for d in (BOARD_DOC, OPEN_DOC) if d in doc_ids]
    if shared:
        job = ok_job(service, ingest(client, plain, library, *[_doc(d) for d in shared]))
        jobs.update(dict.fromkeys(shared, job["job_id"]))
    for doc_id in (HR_DOC, VAULT_DOC):
        if doc_id in doc_ids:
            jobs[doc_id] = ok_job(service, ingest(client, plain, library, _doc(doc_id)))["job_id"]
    return jobs


def _snippets(response: Any) -> list[dict]:
    assert response.status_code == 200, response.text
    return [{k: v for k, v in s.items() if k != "library_id"} for s in response.json()["snippets"]]


def _records(response: Any, library: str) -> list[dict]:
    assert response.status_code == 200, response.text
    records = response.json()["records"]
    for record in records:
        record["metadata"] = {k: v for k, v in record["metadata"].items() if v != library}
    return records


def test_a_principal_sees_only_what_its_acls_let_it(service: Service) -> None:
    client = service.client
    alice, bob, plain = _people(client)
    new_library(client, plain, "lib", description="gearbox payroll merger board handbook")
    missing_job = uuid.uuid4().hex

    def probes(job_id: str) -> list[tuple[int, str, bytes]]:
        out = []
        for method, path, kwargs in (
            ("DELETE", f"/v1/libraries/lib/documents/{HR_DOC}", {}),
            ("GET", f"/v1/jobs/{job_id}", {}),
            ("GET", "/v1/metric", {"params": {**METRIC, "library": "lib"}}),
            ("POST", "/v1/metric", {"json": {**METRIC, "libraries": ["lib"]}}),
        ):
            r = client.request(method, path, headers=bob, **kwargs)
            assert r.status_code < 500, r.text
            out.append(response_bytes(r, job_id))
        return out

    before = probes(missing_job)  # hr-pay, its job and its fact do not exist yet
    jobs = _fill(service, plain, "lib", [HR_DOC, BOARD_DOC, OPEN_DOC, VAULT_DOC])
    for doc_id, acl in ACLS.items():
        assert _set_acl(client, "lib", doc_id, acl)["changed"] is True
    assert client.post("/v1/facts", json={"library": "lib", "facts": [FACT]}, headers=plain).status_code == 200

    after = probes(jobs[HR_DOC])
    assert after == before, "bob's view of hr-pay differs from a missing document's"
    assert [status for status, _, _ in after] == [403, 404, 200, 200]  # a user's key only reads: the same 403 before and after

    # listings and counts: each caller's own view
    def listing(key: dict) -> list[str]:
        return client.get("/v1/libraries/lib/documents", headers=key).json()["doc_ids"]

    assert sorted(listing(bob)) == sorted([BOARD_DOC, OPEN_DOC, VAULT_DOC])
    assert sorted(listing(alice)) == sorted([HR_DOC, OPEN_DOC, VAULT_DOC])
    assert listing(plain) == [OPEN_DOC]
    bob_jobs = client.get("/v1/jobs?limit=500", headers=bob).json()
    assert {j["job_id"] for j in bob_jobs} == {jobs[BOARD_DOC], jobs[VAULT_DOC]} and HR_DOC not in str(bob_jobs)
    assert {j["job_id"] for j in client.get("/v1/jobs?library=lib", headers=alice).json()} == {jobs[HR_DOC], jobs[VAULT_DOC]}
    assert {j["job_id"] for j in client.get("/v1/jobs", headers=plain).json()} == set(jobs.values())  # the ingest key follows every job
    assert client.get(f"/v1/jobs/{jobs[HR_DOC]}", headers=alice).json()["doc_ids"] == [HR_DOC]

    # a second library holding only what bob may read (no ACLs): bob's answers over lib are its answers
    new_library(client, plain, "bobs", description="gearbox payroll merger board handbook")
    _fill(service, plain, "bobs", [BOARD_DOC, OPEN_DOC, VAULT_DOC])
    new_library(client, plain, "opens", description="gearbox payroll merger board handbook")
    _fill(service, plain, "opens", [OPEN_DOC])
    for key, mirror in ((bob, "bobs"), (plain, "opens")):
        mine = client.get("/v1/libraries/lib", headers=key).json()
        theirs = client.get(f"/v1/libraries/{mirror}", headers=key).json()
        assert (mine["documents"], mine["chunks"]) == (theirs["documents"], theirs["chunks"]), (mine, theirs)
        listed = {lib["name"]: lib for lib in client.get("/v1/libraries", headers=key).json()}
        assert (listed["lib"]["documents"], listed["lib"]["chunks"]) == (theirs["documents"], theirs["chunks"])
        for query in QUERIES:
            for extra in ({}, {"mode": "economy"}, {"mode": "vector"}, {"filters": {"team": "ops"}, "top_k": 3}):
                mine_r = client.post("/v1/retrieve", json={"query": query, "libraries": ["lib"], **extra}, headers=key)
                theirs_r = client.post("/v1/retrieve", json={"query": query, "libraries": [mirror], **extra}, headers=key)
                assert _snippets(mine_r) == _snippets(theirs_r), (query, extra)
                assert HR_MARKER not in mine_r.text.replace(query, "") or key is alice
                assert VAULT_MARKER not in mine_r.text.replace(query, "")
            mine_d = client.post("/retrieval", json=dify_body("lib", query), headers=key)
            theirs_d = client.post("/retrieval", json=dify_body(mirror, query), headers=key)
            assert _records(mine_d, "lib") == _records(theirs_d, mirror), query
    assert client.get("/v1/libraries/lib", headers=alice).json()["documents"] == 3

    # bob and the plain key never see hr-pay's text, id or fact anywhere; RESTRICTED: no one
    for key in (bob, plain):
        for query in QUERIES:
            for r in (client.post("/v1/retrieve", json={"query": query, "top_k": 50}, headers=key),
                      client.post("/retrieval", json=dify_body("lib", query), headers=key),
                      client.post("/v1/answer", json={"question": f"Why did the {query} change?"}, headers=key)):
                assert r.status_code == 200, r.text
                body = r.text.replace(query, "")
                assert HR_MARKER not in body and HR_DOC not in body and VAULT_MARKER not in body, (query, r.text)
        for r in (client.get("/v1/metric", params=METRIC, headers=key), client.post("/v1/metric", json=METRIC, headers=key),
                  client.post("/v1/answer", json={"question": "What was Kestrel's revenue in Q3 2024?", "as_of": "2024-12-01"}, headers=key)):
            assert r.status_code == 200 and FACT_VALUE not in r.text and HR_DOC not in r.text, r.text
    # alice reads hr-pay (snippet, fact, answer), never the vault
    snippets = client.post("/v1/retrieve", json={"query": f"{HR_MARKER} pay band", "libraries": ["lib"]}, headers=alice).json()["snippets"]
    assert snippets[0]["doc_id"] == HR_DOC and all(s["doc_id"] != VAULT_DOC for s in snippets)
    found = client.post("/v1/metric", json=METRIC, headers=alice).json()
    assert (found["status"], found["value"]) == ("found", FACT_VALUE)
    agent = client.post("/v1/answer", json={"question": "What was Kestrel's revenue in Q3 2024?"}, headers=alice)
    assert FACT_VALUE in agent.text, agent.text
    narrative = client.post("/v1/answer", json={"question": f"Why does the {HR_MARKER} pay band rise?"}, headers=alice).json()
    assert HR_DOC in {s["doc_id"] for s in narrative["sources"]}
    # a key acting as a user only reads, whatever it names: nothing to overwrite, nothing learnt
    writes = (("DELETE", f"/v1/libraries/lib/documents/{HR_DOC}", {}), ("DELETE", "/v1/libraries/lib/documents/nothing-here", {}),
              ("POST", "/v1/libraries/lib/documents", {"json": {"doc_id": HR_DOC, "text": "overwritten"}}),
              ("POST", "/v1/libraries/lib/documents/batch", {"json": {"documents": [{"doc_id": HR_DOC, "text": "overwritten"}]}}),
              ("POST", "/v1/libraries/lib/documents/upload", {"files": {"file": ("hr-pay.txt", b"overwritten")}}),
              ("POST", "/v1/libraries/lib/embed", {}), ("POST", "/v1/facts", {"json": {"library": "lib", "facts": [FACT]}}),
              ("POST", "/v1/libraries", {"json": {"name": "mine"}}), ("DELETE", "/v1/libraries/lib", {}))
    for key in (alice, bob):
        answers = {(r.status_code, r.text) for r in (client.request(m, p, headers=key, **kw) for m, p, kw in writes)}
        assert len(answers) == 1 and next(iter(answers))[0] == 403, answers
    assert HR_DOC in client.get("/v1/libraries/lib/documents", headers=alice).json()["doc_ids"]
    assert client.delete(f"/v1/libraries/lib/documents/{HR_DOC}", headers=plain).status_code == 200  # the tenant's own key writes
    assert HR_DOC not in client.get("/v1/libraries/lib/documents", headers=alice).json()["doc_ids"]


def test_an_acl_set_then_removed_leaves_every_answer_as_it_was(service: Service) -> None:
    client = service.client
    alice, bob, plain = _people(client)
    new_library(client, plain, "lib", description="gearbox payroll merger board handbook")
    _fill(service, plain, "lib", [HR_DOC, BOARD_DOC, OPEN_DOC])
    assert client.post("/v1/facts", json={"library": "lib", "facts": [FACT]}, headers=plain).status_code == 200

    def answers() -> list[tuple[int, bytes]]:
        out = []
        for key in (alice, bob, plain):
            for query in QUERIES[:3]:
                for r in (client.post("/v1/retrieve", json={"query": query}, headers=key),
                          client.post("/retrieval", json=dify_body("lib", query), headers=key),
                          client.post("/v1/answer", json={"question": f"Why did the {query} change?"}, headers=key)):
                    out.append((r.status_code, r.content))
            for r in (client.get("/v1/libraries", headers=key), client.get("/v1/libraries/lib/documents", headers=key),
                      client.post("/v1/metric", json=METRIC, headers=key)):
                out.append((r.status_code, r.content))
        return out

    plain_answers = answers()
    # without ACLs, a principal's answers are the plain key's, byte for byte
    per_key = len(plain_answers) // 3
    assert plain_answers[:per_key] == plain_answers[per_key:2 * per_key] == plain_answers[2 * per_key:]
    _set_acl(client, "lib", HR_DOC, {"allow": ["group:hr"], "deny": ["user:bob"]})
    assert answers() != plain_answers
    opened = _set_acl(client, "lib", HR_DOC, None)
    assert opened["open"] is True and opened["acl"] == {"allow": [], "deny": []}
    assert answers() == plain_answers
