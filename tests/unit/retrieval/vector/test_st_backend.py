"""SentenceTransformerEmbeddingBackend with an injected model; missing dependency; qwen3 factory."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from ragspine.errors import BackendError, MissingDependencyError
from ragspine.retrieval.vector.embedding_backends import make_embedding_backend
from ragspine.retrieval.vector.st_backend import (
    DEFAULT_ST_MODEL,
    QWEN3_MODEL,
    SentenceTransformerEmbeddingBackend,
    qwen3_backend,
)


class FakeModel:
    def __init__(self, dim: int = 3) -> None:
        self.dim = dim
        self.calls: list[tuple[list[str], dict]] = []

    def encode(self, texts, **kwargs):
        self.calls.append((list(texts), kwargs))
        return np.asarray([[float(len(t)), 1.0, 0.0][: self.dim] for t in texts], dtype=np.float32)

    def get_sentence_embedding_dimension(self):
        return self.dim


def test_injected_model_encodes_with_the_right_options():
    model = FakeModel()
    backend = SentenceTransformerEmbeddingBackend(model=model, batch_size=7)
    out = backend.embed_texts(["a", "abc"])
    assert out == [[1.0, 1.0, 0.0], [3.0, 1.0, 0.0]]
    assert all(type(x) is float for v in out for x in v)
    (texts, kwargs), = model.calls
    assert texts == ["a", "abc"]
    assert kwargs["batch_size"] == 7
    assert kwargs["normalize_embeddings"] is True
    assert kwargs["convert_to_numpy"] is True
    assert kwargs["show_progress_bar"] is False
    assert backend.dim == 3
    assert backend.model_id == f"st:{DEFAULT_ST_MODEL}"


def test_normalize_can_be_turned_off_and_empty_input_skips_the_model():
    model = FakeModel()
    backend = SentenceTransformerEmbeddingBackend(model=model, normalize=False)
    assert backend.embed_texts([]) == []
    assert model.calls == []
    backend.embed_texts(["x"])
    assert model.calls[0][1]["normalize_embeddings"] is False


def test_missing_sentence_transformers_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    backend = SentenceTransformerEmbeddingBackend("some/model")  # lazy: construction is fine
    with pytest.raises(MissingDependencyError) as info:
        backend.embed_texts(["x"])
    assert "pip install 'ragspine[sentence-transformers]'" in str(info.value)
    assert isinstance(info.value, ImportError)


def fake_st_module(monkeypatch, factory) -> list:
    made = []
    module = types.ModuleType("sentence_transformers")

    def SentenceTransformer(name, device=None):  # noqa: N802
        made.append((name, device))
        return factory(name)

    module.SentenceTransformer = SentenceTransformer
    monkeypatch.setitem(sys.modules, "sentence_transformers", module)
    return made


def test_model_loads_lazily_once_with_name_and_device(monkeypatch):
    made = fake_st_module(monkeypatch, lambda name: FakeModel(dim=2))
    backend = SentenceTransformerEmbeddingBackend("org/model", device="cpu")
    assert made == []
    backend.embed_texts(["ab"])
    backend.embed_texts(["abc"])
    assert made == [("org/model", "cpu")]
    assert backend.dim == 2


def test_model_load_failure_is_a_backend_error(monkeypatch):
    def broken(name):
        raise OSError(f"cannot find {name}")

    fake_st_module(monkeypatch, broken)
    with pytest.raises(BackendError, match="org/missing"):
        SentenceTransformerEmbeddingBackend("org/missing").embed_texts(["x"])


def test_qwen3_factory_uses_qwen3(monkeypatch):
    made = fake_st_module(monkeypatch, lambda name: FakeModel())
    backend = qwen3_backend()
    assert backend.model_name == QWEN3_MODEL == "Qwen/Qwen3-Embedding-0.6B"
    assert backend.model_id == "st:Qwen/Qwen3-Embedding-0.6B"
    backend.embed_texts(["x"])
    assert made == [("Qwen/Qwen3-Embedding-0.6B", None)]
    via_factory = make_embedding_backend("qwen3", device="cuda")
    assert via_factory.model_name == QWEN3_MODEL and via_factory.device == "cuda"
    assert qwen3_backend(model_name="other/model").model_name == "other/model"
