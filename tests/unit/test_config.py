"""Settings: the one place RAGSPINE_* variables are read."""

from __future__ import annotations

import dataclasses
import os
import re

import pytest

from ragspine.config import (
    GROUPS,
    SETTINGS,
    LlmSettings,
    RankingSettings,
    RaptorSettings,
    Settings,
    describe,
    load_settings,
    shown_value,
)
from ragspine.errors import ConfigError
from ragspine.retrieval.chunking.chunking import (
    DEFAULT_CHUNK_CHARS,
    DEFAULT_OVERLAP_CHARS,
)
from ragspine.retrieval.fusion import DEFAULT_RRF_K

DEFAULTS = {
    "vector_store": "memory",
    "embedding_cache": "auto",
    "embedding": "auto",
    "embedding_backend": None,
    "retrieval_mode": "auto",
    "library_router": "none",
    "filter_extractor": "none",
    "onnx_model_dir": None,
    "glossary": None,
    "dense_max_unknown_share": 0.30,
    "rrf_k": 60,
    "candidate_k": 100,
    "chunk_chars": 480,
    "overlap_chars": 80,
    "embed_batch_size": 64,
}


def test_defaults(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    settings = load_settings({})
    for name, value in DEFAULTS.items():
        assert settings.value(name) == value, name
    assert settings.chunk_store == os.path.join(str(tmp_path / "data"), "ragspine", "ragspine.db")
    assert settings.cache_dir == os.path.join(str(tmp_path / "cache"), "ragspine")
    assert (settings.chunk_chars, settings.overlap_chars) == (DEFAULT_CHUNK_CHARS, DEFAULT_OVERLAP_CHARS)
    assert settings.ranking.rrf_k == DEFAULT_RRF_K
    assert type(settings.ranking.rrf_k) is int and type(settings.dense_max_unknown_share) is float


def test_default_paths_without_xdg(monkeypatch, tmp_path) -> None:
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    settings = load_settings({})
    assert settings.chunk_store == os.path.join(str(tmp_path), ".local", "share", "ragspine", "ragspine.db")
    assert settings.cache_dir == os.path.join(str(tmp_path), ".cache", "ragspine")


def test_environment_overrides() -> None:
    env = {
        "RAGSPINE_CHUNK_STORE": "/data/My Chunks.db",
        "RAGSPINE_VECTOR_STORE": "QDRANT",
        "RAGSPINE_EMBEDDING_CACHE": "redis://localhost:6379/0",
        "RAGSPINE_EMBEDDING": "ONNX",
        "RAGSPINE_EMBEDDING_BACKEND": "deterministic",
        "RAGSPINE_RETRIEVAL_MODE": " Economy ",
        "RAGSPINE_LIBRARY_ROUTER": "Keyword",
        "RAGSPINE_FILTER_EXTRACTOR": "controlled_vocab",
        "RAGSPINE_ONNX_MODEL_DIR": "/models/MiniLM",
        "RAGSPINE_CACHE_DIR": "/tmp/Cache",
        "RAGSPINE_GLOSSARY": "/etc/glossary.yaml",
        "RAGSPINE_DENSE_MAX_UNKNOWN_SHARE": "0.5",
        "RAGSPINE_RRF_K": " 10 ",
        "RAGSPINE_CANDIDATE_K": "250",
        "RAGSPINE_CHUNK_CHARS": "800",
        "RAGSPINE_OVERLAP_CHARS": "0",
        "RAGSPINE_EMBED_BATCH_SIZE": "16",
    }
    s = load_settings(env)
    assert s.chunk_store == "/data/My Chunks.db"  # paths keep their case
    assert s.vector_store == "qdrant"  # names are lowercased
    assert s.embedding_cache == "redis://localhost:6379/0"
    assert s.embedding == "onnx"
    assert s.embedding_backend == "deterministic"
    assert s.retrieval_mode == "economy"  # and stripped
    assert s.library_router == "keyword"
    assert s.filter_extractor == "controlled_vocab"
    assert s.onnx_model_dir == "/models/MiniLM"
    assert s.cache_dir == "/tmp/Cache"
    assert s.glossary == "/etc/glossary.yaml"
    assert s.dense_max_unknown_share == 0.5
    assert (s.ranking.rrf_k, s.ranking.candidate_k, s.chunk_chars, s.overlap_chars, s.embed_batch_size) == (10, 250, 800, 0, 16)


def test_blank_values_mean_default() -> None:
    s = load_settings({"RAGSPINE_RRF_K": "", "RAGSPINE_VECTOR_STORE": "   "})
    assert s.ranking.rrf_k == 60 and s.vector_store == "memory"


def test_reads_os_environ_by_default(monkeypatch) -> None:
    monkeypatch.setenv("RAGSPINE_CANDIDATE_K", "7")
    monkeypatch.setenv("RAGSPINE_RETRIEVAL_MODE", "bm25")
    s = load_settings()
    assert (s.ranking.candidate_k, s.retrieval_mode) == (7, "bm25")
    assert load_settings({}).ranking.candidate_k == 100  # an explicit mapping is used instead


def test_unrelated_variables_are_ignored() -> None:
    assert load_settings({"RAGSPINE_NOT_A_SETTING": "x", "RRF_K": "3"}).ranking.rrf_k == 60


@pytest.mark.parametrize(
    ("var", "raw"),
    [
        ("RAGSPINE_RRF_K", "ten"),
        ("RAGSPINE_CANDIDATE_K", "1.5"),
        ("RAGSPINE_CHUNK_CHARS", "480chars"),
        ("RAGSPINE_OVERLAP_CHARS", "0x10"),
        ("RAGSPINE_EMBED_BATCH_SIZE", "1e3"),
        ("RAGSPINE_DENSE_MAX_UNKNOWN_SHARE", "thirty percent"),
    ],
)
def test_bad_numbers_raise_config_error_naming_the_variable(var: str, raw: str) -> None:
    with pytest.raises(ConfigError, match=var) as info:
        load_settings({var: raw})
    assert raw in str(info.value)
    assert isinstance(info.value, ValueError)


def test_settings_are_frozen_and_replace_checks_keys() -> None:
    s = load_settings({})
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.chunk_chars = 1  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.ranking.rrf_k = 1  # type: ignore[misc]
    t = s.replace(rrf_k=5, retrieval_mode="bm25", llm_model="m")  # flat names, wherever they nest
    assert (t.ranking.rrf_k, t.retrieval_mode, t.llm.model) == (5, "bm25", "m")
    assert (t.ranking.candidate_k, t.llm.provider) == (s.ranking.candidate_k, s.llm.provider)  # the rest of a group stays
    assert (s.ranking.rrf_k, s.retrieval_mode, s.llm.model) == (60, "auto", None)  # the original is unchanged
    assert s.replace() == s
    with pytest.raises(ConfigError, match="no_such_setting"):
        s.replace(no_such_setting=1)
    with pytest.raises(ConfigError, match="bogus"):
        s.replace(rrf_k=3, bogus=2)
    assert s.as_dict()["rrf_k"] == 60


def _leaves(cls: type, prefix: str = "") -> list[str]:
    """``Settings``' fields, a group's as ``group.attr``."""
    out = []
    for f in dataclasses.fields(cls):
        group = GROUPS.get(f.name) if not prefix else None
        out += _leaves(group, f"{f.name}.") if group is not None else [prefix + f.name]
    return out


def test_every_setting_has_one_place_in_the_settings_and_value_reads_it() -> None:
    places = [f"{s.group}.{s.attr or name}" if s.group else name for name, s in SETTINGS.items()]
    assert sorted(places) == sorted(_leaves(Settings))  # each field is one setting's, each setting has one field
    assert set(GROUPS) == {s.group for s in SETTINGS.values() if s.group} == {"llm", "raptor", "ranking"}
    s = load_settings({"RAGSPINE_LLM_MODEL": "m", "RAGSPINE_RAPTOR": "on", "RAGSPINE_RERANK_DEPTH": "70", "RAGSPINE_CHUNK_CHARS": "600"})
    assert isinstance(s.llm, LlmSettings) and isinstance(s.raptor, RaptorSettings) and isinstance(s.ranking, RankingSettings)
    assert (s.value("llm_model"), s.value("llm"), s.value("raptor"), s.value("rerank_depth"), s.value("chunk_chars")) == (
        "m", "none", True, 70, 600)
    assert (s.llm.model, s.llm.provider, s.raptor.enabled, s.ranking.rerank_depth) == ("m", "none", True, 70)
    assert s.as_dict() == {name: s.value(name) for name in SETTINGS}
    with pytest.raises(ConfigError, match="no_such_setting"):
        s.value("no_such_setting")


def test_registry_and_describe_cover_every_field() -> None:
    names = list(SETTINGS)
    envs = [setting.env for setting in SETTINGS.values()]
    assert len(set(envs)) == len(envs) and all(e.startswith("RAGSPINE_") for e in envs)
    s = load_settings({"RAGSPINE_RRF_K": "12"})
    rows = describe(s)
    assert len(rows) == len(names)
    by_env = {env: (value, help_) for env, value, help_ in rows}
    assert by_env["RAGSPINE_RRF_K"][0] == "12"
    assert all(help_ for _, help_ in by_env.values())


# -- what `ragspine config` masks -----------------------------------------------------------------
#: The credential a setting's name announces: an API key, a token, a password, a secret — not
#: ``RAGSPINE_LLM_MAX_TOKENS`` (a count of tokens) nor ``RAGSPINE_REDIS_PREFIX`` (a key prefix).
CREDENTIAL_NAME = re.compile(r"_(?:API_KEY|TOKEN|PASSWORD|SECRET)$")


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_exactly_the_credentials_are_masked(name: str) -> None:
    setting = SETTINGS[name]
    assert setting.secret == bool(CREDENTIAL_NAME.search(setting.env)), setting.env
    shown = shown_value(name, "s3cr3t-value")
    assert shown == ("***" if setting.secret else "s3cr3t-value"), setting.env
    assert shown_value(name, None) == "None"  # unset is shown as unset, never as ***
    if not setting.secret:  # a URL keeps its address; only its password is masked
        assert shown_value(name, "postgresql://app:pw%40x@db.internal:5432/kb") == "postgresql://app:***@db.internal:5432/kb"
        assert shown_value(name, "redis://:hunter2@cache:6379/0") == "redis://:***@cache:6379/0"
        assert shown_value(name, "https://qdrant:6333?api_key=abc&timeout=5") == "https://qdrant:6333?api_key=***&timeout=5"
        assert shown_value(name, "https://user@host/v1") == "https://user@host/v1"


def test_describe_shows_counts_and_masks_credentials() -> None:
    s = load_settings({
        "RAGSPINE_LLM_MAX_TOKENS": "512", "RAGSPINE_LLM_API_KEY": "sk-live-123", "RAGSPINE_ADMIN_TOKEN": "t0k",
        "RAGSPINE_CHUNK_STORE": "postgresql://app:pw@db/kb", "RAGSPINE_JOB_QUEUE": "redis://:pw@cache:6379/0",
    })
    by_env = {env: value for env, value, _ in describe(s)}
    assert by_env["RAGSPINE_LLM_MAX_TOKENS"] == "512"
    assert (by_env["RAGSPINE_LLM_API_KEY"], by_env["RAGSPINE_ADMIN_TOKEN"], by_env["RAGSPINE_QDRANT_API_KEY"]) == ("***", "***", "None")
    assert by_env["RAGSPINE_CHUNK_STORE"] == "postgresql://app:***@db/kb"
    assert by_env["RAGSPINE_JOB_QUEUE"] == "redis://:***@cache:6379/0"
    assert not any("pw" in value or "sk-live" in value or "t0k" in value for value in by_env.values())


def test_the_parent_bound_defaults_to_four_chunk_budgets_and_holds_a_chunk() -> None:
    assert load_settings({}).parent_chars == 4 * DEFAULT_CHUNK_CHARS
    assert load_settings({"RAGSPINE_CHUNK_CHARS": "300", "RAGSPINE_OVERLAP_CHARS": "30"}).parent_chars == 1200
    assert load_settings({"RAGSPINE_PARENT_CHARS": "5000"}).parent_chars == 5000
    with pytest.raises(ConfigError, match="RAGSPINE_PARENT_CHARS=100: must be at least RAGSPINE_CHUNK_CHARS"):
        load_settings({"RAGSPINE_PARENT_CHARS": "100"})
