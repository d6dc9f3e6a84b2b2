"""``SentenceTransformerEmbeddingBackend``: any sentence-transformers model (e.g. Qwen3).

``pip install 'ragspine[sentence-transformers]'`` (pulls PyTorch). The model loads lazily
on first use; pass ``model=`` to inject an already-loaded model (or a test double with an
``encode`` method).
"""

from __future__ import annotations

from typing import Any

from ragspine.errors import BackendError, MissingDependencyError

DEFAULT_ST_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
QWEN3_MODEL = "Qwen/Qwen3-Embedding-0.6B"


class SentenceTransformerEmbeddingBackend:
    languages = None  # depends on the model; the gate trusts it

    def __init__(
        self,
        model_name: str = DEFAULT_ST_MODEL,
        *,
        model: Any = None,
        device: str | None = None,
        batch_size: int = 32,
        normalize: bool = True,
    ) -> None:
        self.model_name = model_name
        self.model_id = f"st:{model_name}"
        self.device = device
        self.batch_size = batch_size
        self.normalize = normalize
        self._model = model

    @property
    def model(self) -> Any:
        if self._model is None:
            try:
                from sentence_transformers import SentenceTransformer
            except ImportError:
                raise MissingDependencyError(
                    "sentence-transformers", "sentence-transformers", f"the {self.model_name} backend"
                ) from None
            try:
                self._model = SentenceTransformer(self.model_name, device=self.device)
            except Exception as exc:
                raise BackendError(f"cannot load sentence-transformers model {self.model_name!r}: {exc}") from exc
        return self._model

    @property
    def dim(self) -> int | None:
        """The vector size once the model is loaded (``None`` before: reading it must not
        load, or download, the model)."""
        getter = getattr(self._model, "get_sentence_embedding_dimension", None)
        return int(getter()) if callable(getter) and getter() else None

    def embed_texts(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        vectors = self.model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=self.normalize,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return [list(map(float, v)) for v in vectors]


def qwen3_backend(**kwargs: Any) -> SentenceTransformerEmbeddingBackend:
    kwargs.setdefault("model_name", QWEN3_MODEL)
    return SentenceTransformerEmbeddingBackend(**kwargs)
