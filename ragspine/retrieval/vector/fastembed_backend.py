"""``FastEmbedModelBackend`` (``RAGSPINE_EMBEDDING=fastembed_model``): any model fastembed knows,
by name.

``RAGSPINE_FASTEMBED_MODEL`` names it (``fastembed.TextEmbedding.list_supported_models()``: e.g.
``BAAI/bge-small-en-v1.5``, ``intfloat/multilingual-e5-large``); fastembed downloads it from the
Hugging Face hub at first use where the hub is reachable, or ``RAGSPINE_FASTEMBED_DIR`` gives a
local copy of its files (then nothing is downloaded). The vectors' space is
``fastembed:<name>`` (never mixed with another model's). Queries go through fastembed's
``query_embed`` (a model's query prefix, e.g. e5's ``query:``), chunks through ``embed``.
``RAGSPINE_FASTEMBED_LANGUAGES`` tells the dense gate what it reads (``en``, ``multilingual``, or a
comma list; unset: every language — set ``en`` for an English model, or Chinese and Japanese
queries get its meaningless vectors fused in).
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ragspine.errors import BackendError, ConfigError
from ragspine.retrieval.vector.embedding_backends import require_onnx

if TYPE_CHECKING:
    from ragspine.config import Settings

NO_MODEL = "RAGSPINE_EMBEDDING=fastembed_model needs RAGSPINE_FASTEMBED_MODEL: a fastembed model name, e.g. BAAI/bge-small-en-v1.5"


class FastEmbedModelBackend:
    """See the module docstring. Loads the model at first use."""

    def __init__(
        self, model_name: str | None = None, *, model_dir: str | os.PathLike[str] | None = None,
        languages: Sequence[str] | None = None, threads: int | None = None, batch_size: int = 64,
    ) -> None:
        require_onnx()
        if not model_name:
            raise ConfigError(NO_MODEL)
        self.model_name = model_name
        self.model_dir = str(model_dir) if model_dir else None
        self.languages = tuple(languages) if languages else None
        self.threads = threads
        self.batch_size = batch_size
        self.model_id = f"fastembed:{model_name}"
        self.dim: int | None = self._described_dim()
        self._model: Any = None
        self._lock = threading.Lock()

    @classmethod
    def from_settings(
        cls, settings: Settings, model_name: str | None = None, *, model_dir: str | os.PathLike[str] | None = None,
        languages: Sequence[str] | None = None, threads: int | None = None, batch_size: int = 64,
    ) -> FastEmbedModelBackend:
        """The backend of ``settings`` when ``model_name`` is not given: ``RAGSPINE_FASTEMBED_MODEL``,
        ``RAGSPINE_FASTEMBED_DIR`` (unless ``model_dir``) and ``RAGSPINE_FASTEMBED_LANGUAGES``
        (unless ``languages``)."""
        if model_name is None:
            s = settings
            model_name, model_dir = s.fastembed_model, model_dir or s.fastembed_dir
            if languages is None and s.fastembed_languages:
                languages = [x.strip() for x in s.fastembed_languages.split(",") if x.strip()]
        return cls(model_name, model_dir=model_dir, languages=languages, threads=threads, batch_size=batch_size)

    def __repr__(self) -> str:
        return f"FastEmbedModelBackend({self.model_name!r})"

    def _described_dim(self) -> int | None:
        from fastembed import TextEmbedding

        for model in TextEmbedding.list_supported_models():
            if str(model.get("model", "")).lower() == self.model_name.lower():
                return int(model["dim"])
        return None

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                from fastembed import TextEmbedding

                options: dict[str, Any] = {"threads": self.threads}
                if self.model_dir:
                    os.environ.setdefault("HF_HUB_OFFLINE", "1")
                    options["specific_model_path"] = self.model_dir
                try:
                    self._model = TextEmbedding(self.model_name, **options)
                except Exception as exc:
                    where = self.model_dir or "the Hugging Face hub (offline? give RAGSPINE_FASTEMBED_DIR a local copy)"
                    raise BackendError(f"cannot load fastembed model {self.model_name!r} from {where}: {exc}") from exc
            return self._model

    def embed_texts(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        vectors = np.asarray(list(self._load().embed(list(texts), batch_size=self.batch_size)), dtype=np.float32)
        self.dim = int(vectors.shape[1])
        out: list[list[float]] = vectors.tolist()
        return out

    def embed_query(self, text: str) -> list[float]:
        model = self._load()
        vector = next(iter(model.query_embed(text))) if hasattr(model, "query_embed") else next(iter(model.embed([text])))
        out: list[float] = np.asarray(vector, dtype=np.float32).tolist()
        return out
