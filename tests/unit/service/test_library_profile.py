"""A service library's ``profile`` at creation: a named recipe fills every field the request
leaves out; a field given wins; a recipe the server cannot keep is a 400 naming the fix."""

from __future__ import annotations

from fastapi.testclient import TestClient

from ragspine.profile import PROFILES
from ragspine.service.app import create_app
from tests.unit.service.conftest import doc, ingest, make_settings, new_library, new_tenant


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


# -- the recipe as a nested model generated from Profile -----------------------------------------
def _fields(model) -> dict:
    """A pydantic model's field tree: name -> nested tree (for a model field) or None."""
    out = {}
    for name, info in model.model_fields.items():
        inner = info.annotation
        for arg in (getattr(inner, "__args__", None) or (inner,)):
            if isinstance(arg, type) and hasattr(arg, "model_fields"):
                out[name] = _fields(arg)
                break
        else:
            out[name] = None
    return out


def _json_tree(data: dict) -> dict:
    return {k: (_json_tree(v) if isinstance(v, dict) else None) for k, v in data.items()}


def test_the_http_recipe_models_are_the_profiles_json_form() -> None:
    from ragspine.profile import Profile
    from ragspine.service.models import LibraryIn, LibraryOut, RetrieveIn
    from ragspine.service.profile_models import RecipeIn, RecipeOut, recipe_out

    tree = {**_json_tree(Profile().to_json()), "options": None}
    assert _fields(RecipeOut) == tree and _fields(RecipeIn) == tree  # generated: the same names, nested the same way
    for model in (LibraryIn, RetrieveIn):
        assert model.model_fields["recipe"].annotation == RecipeIn | None
    assert LibraryOut.model_fields["recipe"].annotation is RecipeOut
    for named in PROFILES.values():  # every named recipe goes through the HTTP form and back unchanged
        shown = recipe_out(named.profile).model_dump()
        assert Profile.from_json(shown) == named.profile
        assert RecipeIn.model_validate(shown).choices() == named.profile.choices()


def test_a_library_is_created_from_a_nested_recipe_and_shows_what_runs(tmp_path) -> None:
    settings = make_settings(tmp_path, RAGSPINE_QUERY_TRANSFORM="none")
    with TestClient(create_app(settings)) as client:
        headers = new_tenant(client)
        recipe = {"contextual": "header", "ranking": {"fusion_weights": {"bm25": 1, "vector": 0.5}, "rerank_depth": 20},
                  "reasoning": {"corrective": True}}
        lib = new_library(client, headers, "nested", recipe=recipe)
        assert (lib["contextual"], lib["fusion_weights"], lib["rerank_depth"], lib["corrective"]) == ("header", "bm25=1,vector=0.5", 20, True)
        shown = lib["recipe"]  # the whole recipe its searches run: its choices over the server's
        assert shown["contextual"] == "header" and shown["ranking"]["fusion_weights"] == "bm25=1,vector=0.5"
        assert shown["reasoning"] == {"transform": "none", "decompose": "none", "adaptive": "none", "corrective": True, "fanout": 3}
        assert client.get("/v1/libraries/nested", headers=headers).json()["recipe"] == shown
        flat = new_library(client, headers, "flat", contextual="header", fusion_weights="bm25=1,vector=0.5", rerank_depth=20, corrective=True)
        assert flat["recipe"] == shown  # the flat fields and the nested recipe are one choice

        both = {"name": "both", "contextual": "none", "recipe": {"contextual": "header"}}
        r = client.post("/v1/libraries", json=both, headers=headers)
        assert r.status_code == 400 and "contextual='none' and recipe contextual='header' differ" in r.text
        r = client.post("/v1/libraries", json={"name": "b", "recipe": {"chunk_chars": 1500}}, headers=headers)
        assert r.status_code == 400 and "chunk_chars" in r.text and "RAGSPINE_CHUNK_CHARS" in r.text
        r = client.post("/v1/libraries", json={"name": "c", "recipe": {"ranking": {"reranker": "nope"}}}, headers=headers)
        assert r.status_code == 422 and "unknown reranker 'nope'" in r.text
        r = client.post("/v1/libraries", json={"name": "d", "recipe": {"rerankr": "none"}}, headers=headers)
        assert r.status_code == 422 and "rerankr" in r.text
        r = client.post("/v1/libraries", json={"name": "e", "recipe": {"options": {"boost": 1}}}, headers=headers)
        assert r.status_code == 422 and "unknown profile option 'boost'" in r.text
        assert sorted(x["name"] for x in client.get("/v1/libraries", headers=headers).json()) == ["flat", "nested"]


def test_a_request_recipe_ranks_like_the_flat_fields_and_cannot_change_what_a_library_keeps(tmp_path) -> None:
    settings = make_settings(tmp_path)
    with TestClient(create_app(settings)) as client:
        headers = new_tenant(client)
        new_library(client, headers, "docs")
        ingest(client, headers, "docs", *(doc(f"d{i}", f"Kestrel invoice {i} was paid in March. " * (i + 1)) for i in range(6)))
        query = {"query": "kestrel invoice march", "libraries": ["docs"], "top_k": 4}
        flat = client.post("/v1/retrieve", json={**query, "fusion_weights": "bm25=1,vector=0.25", "postprocessor": "mmr"}, headers=headers)
        nested = client.post("/v1/retrieve", json={**query, "recipe": {"ranking": {"fusion_weights": {"bm25": 1, "vector": 0.25},
                                                                                    "postprocessor": "mmr"}}}, headers=headers)
        assert flat.status_code == nested.status_code == 200 and flat.json() == nested.json() and flat.json()["snippets"]
        for fixed in ({"contextual": "header"}, {"embedding": "none"}, {"chunker": "layout"}):
            r = client.post("/v1/retrieve", json={**query, "recipe": fixed}, headers=headers)
            assert r.status_code == 400 and "a request cannot change what a library keeps" in r.text, r.text
        r = client.post("/v1/retrieve", json={**query, "mode": "economy", "recipe": {"mode": "hybrid"}}, headers=headers)
        assert r.status_code == 400 and "differ" in r.text
