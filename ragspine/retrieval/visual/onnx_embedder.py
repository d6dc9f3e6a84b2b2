"""``OnnxVisualEmbedder``: a visual embedder from a directory of ONNX exports, run on the CPU
with onnxruntime (``RAGSPINE_VISUAL_EMBEDDER=onnx``, ``RAGSPINE_VISUAL_MODEL=<dir>``).

The directory holds::

    page_encoder.onnx   input "pixel_values" float32 [batch, 3, height, width] (RGB, after the
                        normalization below); first output: the patch vectors [batch, patches, dim]
    query/              the query encoder, the ColBERT reranker's layout (model.onnx whose first
                        output is the token vectors, + tokenizer.json): read by
                        :class:`~ragspine.retrieval.rerank.onnx_model.OnnxTextModel`, special
                        tokens dropped
    visual.json         optional: {"image_size": [height, width] (default: the page as rendered),
                        "mean": [r, g, b], "std": [r, g, b] (default 0 and 1: pixels in 0..1),
                        "query_prefix": "" (prepended to every query, e.g. ColPali's "Query: ")}

Both encoders must put queries and pages in one space (as a ColPali-style model trained for
late interaction does); every vector is L2-normalized here. Splitting a real ColPali / ColQwen2
checkpoint into these two graphs is the exporter's work and has not been done offline: what is
tested is this adapter with a tiny model the tests build (``tests/unit/visual``).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ragspine.errors import BackendError, ConfigError
from ragspine.retrieval.onnx_session import shared_session
from ragspine.retrieval.rerank.onnx_model import OnnxTextModel
from ragspine.retrieval.vector.embedding_backends import require_onnx

if TYPE_CHECKING:
    from ragspine.config import Settings

PAGE_ENCODER, QUERY_DIR, CONFIG = "page_encoder.onnx", "query", "visual.json"


def _normalize_rows(vecs: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    out: np.ndarray = (vecs / np.maximum(norms, 1e-12)).astype(np.float32)
    return out


class OnnxVisualEmbedder:
    """See the module docstring. Lazily loaded, thread-safe."""

    def __init__(self, model_dir: str | os.PathLike[str], *, threads: int | None = None, max_query_tokens: int = 64) -> None:
        require_onnx()
        self.model_dir = Path(model_dir)
        if not (self.model_dir / PAGE_ENCODER).is_file():
            raise ConfigError(f"visual model directory {self.model_dir} lacks {PAGE_ENCODER}: give RAGSPINE_VISUAL_MODEL a directory"
                              f" with {PAGE_ENCODER}, {QUERY_DIR}/model.onnx and {QUERY_DIR}/tokenizer.json")
        self.query_model = OnnxTextModel(self.model_dir / QUERY_DIR, max_tokens=max_query_tokens, threads=threads)
        config = self._config()
        size = config.get("image_size")
        self.image_size: tuple[int, int] | None = (int(size[0]), int(size[1])) if size else None
        self.mean = np.asarray(config.get("mean", [0.0, 0.0, 0.0]), dtype=np.float32).reshape(3, 1, 1)
        self.std = np.asarray(config.get("std", [1.0, 1.0, 1.0]), dtype=np.float32).reshape(3, 1, 1)
        if np.any(self.std == 0):
            raise ConfigError(f"{self.model_dir / CONFIG}: std must not be 0")
        self.query_prefix = str(config.get("query_prefix", ""))
        self.threads = threads
        self._session: Any = None
        self._lock = threading.Lock()
        self._fingerprint: str | None = None

    @classmethod
    def from_settings(cls, *, settings: Settings | None = None, model_dir: str | os.PathLike[str] | None = None,
                      threads: int | None = None) -> OnnxVisualEmbedder:
        """The registry's ``onnx`` factory: ``model_dir``, else ``settings.visual_model``."""
        model_dir = model_dir or (settings.visual_model if settings is not None else None)
        if not model_dir:
            raise ConfigError("RAGSPINE_VISUAL_EMBEDDER=onnx needs RAGSPINE_VISUAL_MODEL: the directory of page_encoder.onnx and query/")
        return cls(model_dir, threads=threads)

    def __repr__(self) -> str:
        return f"OnnxVisualEmbedder({str(self.model_dir)!r})"

    def _config(self) -> dict[str, Any]:
        path = self.model_dir / CONFIG
        if not path.is_file():
            return {}
        try:
            config = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigError(f"{path}: not a JSON object: {exc}") from None
        if not isinstance(config, dict):
            raise ConfigError(f"{path}: not a JSON object")
        return config

    def fingerprint(self) -> str:
        if self._fingerprint is None:
            digest = hashlib.blake2b(digest_size=8)
            for path in (self.model_dir / PAGE_ENCODER, self.model_dir / QUERY_DIR / "model.onnx",
                         self.model_dir / QUERY_DIR / "tokenizer.json", self.model_dir / CONFIG):
                if path.is_file():
                    digest.update(path.read_bytes())
            self._fingerprint = f"onnx:{digest.hexdigest()}"
        return self._fingerprint

    def _page_session(self) -> Any:
        with self._lock:
            if self._session is None:
                try:
                    self._session = shared_session(self.model_dir / PAGE_ENCODER, self.threads)
                except Exception as exc:
                    raise BackendError(f"cannot load {self.model_dir / PAGE_ENCODER}: {exc}") from exc
            return self._session

    def _pixels(self, image: Any) -> Any:
        rgb = image.convert("RGB")
        if self.image_size is not None:
            height, width = self.image_size
            rgb = rgb.resize((width, height))
        array = np.asarray(rgb, dtype=np.float32).transpose(2, 0, 1) / 255.0  # [3, h, w]
        return (array - self.mean) / self.std

    def embed_pages(self, images: Sequence[Any]) -> list[np.ndarray]:
        session = self._page_session()
        name = session.get_inputs()[0].name
        out = []
        for image in images:  # one page a run: pages rendered at their own sizes need not share one
            patches = np.asarray(session.run(None, {name: self._pixels(image)[None]})[0], dtype=np.float32)
            if patches.ndim != 3:
                raise BackendError(f"{self.model_dir / PAGE_ENCODER} gives {patches.ndim}-d output, not patch vectors [batch, patches, dim]")
            out.append(_normalize_rows(patches[0]))
        return out

    def embed_query(self, query: str) -> np.ndarray:
        (states,) = self.query_model.token_states([self.query_prefix + query])
        return np.asarray(states, dtype=np.float32)
