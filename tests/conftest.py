"""Shared fixtures. No fixture opens a connection at import time."""

from __future__ import annotations

import os

import pytest

from ragspine.retrieval.chunking.sqlite_store import SQLiteDatabase


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path, monkeypatch):
    """Tests never read the developer's RAGSPINE_* variables or write to ~/.local or ~/.cache."""
    for key in list(os.environ):
        if key.startswith("RAGSPINE_") and key not in ("RAGSPINE_CI", "RAGSPINE_REQUIRE_BACKENDS") and not key.startswith("RAGSPINE_TEST_"):
            monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("RAGSPINE_CACHE_DIR", str(tmp_path.parent / "ragspine-cache"))


@pytest.fixture
def sqlite_db(tmp_path):
    db = SQLiteDatabase(tmp_path / "chunks.db")
    db.init_schema()
    yield db
    db.close()


@pytest.fixture
def store(sqlite_db):
    """A SQLite chunk store for library ``lib-a``."""
    return sqlite_db.chunk_store("lib-a")


@pytest.fixture(scope="session")
def onnx_backend(tmp_path_factory):
    """The packaged offline MiniLM model (the test command installs ``[embed-onnx]``)."""
    from ragspine.retrieval.vector.onnx_backend import OnnxEmbeddingBackend

    return OnnxEmbeddingBackend(cache_dir=tmp_path_factory.getbasetemp() / "ragspine-cache")
