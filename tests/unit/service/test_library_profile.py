"""A service library's ``profile`` at creation: a named recipe fills every field the request
leaves out; a field given wins; a recipe the server cannot keep is a 400 naming the fix."""

from __future__ import annotations

from fastapi.testclient import TestClient

from ragspine.profile import PROFILES
from ragspine.service.app import create_app
from tests.unit.service.conftest import make_settings, new_library, new_tenant


def test_a_named_profile_fills_the_fields_left_out(tmp_path) -> None:
    settings = make_settings(tmp_path, RAGSPINE_CHUNK_CHARS="1500")
    with TestClient(create_app(settings)) as client:
        headers = new_tenant(client)
        lib = new_library(client, headers, "lean", profile="economy")
        economy = PROFILES["economy"].profile
        assert (lib["embedding_model"], lib["retrieval_mode"], lib["contextual"]) == ("none", "economy", "header")
        assert (lib["fusion_weights"], lib["reranker"]) == (economy.ranking.fusion_weights, "none")
        mixed = new_library(client, headers, "mixed", profile="economy", contextual="none", reranker="none")
        assert mixed["contextual"] == "none"  # a field the request gives wins over the profile's
        plain = new_library(client, headers, "plain")
        assert (plain["embedding_model"], plain["contextual"]) == ("deterministic", "none")  # no profile: the server's


def test_a_profile_the_server_cannot_keep_is_refused(client) -> None:
    headers = new_tenant(client)
    r = client.post("/v1/libraries", json={"name": "lean", "profile": "economy"}, headers=headers)
    assert r.status_code == 400 and "chunk_chars=1500" in r.text and "RAGSPINE_PROFILE=economy" in r.text
    r = client.post("/v1/libraries", json={"name": "q", "profile": "quality"}, headers=headers)
    assert r.status_code == 400 and "embedding_model 'onnx' is not offered" in r.text
    r = client.post("/v1/libraries", json={"name": "x", "profile": "fastest"}, headers=headers)
    assert r.status_code == 400 and "unknown profile 'fastest'" in r.text
    assert client.get("/v1/libraries", headers=headers).json() == []  # nothing made


def test_an_older_sqlite_service_file_keeps_its_libraries_recipes(tmp_path) -> None:
    import sqlite3

    from ragspine.service.store import ServiceStore, sqlite_engine

    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.execute(  # the table as revision 0012 left it
        "CREATE TABLE ragspine_service_library (library_id VARCHAR(200) PRIMARY KEY, tenant_id VARCHAR(64) NOT NULL,"
        " name VARCHAR(64) NOT NULL, description TEXT NOT NULL DEFAULT '', embedding TEXT NOT NULL DEFAULT 'none',"
        " retrieval_mode TEXT NOT NULL DEFAULT 'auto', created_at FLOAT NOT NULL, chunker TEXT, contextual TEXT, reranker TEXT,"
        " rerank_depth INTEGER, postprocessor TEXT, fusion_weights TEXT, query_transform TEXT, decompose TEXT, adaptive TEXT,"
        " corrective BOOLEAN, query_fanout INTEGER, raptor BOOLEAN)")
    conn.execute("INSERT INTO ragspine_service_library VALUES ('t/a', 't', 'a', 'kept', 'deterministic', 'hybrid', 1.0, 'layout',"
                 " 'header', 'colbert', 20, 'mmr', NULL, 'hyde', NULL, NULL, 0, NULL, 1)")
    conn.execute("INSERT INTO ragspine_service_library (library_id, tenant_id, name, created_at) VALUES ('t/b', 't', 'b', 2.0)")
    conn.commit()
    conn.close()
    store = ServiceStore(sqlite_engine(str(path)), create=True)
    try:
        a, b = store.library_by_id("t/a"), store.library_by_id("t/b")
        assert (a.description, a.embedding, a.retrieval_mode, a.chunker, a.contextual) == ("kept", "deterministic", "hybrid", "layout", "header")
        assert (a.ranking.reranker, a.ranking.rerank_depth, a.ranking.postprocessor, a.ranking.fusion_weights) == ("colbert", 20, "mmr", None)
        assert a.reasoning == {"transform": "hyde", "decompose": None, "adaptive": None, "corrective": False, "fanout": None}
        assert a.raptor is True
        assert (b.embedding, b.retrieval_mode, b.chunker, b.ranking.rerank_depth, b.raptor) == ("none", "auto", "default", 50, None)
        assert b.reasoning == dict.fromkeys(("transform", "decompose", "adaptive", "corrective", "fanout"))
        ServiceStore(store.engine, create=True)  # converting again changes nothing
        assert store.library_by_id("t/a") == a
    finally:
        store.close()
