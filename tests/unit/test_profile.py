"""``Profile`` (ragspine/profile.py): one checked merge, a JSON form, named profiles that
settings override field by field, and a library queried with the recipe it was built with."""

from __future__ import annotations

import json
import sqlite3

import pytest

from ragspine.config import SETTINGS, load_settings
from ragspine.errors import ConfigError
from ragspine.profile import INDEX_FIELDS, PROFILES, UNSET, Profile, named_profile, read_recipe, recipe_json
from ragspine.retrieval.ranking import Ranking
from ragspine.stack import Stack, describe_profile
from tests.helpers import run_cli


def test_no_profile_is_the_seed_default_byte_for_byte():
    none, seed = load_settings({}), load_settings({"RAGSPINE_PROFILE": "seed"})
    assert none.profile is None and seed.profile == "seed"
    assert none.replace(profile="seed") == seed  # every other setting identical
    assert Profile.from_settings(none) == Profile() == PROFILES["seed"].profile
    for name, setting in SETTINGS.items():  # the seed profile is each setting's own default
        if name in Profile().settings_values():
            assert Profile().settings_values()[name] == setting.default, name


def test_override_is_checked_canonical_and_leaves_unset_alone():
    p = Profile().override(reranker="none", fusion_weights="vector=0.5, bm25=1", chunker=UNSET, transform="hyde", fanout="2")
    assert p.ranking.fusion_weights == "vector=0.5,bm25=1" and p.chunker == "default"
    assert p.reasoning.transform == "hyde" and p.reasoning.fanout == 2
    assert p.override(fusion_weights=None).ranking.fusion_weights is None  # None is a value (the seed's RRF)
    for bad in ({"rerankr": "colbert"}, {"reranker": "nope"}, {"rerank_depth": 0}, {"chunk_chars": -1},
                {"chunk_packing": "zip"}, {"contextual": "maybe"}, {"mode": "fast"}, {"corrective": "perhaps"}, {"fanout": 9}):
        with pytest.raises(ConfigError):
            Profile().override(**bad)
    with pytest.raises(ConfigError, match="rerankr.*known: mode"):
        Profile().override(rerankr="x")


@pytest.mark.parametrize("name", list(PROFILES))
def test_every_named_profile_round_trips_through_json(name):
    profile = PROFILES[name].profile
    assert Profile.from_json(profile.to_json()) == profile
    assert Profile.from_json(profile.dumps()) == profile
    assert read_recipe(recipe_json(profile, name)) == (name, profile)
    assert Profile.from_json({"ranking": {"reranker": "colbert"}}, base=profile) == profile.override(reranker="colbert")


def test_from_json_refuses_unknown_fields():
    for bad in ({"chunkr": "default"}, {"ranking": {"transform": "hyde"}}, {"reasoning": 3}, "[1]", "{not json"):
        with pytest.raises(ConfigError):
            Profile.from_json(bad)


def test_a_named_profile_is_overridden_field_by_field():
    quality = load_settings({"RAGSPINE_PROFILE": "quality"})
    assert Profile.from_settings(quality) == PROFILES["quality"].profile
    mixed = load_settings({"RAGSPINE_PROFILE": "quality", "RAGSPINE_RERANKER": "colbert", "RAGSPINE_CHUNK_CHARS": "900"})
    assert Profile.from_settings(mixed) == PROFILES["quality"].profile.override(reranker="colbert", chunk_chars=900)
    assert mixed.parent_chars == 4 * 900  # a derived default follows the profile's budget
    assert describe_profile(mixed) == "quality, overridden: chunk_chars=900, reranker='colbert'"
    assert describe_profile(load_settings({})) == "seed (default)"
    with pytest.raises(ConfigError, match="unknown profile 'fast'.*seed, economy"):
        load_settings({"RAGSPINE_PROFILE": "fast"})
    assert named_profile("Multilingual").name == "multilingual"


def test_economy_profile_uses_no_model():
    settings = load_settings({"RAGSPINE_PROFILE": "economy"})
    with Stack(settings) as stack:
        assert not stack.mode.uses_embeddings and stack.embedding_backend is None


def test_index_mismatch_names_both_values_and_the_fix():
    built = Profile(chunk_chars=1500)
    assert built.index_mismatch(built.override(reranker="colbert", mode="economy")) is None
    for name in INDEX_FIELDS:
        other = {"embedding": "e5", "chunker": "layout", "chunk_chars": 480, "chunk_packing": "unit", "contextual": "header"}[name]
        problem = built.index_mismatch(built.override(**{name: other}))
        assert problem is not None and name in problem and repr(other) in problem and "re-ingest" in problem


# -- a library is queried with the recipe it was built with (the CLI keeps it in the database) ------------


@pytest.fixture
def docs(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "alpha.md").write_text("---\ntitle: Alpha reactor\n---\nThe core runs at 300 kelvin in the north wing.\n")
    (folder / "beta.md").write_text("---\ntitle: Beta pump\n---\nThe pump moves water from the river to the core.\n")
    return folder


def _query(capsys, db, *extra):
    code, out, err = run_cli(capsys, "--db", str(db), "query", "which reactor core runs at 300 kelvin", "--library", "lib", "--json", *extra)
    return code, (json.loads(out) if code == 0 else None), err


def test_a_library_is_queried_with_its_own_embedding_and_header(capsys, monkeypatch, tmp_path, docs):
    db = tmp_path / "lib.db"
    monkeypatch.setenv("RAGSPINE_EMBEDDING", "deterministic")
    monkeypatch.setenv("RAGSPINE_CONTEXTUAL", "header")
    code, _, err = run_cli(capsys, "--db", str(db), "ingest", str(docs), "--library", "lib")
    assert code == 0, err
    code, built_with, err = _query(capsys, db)
    assert code == 0, err
    monkeypatch.delenv("RAGSPINE_EMBEDDING")
    monkeypatch.delenv("RAGSPINE_CONTEXTUAL")
    code, plain, err = _query(capsys, db)  # no variable: the library's recipe, not the defaults
    assert code == 0, err
    assert "no vector" not in err and plain == built_with
    assert any(s["scores"]["vector"] > 0 for s in plain)  # its deterministic vectors were used
    monkeypatch.setenv("RAGSPINE_CHUNK_CHARS", "300")  # asks for other chunks: refused, one line
    code, _, err = _query(capsys, db)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "library 'lib': it was built with chunk_chars=480, and this query asks for 300" in err and "RAGSPINE_CHUNK_CHARS" in err
    monkeypatch.delenv("RAGSPINE_CHUNK_CHARS")
    monkeypatch.setenv("RAGSPINE_EMBEDDING", "onnx")
    code, _, err = _query(capsys, db)
    assert code == 2 and "embedding='deterministic'" in err
    monkeypatch.delenv("RAGSPINE_EMBEDDING")
    code, economy, err = _query(capsys, db, "--mode", "economy")  # a query-time choice: allowed
    assert code == 0 and all(s["scores"]["vector"] == 0 for s in economy)


def test_a_header_asked_of_a_library_built_without_is_refused(capsys, monkeypatch, tmp_path, docs):
    db = tmp_path / "lib.db"
    assert run_cli(capsys, "--db", str(db), "--mode", "economy", "ingest", str(docs), "--library", "lib")[0] == 0
    code, _, err = _query(capsys, db, "--contextual", "header")
    assert code == 2 and "it was built with contextual='none', and this query asks for 'header'" in err


def test_another_named_profile_at_query_time_is_checked_against_the_library(capsys, tmp_path, docs):
    db = tmp_path / "lib.db"
    assert run_cli(capsys, "--db", str(db), "--profile", "economy", "ingest", str(docs), "--library", "lib")[0] == 0
    code, by_default, err = _query(capsys, db)
    assert code == 0, err
    code, _, err = _query(capsys, db, "--profile", "seed")
    assert code == 2 and "library 'lib': it was built with embedding='none', and this query asks for 'auto'" in err
    code, again, err = _query(capsys, db, "--profile", "economy")
    assert code == 0 and again == by_default


def test_front_matter_chunkers_cut_at_the_librarys_budget(capsys, tmp_path):
    """A file's own ``chunker:`` is built with the library's recorded budget, not the configured one."""
    folder = tmp_path / "docs"
    folder.mkdir()
    long = "\n\n".join(f"Paragraph {i} of the handbook says the reactor core runs at {300 + i} kelvin in the north wing." for i in range(30))
    (folder / "a.md").write_text(long)
    (folder / "b.md").write_text("---\nchunker: layout\n---\n" + long)
    db = tmp_path / "lib.db"
    assert run_cli(capsys, "--db", str(db), "--profile", "economy", "ingest", str(folder / "a.md"), "--library", "lib")[0] == 0
    assert run_cli(capsys, "--db", str(db), "--mode", "economy", "ingest", str(folder / "b.md"), "--library", "lib")[0] == 0
    from ragspine.stores.sqlite import SQLiteDatabase

    database = SQLiteDatabase(db)
    try:
        lengths = {d: max(len(c.text) for c in database.chunk_store("lib").iter_chunks(doc_id=d)) for d in ("a.md", "b.md")}
    finally:
        database.close()
    assert lengths["a.md"] > 480 and lengths["b.md"] > 480  # both at the library's 1,500 characters


def test_a_library_without_a_recorded_recipe_uses_the_configured_one(tmp_path):
    settings = load_settings({"RAGSPINE_CHUNK_STORE": str(tmp_path / "old.db"), "RAGSPINE_RETRIEVAL_MODE": "economy"})
    with Stack(settings) as stack:
        stack.ensure_library("old")
        assert stack.recorded_profile("old") is None
        assert stack.profile_for("old") == stack.profile
        stack.record_profile("old", Profile(mode="economy", chunk_chars=900))
        assert stack.recorded_profile("old") == Profile(mode="economy", chunk_chars=900)
        assert stack.pipeline("old").chunker is not None


def test_an_older_sqlite_catalog_gains_the_profile_column(tmp_path):
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE library (library_id TEXT PRIMARY KEY, description TEXT NOT NULL DEFAULT '',"
                 " created_at TEXT NOT NULL DEFAULT '')")
    conn.execute("INSERT INTO library VALUES ('lib', 'kept', '2026-01-01')")
    conn.commit()
    conn.close()
    from ragspine.stores.sqlite import SQLiteDatabase

    db = SQLiteDatabase(path)
    try:
        assert db.library_profile("lib") is None
        db.set_library_profile("lib", recipe_json(Profile(), "seed"))
        assert read_recipe(db.library_profile("lib")) == ("seed", Profile())
        assert db.get_library("lib").description == "kept"
    finally:
        db.close()


def test_ranking_is_folded_in():
    assert isinstance(Profile().ranking, Ranking) and Profile().choice("rerank_depth") == 50
