"""Tenant isolation on every endpoint, on both stacks.

Tenant A (``acme``) probes tenant B's (``globex``) library ``vault``, its document ``plans``
and its ingest job through every route of the app:

* routes that name a resource answer A exactly as they answer for a resource that does not
  exist — the same status and the same bytes (the probes run once before B's resources
  exist and once after, and the answers are compared);
* listings (libraries, jobs, documents, retrieval over "all my libraries") never show
  anything of B's;
* Dify's ``/retrieval`` with B's ``knowledge_id`` answers 400 ``error_code`` 2001, like an
  unknown id;
* the admin routes refuse a tenant key (401), and the admin token is not a tenant key;
* A may create a library with B's name: it is A's own, and nothing A does to it touches B's.

The matrix is checked against the app: every (method, path) the app serves must be probed
here or be in ``PUBLIC`` (with the reason it holds no tenant data), so a new route fails this
test until someone decides how it is isolated.
"""

from __future__ import annotations

import uuid
from typing import Any

from tests.service.conftest import ADMIN_TOKEN, Service, ok_job, wait_jobs_idle
from tests.unit.service.conftest import (
    ADMIN,
    doc,
    ingest,
    new_library,
    new_tenant,
    retrieve,
)

#: Routes that hold no tenant data, and why they need no isolation probe.
PUBLIC: dict[tuple[str, str], str] = {
    ("GET", "/healthz"): "liveness: the version only",
    ("GET", "/readyz"): "ready / not ready (each store's check only with the admin token), no tenant data",
    ("GET", "/metrics"): "Prometheus: labels are route templates, modes and job states, never names",
    ("GET", "/openapi.json"): "the API description",
    ("GET", "/docs"): "the API description (Swagger UI)",
    ("GET", "/docs/oauth2-redirect"): "Swagger UI's OAuth helper page",
    ("GET", "/redoc"): "the API description (ReDoc)",
}

B_LIB, B_DOC, B_MARKER = "vault", "plans", "KESTREL"
B_TEXT = f"Globex board minutes: the {B_MARKER} merger closes in May; gearbox division is sold."
A_TEXT = "Acme handbook: the gearbox warranty lasts 36 months."
#: B's fact: a number only B's library holds (``/v1/metric`` and ``/v1/answer`` must never show it to A).
B_VALUE = "777.25"
B_FACT = {"metric": "revenue", "entity": "Kestrel", "period": "2024Q3", "value": B_VALUE, "unit": "EUR_M",
          "source_doc_id": B_DOC, "source_locator": "minutes, item 4", "valid_as_of": "2024-10-30"}


def app_routes(app: Any) -> set[tuple[str, str]]:
    """Every (method, path template) the app serves (HEAD, implied by GET, left out)."""
    try:  # FastAPI >= 0.13x keeps included routers as lazily expanded entries
        from fastapi.routing import iter_route_contexts

        routes = list(iter_route_contexts(app.routes))
    except ImportError:
        routes = list(app.routes)
    out = set()
    for route in routes:
        methods, path = getattr(route, "methods", None), getattr(route, "path_format", None)
        assert methods and path, f"a route this matrix cannot classify (a mount or a websocket?): {route!r}"
        out |= {(m, path) for m in methods if m != "HEAD"}
    return out


def schema_routes(app: Any) -> set[tuple[str, str]]:
    return {(method.upper(), path) for path, ops in app.openapi()["paths"].items() for method in ops}


# -- the probes ----------------------------------------------------------------------------
class Matrix:
    """Probes registered per route; ``covered`` is what the route check compares with the app."""

    def __init__(self) -> None:
        self.hidden: list[tuple[str, str, str, dict[str, Any]]] = []  # method, route, path, request kwargs
        self.covered: set[tuple[str, str]] = set()

    def hide(self, method: str, route: str, path: str, **kwargs: Any) -> None:
        """A's request naming B's resource: the same answer as for a missing one."""
        self.hidden.append((method, route, path, kwargs))
        self.covered.add((method, route))

    def cover(self, method: str, route: str) -> None:
        self.covered.add((method, route))


def dify_body(knowledge_id: str, query: str = "merger gearbox") -> dict:
    return {"knowledge_id": knowledge_id, "query": query, "retrieval_setting": {"top_k": 10, "score_threshold": 0.0}}


def build_matrix() -> Matrix:
    m = Matrix()
    lib = "/v1/libraries/{name}"
    m.hide("GET", lib, f"/v1/libraries/{B_LIB}")
    m.hide("DELETE", lib, f"/v1/libraries/{B_LIB}")
    m.hide("POST", lib + "/documents", f"/v1/libraries/{B_LIB}/documents", json=doc(B_DOC, "A overwrites B's document"))
    m.hide("POST", lib + "/documents/batch", f"/v1/libraries/{B_LIB}/documents/batch", json={"documents": [doc("x", "A writes into B's library")]})
    m.hide("POST", lib + "/documents/upload", f"/v1/libraries/{B_LIB}/documents/upload",
           files={"file": ("x.md", b"# A writes\n\ninto B's library", "text/markdown")})
    m.hide("GET", lib + "/documents", f"/v1/libraries/{B_LIB}/documents")
    m.hide("POST", lib + "/embed", f"/v1/libraries/{B_LIB}/embed")
    m.hide("POST", lib + "/raptor", f"/v1/libraries/{B_LIB}/raptor")
    m.hide("GET", lib + "/raptor", f"/v1/libraries/{B_LIB}/raptor")
    m.hide("DELETE", lib + "/documents/{doc_id}", f"/v1/libraries/{B_LIB}/documents/{B_DOC}")
    m.hide("GET", "/v1/jobs/{job_id}", "/v1/jobs/{job}")
    m.hide("GET", "/v1/jobs", f"/v1/jobs?library={B_LIB}")
    # the pipeline picture of B's library: a 404 like a missing one (the server's own picture holds no tenant data)
    m.hide("GET", "/v1/workflow/preview", f"/v1/workflow/preview?library={B_LIB}&format=yaml")
    m.hide("POST", "/v1/retrieve", "/v1/retrieve", json={"query": "merger", "libraries": [B_LIB]})
    m.hide("POST", "/v1/retrieve", "/v1/retrieve", json={"query": "merger", "libraries": ["mine", B_LIB]})
    m.hide("POST", "/v1/retrieve", "/v1/retrieve", json={"query": "merger", "libraries": [B_LIB], "filters": {"year": 2024}, "retry_without_filters": True})
    m.hide("POST", "/v1/retrieve", "/v1/retrieve", json={"query": "merger", "libraries": [B_LIB], "raptor": True})
    m.hide("POST", "/retrieval", "/retrieval", json=dify_body(B_LIB))
    m.hide("POST", "/v1/facts", "/v1/facts", json={"library": B_LIB, "facts": [B_FACT]})
    m.hide("GET", "/v1/metric", f"/v1/metric?metric=revenue&entity=Kestrel&period=2024Q3&library={B_LIB}")
    m.hide("GET", "/v1/metric", f"/v1/metric?metric=revenue&entity=Kestrel&period=2024Q3&library=mine&library={B_LIB}")
    m.hide("POST", "/v1/metric", "/v1/metric", json={"metric": "revenue", "entity": "Kestrel", "period": "2024Q3", "libraries": [B_LIB]})
    m.hide("POST", "/v1/answer", "/v1/answer", json={"question": f"{B_MARKER} revenue Q3 2024 merger", "libraries": [B_LIB]})
    m.hide("POST", "/v1/answer", "/v1/answer", json={"question": "Why the merger, and by how much?", "libraries": ["mine", B_LIB]})
    # listings, creation and the admin routes are checked by the test body; registered here
    for route in [("GET", "/v1/libraries"), ("POST", "/v1/libraries"), ("GET", "/v1/jobs"), ("POST", "/v1/retrieve"), ("POST", "/retrieval"),
                  ("GET", "/v1/metric"), ("POST", "/v1/metric"), ("POST", "/v1/answer")]:
        m.cover(*route)
    for route in ADMIN_ROUTES:
        m.cover(route[0], route[1])
    return m


#: (method, route, concrete path for tenant B's key, body)
ADMIN_ROUTES = [
    ("POST", "/v1/admin/tenants", "/v1/admin/tenants", {"tenant_id": "intruder"}),
    ("GET", "/v1/admin/tenants", "/v1/admin/tenants", None),
    ("POST", "/v1/admin/tenants/{tenant_id}/keys", "/v1/admin/tenants/globex/keys", {"label": "stolen"}),
    ("GET", "/v1/admin/tenants/{tenant_id}/keys", "/v1/admin/tenants/globex/keys", None),
    ("POST", "/v1/admin/tenants/{tenant_id}/keys/{key_id}/rotate", "/v1/admin/tenants/globex/keys/{key}/rotate", {"grace_seconds": 0}),
    ("DELETE", "/v1/admin/tenants/{tenant_id}/keys/{key_id}", "/v1/admin/tenants/globex/keys/{key}", None),
    ("POST", "/v1/admin/tenants/{tenant_id}/users", "/v1/admin/tenants/globex/users", {"name": "intruder"}),
    ("GET", "/v1/admin/tenants/{tenant_id}/users", "/v1/admin/tenants/globex/users", None),
    ("GET", "/v1/admin/tenants/{tenant_id}/users/{name}", "/v1/admin/tenants/globex/users/boss", None),
    ("GET", "/v1/admin/tenants/{tenant_id}/users/{name}/groups", "/v1/admin/tenants/globex/users/boss/groups", None),
    ("DELETE", "/v1/admin/tenants/{tenant_id}/users/{name}", "/v1/admin/tenants/globex/users/boss", None),
    ("POST", "/v1/admin/tenants/{tenant_id}/groups", "/v1/admin/tenants/globex/groups", {"name": "intruders"}),
    ("GET", "/v1/admin/tenants/{tenant_id}/groups", "/v1/admin/tenants/globex/groups", None),
    ("GET", "/v1/admin/tenants/{tenant_id}/groups/{name}", "/v1/admin/tenants/globex/groups/board", None),
    ("GET", "/v1/admin/tenants/{tenant_id}/groups/{name}/members", "/v1/admin/tenants/globex/groups/board/members", None),
    ("DELETE", "/v1/admin/tenants/{tenant_id}/groups/{name}", "/v1/admin/tenants/globex/groups/board", None),
    ("PUT", "/v1/admin/tenants/{tenant_id}/groups/{group}/members/{user}", "/v1/admin/tenants/globex/groups/board/members/boss", None),
    ("DELETE", "/v1/admin/tenants/{tenant_id}/groups/{group}/members/{user}", "/v1/admin/tenants/globex/groups/board/members/boss", None),
    ("PUT", "/v1/admin/tenants/{tenant_id}/libraries/{name}/documents/{doc_id}/acl", f"/v1/admin/tenants/globex/libraries/{B_LIB}/documents/{B_DOC}/acl",
     {"allow": ["group:intruders"]}),
    ("GET", "/v1/admin/tenants/{tenant_id}/libraries/{name}/documents/{doc_id}/acl", f"/v1/admin/tenants/globex/libraries/{B_LIB}/documents/{B_DOC}/acl", None),
]


def call(service: Service, method: str, path: str, headers: dict, **kwargs: Any) -> Any:
    return service.client.request(method, path, headers=headers, **kwargs)


def answer(response: Any, *replace: str) -> tuple[int, str, bytes]:
    body = response.content
    for i, value in enumerate(replace):
        body = body.replace(value.encode(), f"<id{i}>".encode())
    return response.status_code, response.headers.get("content-type", ""), body


# -- the tests -----------------------------------------------------------------------------
def test_the_matrix_covers_every_route_of_the_app(embedded_service: Service) -> None:
    app = embedded_service.client.app
    served = app_routes(app)
    documented = schema_routes(app)
    assert documented <= served, f"in the schema but not served: {documented - served}"
    assert set(PUBLIC) <= served, f"allow-listed but not served: {set(PUBLIC) - served}"
    covered = build_matrix().covered
    unprobed = served - covered - set(PUBLIC)
    assert not unprobed, f"routes without a tenant-isolation probe (add them to build_matrix or, with a reason, to PUBLIC): {sorted(unprobed)}"
    assert not covered - served, f"probes for routes the app does not serve: {sorted(covered - served)}"
    assert not covered & set(PUBLIC)


def test_a_new_route_is_caught_by_the_matrix(tmp_path) -> None:
    """The guard above really fails: a route added to the app shows up as unprobed."""
    from fastapi import APIRouter

    from ragspine.config import load_settings
    from ragspine.service.app import create_app

    app = create_app(load_settings({"RAGSPINE_CHUNK_STORE": str(tmp_path / "x.db")}))
    def export(name: str) -> dict:
        return {"name": name}

    def everything() -> dict:
        return {}

    extra = APIRouter(prefix="/v1")
    extra.add_api_route("/libraries/{name}/export", export, methods=["GET"])
    app.include_router(extra)
    app.add_api_route("/v2/everything", everything, methods=["POST"], include_in_schema=False)
    assert app_routes(app) - build_matrix().covered - set(PUBLIC) == {
        ("GET", "/v1/libraries/{name}/export"), ("POST", "/v2/everything"),
    }


def test_tenant_a_cannot_reach_tenant_b(service: Service) -> None:
    client = service.client
    a, b = new_tenant(client, "acme"), new_tenant(client, "globex")
    new_library(client, a, "mine", description="gearbox warranty handbook")
    a_jobs = [ok_job(service, ingest(client, a, "mine", doc("own", A_TEXT, metadata={"year": 2024, "team": "board"})))["job_id"]]
    matrix = build_matrix()
    missing_job = uuid.uuid4().hex

    def probe_all(job_id: str) -> list[tuple[int, str, bytes]]:
        out = []
        for method, _route, path, kwargs in matrix.hidden:
            r = call(service, method, path.replace("{job}", job_id), a, **kwargs)
            assert r.status_code < 500, (method, path, r.text)
            out.append(answer(r, job_id))
        return out

    before = probe_all(missing_job)  # B's library, document and job do not exist yet

    new_library(client, b, B_LIB, description="merger plans board")
    b_job = ok_job(service, ingest(client, b, B_LIB, doc(B_DOC, B_TEXT, metadata={"year": 2024, "team": "board"})))["job_id"]
    assert client.post("/v1/facts", json={"library": B_LIB, "facts": [B_FACT]}, headers=b).status_code == 200
    b_snapshot = client.get(f"/v1/libraries/{B_LIB}", headers=b).json()
    assert (b_snapshot["documents"], b_snapshot["chunks"]) == (1, 1)

    after = probe_all(b_job)
    for (method, route, path, _), missing, theirs in zip(matrix.hidden, before, after, strict=False):
        assert theirs == missing, f"{method} {path}: B's resource is answered differently from a missing one"
        status = theirs[0]
        if route == "/retrieval":
            assert status == 400 and b'"error_code":2001' in theirs[2].replace(b" ", b"")
        else:
            assert status == 404, (method, path, theirs)
    wait_jobs_idle(service, a)
    assert [j["job_id"] for j in client.get("/v1/jobs", headers=a).json()] == a_jobs  # no probe created a job

    # listings show only A's things
    assert [lib["name"] for lib in client.get("/v1/libraries", headers=a).json()] == ["mine"]
    jobs = client.get("/v1/jobs?limit=500", headers=a).json()
    assert [j["job_id"] for j in jobs] == a_jobs and b_job not in str(jobs)
    assert client.get("/v1/libraries/mine/documents", headers=a).json()["doc_ids"] == ["own"]
    for body in (
        {"query": f"{B_MARKER} merger board"},
        {"query": f"{B_MARKER} merger board", "filters": {"team": "board"}, "top_k": 200},
        {"query": f"{B_MARKER} merger", "filters": {"team": "nobody"}, "retry_without_filters": True},
        {"query": "gearbox", "mode": "economy"},
        {"query": "gearbox", "mode": "vector"},
    ):
        r = client.post("/v1/retrieve", json=body, headers=a)
        assert r.status_code == 200, r.text
        assert {s["doc_id"] for s in r.json()["snippets"]} <= {"own"} and r.json()["libraries"] == ["mine"]
        assert B_MARKER not in r.text.replace(body["query"], "") and "globex" not in r.text
    r = client.post("/retrieval", json=dify_body("mine", f"{B_MARKER} merger gearbox"), headers=a)
    assert r.status_code == 200 and {rec["metadata"]["document_id"] for rec in r.json()["records"]} == {"own"}
    # the structured channel and the agent over "all my libraries" never reach B's facts or chunks
    metric = {"metric": "revenue", "entity": "Kestrel", "period": "2024Q3"}
    for r in (client.get("/v1/metric", params=metric, headers=a), client.post("/v1/metric", json=metric, headers=a)):
        assert r.status_code == 200 and r.json()["status"] == "not_found" and B_VALUE not in r.text, r.text
    for question in (f"What was {B_MARKER}'s revenue in Q3 2024?", f"Why did {B_MARKER} merge, and by how much did revenue fall in Q3 2024?"):
        r = client.post("/v1/answer", json={"question": question}, headers=a)
        assert r.status_code == 200 and r.json()["libraries"] == ["mine"], r.text
        assert B_VALUE not in r.text and B_DOC not in r.text and "globex" not in r.text and "merger closes" not in r.text

    # the admin routes refuse tenant keys, and change nothing
    b_key_id = b["Authorization"].split("_")[1]
    for key in (a, b):
        for method, _route, path, body in ADMIN_ROUTES:
            r = call(service, method, path.replace("{key}", b_key_id), key, json=body)
            assert r.status_code == 401, (method, path, r.status_code, r.text)
            assert "globex" not in r.text and "acme" not in r.text
    admin_view = client.get("/v1/admin/tenants/globex/keys", headers=ADMIN).json()
    assert [(k["key_id"], k["active"]) for k in admin_view] == [(b_key_id, True)]
    assert [t["tenant_id"] for t in client.get("/v1/admin/tenants", headers=ADMIN).json()] == ["acme", "globex"]
    # ... and the admin token is not a tenant key
    admin_as_tenant = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    assert client.get("/v1/libraries", headers=admin_as_tenant).status_code == 401
    assert client.post("/retrieval", json=dify_body(B_LIB), headers=admin_as_tenant).json()["error_code"] == 1002

    # the public routes say nothing about either tenant
    for method, path in PUBLIC:
        r = client.request(method, path)
        assert r.status_code in (200, 503), (path, r.status_code)
        for secret in (B_LIB, B_DOC, B_MARKER, "globex", "acme", b_job):
            assert secret not in r.text, (path, secret)

    # A's own library named like B's is A's: nothing done to it reaches B's
    assert new_library(client, a, B_LIB)["documents"] == 0
    assert client.get(f"/v1/libraries/{B_LIB}/documents", headers=a).json()["doc_ids"] == []
    assert retrieve(client, a, f"{B_MARKER} merger", libraries=[B_LIB]).json()["snippets"] == []
    assert client.post("/retrieval", json=dify_body(B_LIB, f"{B_MARKER} merger"), headers=a).json() == {"records": []}
    assert client.post("/v1/metric", json={**metric, "libraries": [B_LIB]}, headers=a).json()["status"] == "not_found"
    ok_job(service, ingest(client, a, B_LIB, doc(B_DOC, "Acme's own plans: a picnic in June.")))
    assert [s["text"] for s in retrieve(client, a, "plans picnic", libraries=[B_LIB]).json()["snippets"]] == ["Acme's own plans: a picnic in June."]
    assert client.delete(f"/v1/libraries/{B_LIB}/documents/{B_DOC}", headers=a).status_code == 200
    assert client.delete(f"/v1/libraries/{B_LIB}", headers=a).status_code == 200

    # B sees its library exactly as before
    assert client.get(f"/v1/libraries/{B_LIB}", headers=b).json() == b_snapshot
    assert client.get(f"/v1/libraries/{B_LIB}/documents", headers=b).json()["doc_ids"] == [B_DOC]
    snippets = retrieve(client, b, f"{B_MARKER} merger", libraries=[B_LIB]).json()["snippets"]
    assert [(s["doc_id"], s["text"], s["version"]) for s in snippets] == [(B_DOC, B_TEXT, 1)]
    records = client.post("/retrieval", json=dify_body(B_LIB, f"{B_MARKER} merger"), headers=b).json()["records"]
    assert [r["content"] for r in records] == [B_TEXT]
    found = client.post("/v1/metric", json={**metric, "libraries": [B_LIB]}, headers=b).json()
    assert (found["status"], found["value"], found["library"]) == ("found", B_VALUE, B_LIB)
    assert [j["job_id"] for j in client.get("/v1/jobs", headers=b).json()] == [b_job]
    assert client.get(f"/v1/jobs/{b_job}", headers=b).json()["state"] == "succeeded"
