"""``OnnxTextModel``: a transformer ONNX graph and its ``tokenizer.json``, run with onnxruntime.

The model rerankers share it: the cross-encoder reads a relevance logit per (query, passage)
pair, the late-interaction reranker reads per-token states (``last_hidden_state``).

A model directory holds ``model.onnx`` and ``tokenizer.json`` (the layout of a Hugging Face
export: ``optimum-cli export onnx --model cross-encoder/ms-marco-MiniLM-L-6-v2 DIR`` writes
it). The graph's inputs are read from the model: ``input_ids`` and ``attention_mask``
always, ``token_type_ids`` when the graph has it (BERT-style pair segments come from the
tokenizer's own post-processor). Texts are truncated to ``max_tokens`` word pieces
(longest-first for pairs), batches are padded to their longest row and sorted by length so
that little padding is computed; a row's output never depends on its batch. The session is the
process's one for that file (:func:`ragspine.retrieval.onnx_session.shared_session`): the colbert
reranker on the packaged MiniLM runs in the dense embedder's session.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np

from ragspine.errors import BackendError, ConfigError
from ragspine.retrieval.onnx_session import shared_session
from ragspine.retrieval.vector.embedding_backends import require_onnx

DEFAULT_MAX_TOKENS = 256


def pad_batches(encodings: Sequence[Any], batch_size: int) -> Iterator[tuple[list[int], dict[str, np.ndarray]]]:
    """``(row indices, {"input_ids", "attention_mask", "token_type_ids"})`` per batch of
    tokenizer encodings, rows sorted by length and padded to the batch's longest."""
    order = sorted(range(len(encodings)), key=lambda i: len(encodings[i].ids))
    for b in range(0, len(order), batch_size):
        rows = order[b:b + batch_size]
        width = max(len(encodings[i].ids) for i in rows)
        feed = {name: np.zeros((len(rows), width), dtype=np.int64) for name in ("input_ids", "attention_mask", "token_type_ids")}
        for r, i in enumerate(rows):
            enc, n = encodings[i], len(encodings[i].ids)
            feed["input_ids"][r, :n] = enc.ids
            feed["attention_mask"][r, :n] = 1
            feed["token_type_ids"][r, :n] = enc.type_ids
        yield rows, feed


class OnnxTextModel:
    """Lazily loaded (see the module docstring); thread-safe."""

    def __init__(
        self, model_dir: str | os.PathLike[str], *, max_tokens: int = DEFAULT_MAX_TOKENS, batch_size: int = 32, threads: int | None = None
    ) -> None:
        require_onnx()
        if max_tokens < 8:
            raise ValueError(f"max_tokens must be >= 8, got {max_tokens}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.model_dir = Path(model_dir)
        missing = [n for n in ("model.onnx", "tokenizer.json") if not (self.model_dir / n).is_file()]
        if missing:
            raise ConfigError(f"model directory {self.model_dir} lacks {', '.join(missing)}: give a directory with model.onnx and tokenizer.json")
        self.max_tokens = max_tokens
        self.batch_size = batch_size
        self.threads = threads
        self._session: Any = None
        self._tokenizer: Any = None
        self._inputs: tuple[str, ...] = ()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"OnnxTextModel({str(self.model_dir)!r}, max_tokens={self.max_tokens})"

    def _load(self) -> tuple[Any, Any]:
        tokenizer = self.tokenizer()
        with self._lock:
            if self._session is None:
                try:
                    session = shared_session(self.model_dir / "model.onnx", self.threads)
                except Exception as exc:
                    raise BackendError(f"cannot load the ONNX model in {self.model_dir}: {exc}") from exc
                names = tuple(i.name for i in session.get_inputs())
                for needed in ("input_ids", "attention_mask"):
                    if needed not in names:
                        raise BackendError(f"the ONNX model in {self.model_dir} has no {needed!r} input (inputs: {', '.join(names)})")
                self._inputs = names
                self._session = session
            return self._session, tokenizer

    def tokenizer(self) -> Any:
        """The tokenizer alone (the gate's unknown-piece share needs no model session: a query whose
        candidates are all stored never loads the model)."""
        with self._lock:
            if self._tokenizer is None:
                from tokenizers import Tokenizer

                try:
                    tokenizer = Tokenizer.from_file(str(self.model_dir / "tokenizer.json"))
                except Exception as exc:
                    raise BackendError(f"cannot load the tokenizer in {self.model_dir}: {exc}") from exc
                tokenizer.no_padding()
                tokenizer.enable_truncation(self.max_tokens)
                self._tokenizer = tokenizer
            return self._tokenizer

    def unknown_token_share(self, texts: Sequence[str]) -> list[float]:
        """Share of each text's word pieces the vocabulary maps to ``[UNK]`` (0 without one)."""
        tokenizer = self.tokenizer()
        unk = tokenizer.token_to_id("[UNK]")
        shares = []
        for enc in tokenizer.encode_batch(list(texts), add_special_tokens=False):
            shares.append(0.0 if unk is None or not enc.ids else sum(i == unk for i in enc.ids) / len(enc.ids))
        return shares

    def _batches(self, encodings: list[Any]) -> Iterator[tuple[list[int], dict[str, np.ndarray]]]:
        for rows, feed in pad_batches(encodings, self.batch_size):
            if "token_type_ids" not in self._inputs:
                del feed["token_type_ids"]
            yield rows, feed

    def pair_logits(self, query: str, texts: Sequence[str]) -> np.ndarray:
        """One relevance logit per ``(query, text)`` pair: the graph's first output, its last
        column when it has several (``[batch, 1]`` or ``[batch, 2]`` classifiers)."""
        session, tokenizer = self._load()
        out = np.zeros(len(texts), dtype=np.float32)
        if not texts:
            return out
        encodings = tokenizer.encode_batch([(query, t) for t in texts])
        for rows, feed in self._batches(encodings):
            logits = np.asarray(session.run(None, feed)[0], dtype=np.float32)
            logits = logits.reshape(len(rows), -1)[:, -1]
            out[rows] = logits
        return out

    def token_states(self, texts: Sequence[str], *, skip_special: bool = True) -> list[np.ndarray]:
        """Per text, ``(tokens, dim)`` float32 rows of ``last_hidden_state`` (the graph's first
        output) for its real tokens — padding dropped, and the special tokens (``[CLS]``,
        ``[SEP]``) too unless ``skip_special`` is false — L2-normalized per token."""
        session, tokenizer = self._load()
        out: list[np.ndarray] = [np.zeros((0, 0), dtype=np.float32)] * len(texts)
        if not texts:
            return out
        encodings = tokenizer.encode_batch(list(texts))
        for rows, feed in self._batches(encodings):
            states = np.asarray(session.run(None, feed)[0], dtype=np.float32)
            if states.ndim != 3:
                raise BackendError(f"the ONNX model in {self.model_dir} gives {states.ndim}-d output, not token states [batch, tokens, dim]")
            for r, i in enumerate(rows):
                enc = encodings[i]
                vecs = states[r, :len(enc.ids)]
                if skip_special:
                    vecs = vecs[np.asarray(enc.special_tokens_mask, dtype=bool) == 0]
                norms = np.linalg.norm(vecs, axis=1, keepdims=True)
                out[i] = vecs / np.maximum(norms, 1e-12)
        return out
