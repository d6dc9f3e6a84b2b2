"""``OpenAIEmbeddingBackend``: embeddings from the OpenAI API (or any compatible endpoint).

Uses the official ``openai`` SDK (``pip install 'ragspine[openai]'``). The API key and base
URL come from the SDK's own variables (``OPENAI_API_KEY``, ``OPENAI_BASE_URL``) unless given.
Texts are sent in batches of ``batch_size``; the answer is reordered by ``index``. Every
SDK error is wrapped in :class:`BackendError`.
"""

from __future__ import annotations

from typing import Any

from ragspine.errors import BackendError, ConfigError, MissingDependencyError

DEFAULT_OPENAI_MODEL = "text-embedding-3-small"
_KNOWN_DIMS = {"text-embedding-3-small": 1536, "text-embedding-3-large": 3072, "text-embedding-ada-002": 1536}


class OpenAIEmbeddingBackend:
    languages = None  # multilingual

    def __init__(
        self,
        model: str = DEFAULT_OPENAI_MODEL,
        *,
        dimensions: int | None = None,
        client: Any = None,
        api_key: str | None = None,
        base_url: str | None = None,
        batch_size: int = 256,
        **client_kwargs: Any,
    ) -> None:
        if client is None:
            try:
                import openai
            except ImportError:
                raise MissingDependencyError("openai", "openai", "the OpenAI embedding backend") from None
            try:
                client = openai.OpenAI(api_key=api_key, base_url=base_url, **client_kwargs)
            except openai.OpenAIError as exc:  # e.g. no API key: a setting, not an outage
                raise ConfigError(f"cannot configure the OpenAI client (set OPENAI_API_KEY or api_key=): {exc}") from exc
        self.client = client
        self.model = model
        self.dimensions = dimensions
        self.batch_size = batch_size
        self.dim = dimensions or _KNOWN_DIMS.get(model)
        self.model_id = f"openai:{model}" + (f":{dimensions}" if dimensions else "")

    def embed_texts(self, texts: list[str]) -> list[list[float]]:
        out: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start : start + self.batch_size])
            kwargs: dict[str, Any] = {"model": self.model, "input": batch}
            if self.dimensions:
                kwargs["dimensions"] = self.dimensions
            try:
                response = self.client.embeddings.create(**kwargs)
            except Exception as exc:
                raise BackendError(f"OpenAI embeddings request failed: {exc}") from exc
            data = sorted(response.data, key=lambda item: item.index)
            if len(data) != len(batch):
                raise BackendError(f"OpenAI returned {len(data)} embeddings for {len(batch)} texts")
            out.extend(list(map(float, item.embedding)) for item in data)
        if out and self.dim is None:
            self.dim = len(out[0])
        return out
