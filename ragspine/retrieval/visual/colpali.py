"""``ColPaliVisualEmbedder``: ColPali (or ColQwen2) through ``colpali-engine`` and torch
(``RAGSPINE_VISUAL_EMBEDDER=colpali``, the ``[colpali]`` extra). Opt-in, and meant for a GPU.

The weights are read from a local directory only (``RAGSPINE_VISUAL_MODEL``; nothing is
downloaded at run time): fetch the checkpoint once where a hub is reachable, e.g.
``huggingface-cli download vidore/colpali-v1.3 --local-dir /models/colpali`` (its base model,
PaliGemma, too, where the adapter names it) and point the setting at that directory.
``colqwen2`` checkpoints are the more permissively licensed alternative: the model class is
picked by ``family`` (``colpali`` or ``colqwen2``).

Written against colpali-engine's documented API (``ColPali.from_pretrained``,
``ColPaliProcessor.process_images`` / ``process_queries``, the model's forward giving
L2-normalized multi-vectors); no GPU and no weights exist on the machines this was written on,
so only its missing-dependency path is tested here. Padding rows (attention mask 0) are dropped.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ragspine.errors import BackendError, ConfigError, MissingDependencyError

if TYPE_CHECKING:
    from ragspine.config import Settings

FAMILIES = {"colpali": ("ColPali", "ColPaliProcessor"), "colqwen2": ("ColQwen2", "ColQwen2Processor")}


def _import() -> tuple[Any, Any]:
    try:
        import colpali_engine.models as models  # type: ignore[import-not-found]
        import torch  # type: ignore[import-not-found]
    except ModuleNotFoundError as exc:
        raise MissingDependencyError(exc.name or "colpali_engine", "colpali", "the visual embedder 'colpali'") from None
    return models, torch


class ColPaliVisualEmbedder:
    """See the module docstring."""

    def __init__(self, model_dir: str | os.PathLike[str], *, family: str = "colpali", device: str | None = None,
                 batch_size: int = 4) -> None:
        if family not in FAMILIES:
            raise ConfigError(f"unknown ColPali family {family!r}: {', '.join(FAMILIES)}")
        models, torch = _import()
        self.model_dir = Path(model_dir)
        if not self.model_dir.is_dir():
            raise ConfigError(f"RAGSPINE_VISUAL_MODEL {self.model_dir} is not a directory: download the checkpoint there first"
                              " (nothing is fetched at run time)")
        self.family, self.batch_size = family, batch_size
        self._torch = torch
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        model_cls, processor_cls = (getattr(models, n) for n in FAMILIES[family])
        dtype = torch.bfloat16 if self.device.startswith("cuda") else torch.float32
        try:
            self.model = model_cls.from_pretrained(str(self.model_dir), torch_dtype=dtype, device_map=self.device,
                                                   local_files_only=True).eval()
            self.processor = processor_cls.from_pretrained(str(self.model_dir), local_files_only=True)
        except Exception as exc:
            raise BackendError(f"cannot load the {family} model in {self.model_dir}: {exc}") from exc

    @classmethod
    def from_settings(cls, *, settings: Settings | None = None, model_dir: str | os.PathLike[str] | None = None,
                      family: str = "colpali", device: str | None = None) -> ColPaliVisualEmbedder:
        """The registry's ``colpali`` factory: ``model_dir``, else ``settings.visual_model``."""
        _import()  # the missing extra first: it is the first thing to fix
        model_dir = model_dir or (settings.visual_model if settings is not None else None)
        if not model_dir:
            raise ConfigError("RAGSPINE_VISUAL_EMBEDDER=colpali needs RAGSPINE_VISUAL_MODEL: a local directory of the checkpoint")
        return cls(model_dir, family=family, device=device)

    def __repr__(self) -> str:
        return f"ColPaliVisualEmbedder({str(self.model_dir)!r}, family={self.family!r}, device={self.device!r})"

    def fingerprint(self) -> str:
        digest = hashlib.blake2b(digest_size=8)
        for path in sorted(self.model_dir.glob("*.json")):
            digest.update(path.name.encode() + path.read_bytes())
        return f"{self.family}:{digest.hexdigest()}"

    def _run(self, batch: Any) -> list[np.ndarray]:
        with self._torch.no_grad():
            batch = batch.to(self.model.device)
            out = self.model(**batch).float().cpu().numpy()
        mask = batch["attention_mask"].cpu().numpy().astype(bool)
        rows = []
        for vecs, keep in zip(out, mask, strict=False):
            v = vecs[keep[: len(vecs)]] if keep.shape[0] == vecs.shape[0] else vecs
            rows.append((v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)).astype(np.float32))
        return rows

    def embed_pages(self, images: Sequence[Any]) -> list[np.ndarray]:
        out: list[np.ndarray] = []
        for start in range(0, len(images), self.batch_size):
            out += self._run(self.processor.process_images([im.convert("RGB") for im in images[start:start + self.batch_size]]))
        return out

    def embed_query(self, query: str) -> np.ndarray:
        return self._run(self.processor.process_queries([query]))[0]
