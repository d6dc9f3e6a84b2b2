"""Every 422 has the shape the published OpenAPI document gives it (``HTTPValidationError``:
``detail`` a list of ``{loc, msg, type}``), whichever check found the problem. Before, an
upload refused after the schema check (not UTF-8, bad metadata, front matter nested too deep,
a lone surrogate) answered ``{"detail": "..."}`` — schemathesis' ST108, *response violates
schema*. The one-line ``message`` is there either way."""

from __future__ import annotations

import json

import pytest

from tests.helpers import needs

needs("schemathesis")

import schemathesis

from tests.unit.service.conftest import doc, new_library, new_tenant  # noqa: E402

UPLOAD = "/v1/libraries/{name}/documents/upload"


def upload(name: str, data: bytes, media: str = "text/markdown", **form: str) -> dict:
    return {"files": {"file": (name, data, media)}, "data": form}


#: (operation path, method, request path, request keywords, a word the message names)
REFUSED = [
    (UPLOAD, "POST", "/v1/libraries/hb/documents/upload", upload("a.txt", b"\xff\xfe bad", "text/plain"), "UTF-8"),
    (UPLOAD, "POST", "/v1/libraries/hb/documents/upload", upload("a.md", b"x", metadata="[1]"), "metadata"),
    (UPLOAD, "POST", "/v1/libraries/hb/documents/upload", upload("a.md", b"x", metadata="{not json"), "metadata"),
    (UPLOAD, "POST", "/v1/libraries/hb/documents/upload",
     upload("n.md", ("---\na: " + "[" * 5000 + "]" * 5000 + "\n---\nbody\n").encode()), "nested too deeply"),
    (UPLOAD, "POST", "/v1/libraries/hb/documents/upload",
     upload("q3.md", '---\nteam: "ops\\ud800"\n---\nRevenue fell.\n'.encode()), "team"),
    ("/v1/libraries/{name}/documents", "POST", "/v1/libraries/hb/documents",
     {"content": json.dumps(doc("d", "x", metadata={"te\ud800am": 1})).encode()}, "metadata key"),
    ("/v1/libraries/{name}/documents/batch", "POST", "/v1/libraries/hb/documents/batch",
     {"content": json.dumps({"documents": [doc("d", "body \x00")]}).encode()}, "text"),
    ("/v1/libraries", "POST", "/v1/libraries", {"json": {"name": "s", "chunker": "semantic", "embedding_model": "none"}}, "chunker"),
]


@pytest.mark.parametrize(("operation", "method", "path", "request_kw", "word"), REFUSED, ids=[f"{r[2]}:{r[4]}" for r in REFUSED])
def test_every_422_has_the_documented_shape(client, operation, method, path, request_kw, word) -> None:
    headers = new_tenant(client)
    new_library(client, headers, "hb")
    if "content" in request_kw:
        headers = {**headers, "Content-Type": "application/json"}
    r = client.request(method, path, headers=headers, **request_kw)
    assert r.status_code == 422, r.text
    body = r.json()
    assert isinstance(body["detail"], list) and body["detail"], body
    assert all(set(item) >= {"loc", "msg", "type"} for item in body["detail"]), body
    assert isinstance(body["message"], str) and word in body["message"], body
    schema = schemathesis.openapi.from_dict(client.get("/openapi.json").json())
    schema[operation][method].validate_response(r)  # raises (ST108) when the body is not the documented 422
    assert client.get("/v1/jobs", headers=headers).json() == []  # nothing was queued


#: (path, body): schema errors that echoed the input without bound (measured before: 2.0 MB,
#: 5.0 MB, 9.1 MB, 0.3 MB, 1.0 MB bodies).
ECHOED = [
    ("/v1/retrieve", {"query": "x", **{f"k{i}": i for i in range(20_000)}}),
    ("/v1/retrieve", {"query": "x" * 5_000_000}),
    ("/v1/answer", {"question": "x", "history": [{"role": "x", "content": "y" * 3000}] * 3000}),
    ("/v1/libraries/hb/documents/batch", {"documents": [{"doc_id": "", "text": ""}] * 1000}),
    ("/v1/retrieve", {"query": "x", "k" * 1_000_000: 1}),  # a key of a megabyte: in loc and message
]


@pytest.mark.parametrize(("path", "body"), ECHOED, ids=["20k-keys", "5MB-query", "3000-turns", "1000-docs", "1MB-key"])
def test_a_schema_error_echoes_a_bounded_body(client, path, body) -> None:
    headers = new_tenant(client)
    new_library(client, headers, "hb")
    r = client.post(path, json=body, headers=headers)
    assert r.status_code == 422 and len(r.content) <= 16_000, (len(r.content), r.text[:300])
    detail = r.json()["detail"]
    assert 1 <= len(detail) <= 20 and all(set(item) >= {"loc", "msg", "type"} for item in detail)
    assert len(r.json()["message"]) <= 1_000
    schema = schemathesis.openapi.from_dict(client.get("/openapi.json").json())
    operation = path.replace("/hb/", "/{name}/")
    schema[operation]["POST"].validate_response(r)


def test_a_truncated_list_says_how_many_problems_it_left_out(client) -> None:
    headers = new_tenant(client)
    r = client.post("/v1/retrieve", json={"query": "x", **{f"k{i}": i for i in range(500)}}, headers=headers)
    assert len(r.json()["detail"]) == 20 and r.json()["message"].endswith("(and 480 more problems)"), r.json()["message"]
    first = r.json()["detail"][0]
    assert first["loc"] == ["body", "k0"] and first["type"] == "extra_forbidden" and first["input"] == 0
