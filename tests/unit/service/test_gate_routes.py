"""Every route of the service that reaches the fact store, the graph or an index with a caller's
text checks the security gate — and a new route without it fails here.

A route is *gated* when it depends on :func:`ragspine.service.security.security_gate` (found in
its dependency tree), or searches only through the stack's link exit, which gates every search
(:data:`LINK_EXIT`; ``tests/service/test_security_gate.py`` shows both refuse). Every other route
must be listed in :data:`NO_CALLER_TEXT` with the reason it needs no gate. The table of
``docs/capabilities/security-gate.md`` must list every route with its gate.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends

from ragspine.config import load_settings
from ragspine.service.app import create_app
from ragspine.service.security import security_gate
from tests.service.test_isolation import app_routes

#: Routes whose one search is the stack's link exit (``Stack.retriever_for``), which gates the
#: question and every generated text before any index is read.
LINK_EXIT = {
    ("POST", "/v1/retrieve"): "the link exit's gate (refusal, refused)",
    ("POST", "/retrieval"): "the link exit's gate (no records)",
}
#: Routes that read nothing with a caller's text (no query reaches a store), with why.
NO_CALLER_TEXT = {
    ("POST", "/v1/admin/tenants"): "admin: tenants", ("GET", "/v1/admin/tenants"): "admin: tenants",
    ("POST", "/v1/admin/tenants/{tenant_id}/keys"): "admin: keys", ("GET", "/v1/admin/tenants/{tenant_id}/keys"): "admin: keys",
    ("POST", "/v1/admin/tenants/{tenant_id}/keys/{key_id}/rotate"): "admin: keys",
    ("DELETE", "/v1/admin/tenants/{tenant_id}/keys/{key_id}"): "admin: keys",
    ("POST", "/v1/admin/tenants/{tenant_id}/users"): "admin: principals",
    ("GET", "/v1/admin/tenants/{tenant_id}/users"): "admin: principals",
    ("GET", "/v1/admin/tenants/{tenant_id}/users/{name}"): "admin: principals",
    ("GET", "/v1/admin/tenants/{tenant_id}/users/{name}/groups"): "admin: principals",
    ("DELETE", "/v1/admin/tenants/{tenant_id}/users/{name}"): "admin: principals",
    ("POST", "/v1/admin/tenants/{tenant_id}/groups"): "admin: principals",
    ("GET", "/v1/admin/tenants/{tenant_id}/groups"): "admin: principals",
    ("GET", "/v1/admin/tenants/{tenant_id}/groups/{name}"): "admin: principals",
    ("GET", "/v1/admin/tenants/{tenant_id}/groups/{name}/members"): "admin: principals",
    ("DELETE", "/v1/admin/tenants/{tenant_id}/groups/{name}"): "admin: principals",
    ("PUT", "/v1/admin/tenants/{tenant_id}/groups/{group}/members/{user}"): "admin: principals",
    ("DELETE", "/v1/admin/tenants/{tenant_id}/groups/{group}/members/{user}"): "admin: principals",
    ("PUT", "/v1/admin/tenants/{tenant_id}/libraries/{name}/documents/{doc_id}/acl"): "admin: a document's ACL",
    ("GET", "/v1/admin/tenants/{tenant_id}/libraries/{name}/documents/{doc_id}/acl"): "admin: a document's ACL",
    ("POST", "/v1/libraries"): "creates a library", ("GET", "/v1/libraries"): "lists the tenant's libraries",
    ("GET", "/v1/libraries/{name}"): "one library's settings and counts", ("DELETE", "/v1/libraries/{name}"): "deletes a library",
    ("POST", "/v1/libraries/{name}/documents"): "a write (ingest)", ("POST", "/v1/libraries/{name}/documents/batch"): "a write (ingest)",
    ("POST", "/v1/libraries/{name}/documents/upload"): "a write (ingest)", ("POST", "/v1/libraries/{name}/embed"): "a write (vectors)",
    ("GET", "/v1/libraries/{name}/documents"): "the library's document ids, by id (no query)",
    ("DELETE", "/v1/libraries/{name}/documents/{doc_id}"): "a write (delete)",
    ("POST", "/v1/libraries/{name}/raptor"): "a write (builds the RAPTOR tree)", ("GET", "/v1/libraries/{name}/raptor"): "the tree's status",
    ("GET", "/v1/jobs/{job_id}"): "a job's state", ("GET", "/v1/jobs"): "the tenant's jobs",
    ("POST", "/v1/facts"): "a write (facts ingest); no fact read route exists",
    ("GET", "/v1/workflow/preview"): "the configured pipeline, no data",
    ("GET", "/healthz"): "liveness", ("GET", "/readyz"): "readiness", ("GET", "/metrics"): "Prometheus counters",
    ("GET", "/openapi.json"): "the API description", ("GET", "/docs"): "the API description",
    ("GET", "/docs/oauth2-redirect"): "Swagger UI's helper page", ("GET", "/redoc"): "the API description",
}


def _app(tmp_path) -> Any:
    return create_app(load_settings({"RAGSPINE_CHUNK_STORE": str(tmp_path / "x.db")}))


def _calls(dependant: Any) -> set[Any]:
    calls = set()
    for dependency in dependant.dependencies:
        calls |= {dependency.call} | _calls(dependency)
    return calls


def gated_routes(app: Any) -> set[tuple[str, str]]:
    """The (method, path) of every route with :func:`security_gate` in its dependency tree."""
    from fastapi.routing import iter_route_contexts

    out = set()
    for context in iter_route_contexts(app.routes):
        dependant = getattr(context.route, "dependant", None)
        if dependant is not None and security_gate in _calls(dependant):
            out |= {(method, context.path_format) for method in context.methods if method != "HEAD"}
    return out


def ungated(app: Any) -> set[tuple[str, str]]:
    return app_routes(app) - gated_routes(app) - set(LINK_EXIT) - set(NO_CALLER_TEXT)


def test_every_route_is_gated_or_reads_no_callers_text(tmp_path) -> None:
    app = _app(tmp_path)
    served = app_routes(app)
    assert not ungated(app), f"routes with neither Depends(security_gate) nor a reason in NO_CALLER_TEXT: {sorted(ungated(app))}"
    assert gated_routes(app) == {("GET", "/v1/metric"), ("POST", "/v1/metric"), ("POST", "/v1/answer")}
    listed = set(LINK_EXIT) | set(NO_CALLER_TEXT)
    assert listed <= served, f"listed but not served: {sorted(listed - served)}"
    assert not gated_routes(app) & set(NO_CALLER_TEXT)


def test_a_new_route_without_the_gate_fails_and_one_with_it_passes(tmp_path) -> None:
    app = _app(tmp_path)

    def facts_read(entity: str) -> dict:
        return {}

    def graph_rollup(entity: str, gate: Any = Depends(security_gate)) -> dict:
        return {}

    extra = APIRouter(prefix="/v1")
    extra.add_api_route("/facts", facts_read, methods=["GET"])
    extra.add_api_route("/graph/rollup", graph_rollup, methods=["GET"])
    app.include_router(extra)
    assert ungated(app) == {("GET", "/v1/facts")}


def test_the_docs_table_lists_every_route_with_its_gate(tmp_path) -> None:
    page = Path(__file__).resolve().parents[3] / "docs" / "capabilities" / "security-gate.md"
    section = page.read_text(encoding="utf-8").split("\n## Every route and command", 1)[1].split("\n## ", 1)[0]
    documented: dict[tuple[str, str], str] = {}
    commands: dict[str, str] = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("| `") and len(cells) >= 2:
            for method, path in re.findall(r"`(GET|POST|DELETE|PUT|PATCH) ([^`]+)`", cells[0]):
                documented[(method, path)] = cells[1]
            commands.update((command, cells[1]) for command in re.findall(r"`(ragspine [a-z ]+)`", cells[0]))
    served = app_routes(_app(tmp_path))
    assert set(documented) == served - {(m, p) for m, p in served if p in ("/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc")}
    for route in gated_routes(_app(tmp_path)) | set(LINK_EXIT):
        assert documented[route] != "none", route
    for route in NO_CALLER_TEXT:
        assert documented.get(route, "none") == "none", route
    for command in ("ragspine query", "ragspine ask", "ragspine metric", "ragspine graph rollup", "ragspine graph peers",
                    "ragspine graph trace", "ragspine graph edges"):
        assert commands.get(command, "none") != "none", command
