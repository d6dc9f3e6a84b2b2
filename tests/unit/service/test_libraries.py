"""Libraries per tenant: create (validated), list, show, delete from every store; another
tenant's library is answered exactly like a missing one."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from ragspine.service.app import create_app
from tests.unit.service.conftest import (
    doc,
    ingest,
    make_settings,
    new_library,
    new_tenant,
    retrieve,
)


def test_create_list_show_delete(client) -> None:
    headers = new_tenant(client)
    lib = new_library(client, headers, "handbook", description="HR policies")
    assert lib["embedding_model"] == "deterministic" and lib["retrieval_mode"] == "auto"
    ingest(client, headers, "handbook", doc("d1", "Vacation is 25 days."), doc("d2", "Sick leave is separate."))
    listed = client.get("/v1/libraries", headers=headers).json()
    assert [(l["name"], l["documents"], l["chunks"]) for l in listed] == [("handbook", 2, 2)]
    assert client.get("/v1/libraries/handbook", headers=headers).json()["description"] == "HR policies"
    assert client.delete("/v1/libraries/handbook", headers=headers).json() == {"name": "handbook", "deleted": True}
    assert client.get("/v1/libraries", headers=headers).json() == []
    assert client.get("/v1/libraries/handbook", headers=headers).status_code == 404
    # the name can be used again, and starts empty
    new_library(client, headers, "handbook")
    assert client.get("/v1/libraries/handbook", headers=headers).json()["chunks"] == 0


@pytest.mark.parametrize("name", ["", "a b", "x" * 65, "../etc", "ümlaut", "a/b"])
def test_names_are_validated(client, name) -> None:
    headers = new_tenant(client)
    r = client.post("/v1/libraries", json={"name": name}, headers=headers)
    assert r.status_code == 422 and "name" in r.json()["message"]


def test_duplicate_unknown_embedding_and_bad_mode(client) -> None:
    headers = new_tenant(client)
    new_library(client, headers, "a")
    assert client.post("/v1/libraries", json={"name": "a"}, headers=headers).status_code == 409
    r = client.post("/v1/libraries", json={"name": "b", "embedding_model": "gpt-9"}, headers=headers)
    assert r.status_code == 400 and "deterministic" in r.json()["detail"] and "none" in r.json()["detail"]
    r = client.post("/v1/libraries", json={"name": "b", "retrieval_mode": "turbo"}, headers=headers)
    assert r.status_code == 400 and "economy" in r.json()["detail"]
    r = client.post("/v1/libraries", json={"name": "b", "embedding_model": "none", "retrieval_mode": "hybrid"}, headers=headers)
    assert r.status_code == 400
    lib = new_library(client, headers, "c", embedding_model="none")
    assert (lib["embedding_model"], lib["retrieval_mode"]) == ("none", "economy")
    r = client.post("/v1/libraries", json={"name": "d", "extra": 1}, headers=headers)
    assert r.status_code == 422 and "extra" in r.json()["message"]


def test_extra_embedding_models_are_offered(tmp_path) -> None:
    settings = make_settings(tmp_path, RAGSPINE_EMBEDDING="none", RAGSPINE_EMBEDDING_MODELS="deterministic")
    with TestClient(create_app(settings)) as client:
        headers = new_tenant(client)
        assert new_library(client, headers, "plain")["embedding_model"] == "none"
        lib = new_library(client, headers, "dense", embedding_model="deterministic", retrieval_mode="hybrid")
        assert (lib["embedding_model"], lib["retrieval_mode"]) == ("deterministic", "hybrid")
        ingest(client, headers, "dense", doc("d1", "Gearbox warranty is 36 months."))
        snippet = retrieve(client, headers, "gearbox warranty", libraries=["dense"]).json()["snippets"][0]
        assert snippet["scores"]["vector"] > 0


def test_another_tenants_library_is_a_404_like_a_missing_one(client) -> None:
    acme, globex = new_tenant(client, "acme"), new_tenant(client, "globex")
    new_library(client, acme, "secret")
    ingest(client, acme, "secret", doc("d1", "The merger closes in May."))
    for method, path, body in [
        ("GET", "/v1/libraries/{}", None),
        ("DELETE", "/v1/libraries/{}", None),
        ("POST", "/v1/libraries/{}/documents", doc("x", "text")),
        ("GET", "/v1/libraries/{}/documents", None),
        ("DELETE", "/v1/libraries/{}/documents/d1", None),
    ]:
        theirs = client.request(method, path.format("secret"), json=body, headers=globex)
        missing = client.request(method, path.format("nothing"), json=body, headers=globex)
        assert theirs.status_code == missing.status_code == 404
        assert theirs.json()["detail"].replace("secret", "X") == missing.json()["detail"].replace("nothing", "X")
    r = retrieve(client, globex, "merger", libraries=["secret"])
    assert r.status_code == 404 and r.json()["detail"] == "library 'secret' not found"
    assert retrieve(client, globex, "merger").json()["snippets"] == []  # its own (none) only
    # the same name in two tenants: two libraries
    new_library(client, globex, "secret")
    assert retrieve(client, globex, "merger", libraries=["secret"]).json()["snippets"] == []
    assert len(retrieve(client, acme, "merger", libraries=["secret"]).json()["snippets"]) == 1


def test_delete_removes_chunks_vectors_and_cache_entries(client) -> None:
    headers = new_tenant(client)
    new_library(client, headers, "lib")
    ingest(client, headers, "lib", doc("d1", "Gearbox repairs take five days."), doc("d2", "Warranty is 36 months."))
    ingest(client, headers, "lib", doc("d1", "Gearbox repairs now take three days."))  # a second version
    assert retrieve(client, headers, "gearbox").json()["snippets"]
    stack = client.app.state.service.stack
    vectors = stack._vectors[("acme/lib", "deterministic")]
    assert vectors.count() >= 2
    cached = stack.db.query("SELECT COUNT(*) FROM embedding_cache WHERE key LIKE ?", ["%:d1#0:%"])[0][0]
    assert cached == 2  # both versions' texts
    assert client.delete("/v1/libraries/lib", headers=headers).status_code == 200
    assert vectors.count() == 0
    assert stack.db.chunk_store("acme/lib").count(include_inactive=True) == 0
    assert stack.library("acme/lib") is None
    assert stack.db.query("SELECT COUNT(*) FROM embedding_cache")[0][0] == 0
    assert client.app.state.service.store.list_jobs("acme") == []


def test_a_tenants_listing_counts_only_its_own_libraries(client) -> None:
    """Listing counts the tenant's libraries alone: another tenant's chunks are never read
    (on a shared database the whole-database count took seconds at 2M chunks)."""
    mine, theirs = new_tenant(client, "mine"), new_tenant(client, "theirs")
    new_library(client, mine, "a")
    new_library(client, theirs, "b")
    ingest(client, theirs, "b", doc("d1", "Their text."))
    db = client.app.state.service.stack.db
    asked: list = []
    real = db.list_libraries

    def spy(library_ids=None):
        asked.append(library_ids)
        return real(library_ids)

    db.list_libraries = spy
    listed = client.get("/v1/libraries", headers=mine).json()
    assert [(l["name"], l["chunks"]) for l in listed] == [("a", 0)]
    assert asked == [["mine/a"]]


def test_a_librarys_chunker_and_header_are_chosen_at_creation_and_kept(client) -> None:
    headers = new_tenant(client)
    lib = new_library(client, headers, "plain", retrieval_mode="economy")
    assert (lib["chunker"], lib["contextual"]) == ("default", "none")  # the server's defaults
    lib = new_library(client, headers, "headed", contextual="on", retrieval_mode="economy")
    assert (lib["chunker"], lib["contextual"]) == ("default", "header")
    shown = client.get("/v1/libraries/headed", headers=headers).json()
    assert (shown["chunker"], shown["contextual"]) == ("default", "header")
    ingest(client, headers, "headed", doc("d1", "Margins held.", title="Kestrel quarterly report"))
    ingest(client, headers, "plain", doc("d1", "Margins held.", title="Kestrel quarterly report"))
    assert [s["chunk_id"] for s in retrieve(client, headers, "kestrel", libraries=["headed"]).json()["snippets"]] == ["d1#0"]
    assert retrieve(client, headers, "kestrel", libraries=["plain"]).json()["snippets"] == []  # the title is not indexed there
    for body, word in (({"chunker": "no-such-chunker"}, "chunker"), ({"contextual": "summary"}, "RAGSPINE_CONTEXTUAL")):
        r = client.post("/v1/libraries", json={"name": "bad", **body}, headers=headers)
        assert r.status_code == 400 and word in r.json()["detail"], r.text


def test_a_parent_child_library_answers_children_with_one_parent_block(client) -> None:
    headers = new_tenant(client)
    new_library(client, headers, "hb", chunker="parent_child", retrieval_mode="economy")
    first = "Full-time employees receive twenty-five vacation days per calendar year, counted from the hiring date. " * 3
    second = "Unused vacation days carry over until March 31 of the next year, then they expire without payment. " * 3
    text = f"# Vacation\n\n{first.strip()}\n\n{second.strip()}\n\n# Pay\n\nSalaries are paid monthly."
    ingest(client, headers, "hb", doc("hb", text))
    snippets = retrieve(client, headers, "vacation days year", libraries=["hb"]).json()["snippets"]
    vacation = [s for s in snippets if s.get("heading") == "Vacation"]
    assert len(vacation) == 2, snippets
    carrier, other = vacation
    section = text[: text.index("\n\n# Pay")]
    assert carrier["prompt_text"] == section and carrier["parent_locator"] == f"hb#char=0,{len(section)}"
    assert other["prompt_text_in"] == carrier["chunk_id"] and "prompt_text" not in other
    for s in vacation:
        start, end = (int(x) for x in s["source_locator"].split("#char=")[1].split(","))
        assert s["text"] == text[start:end] and len(s["text"]) < len(section)
