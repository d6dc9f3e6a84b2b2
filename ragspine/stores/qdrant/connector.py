"""``RAGSPINE_VECTOR_STORE=qdrant...``: one ``QdrantClient`` for every library's store.

Values: ``qdrant`` (local mode, files under the data dir), ``qdrant::memory:`` (local mode in
memory), ``qdrant:/path`` (local mode under a folder), ``http(s)://host:6333`` or
``qdrant+http(s)://...`` (a Qdrant server; key from ``RAGSPINE_QDRANT_API_KEY``). Light:
``qdrant_client`` is imported when the client is made.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragspine.config import Settings
    from ragspine.stores.qdrant.store import QdrantVectorStore
    from ragspine.stores.registry import SpecContext, StoreSpec


class QdrantConnector:
    """See the module docstring."""

    @classmethod
    def parse(cls, value: str, context: SpecContext) -> StoreSpec:
        from ragspine.stores.registry import StoreSpec

        v, low = value.strip(), value.strip().lower()
        if low == "qdrant":
            return StoreSpec("qdrant", "path:" + os.path.join(context.data_dir, "qdrant"))
        if low == "qdrant::memory:":
            return StoreSpec("qdrant", "memory:")
        if low.startswith(("qdrant+http://", "qdrant+https://")):
            return StoreSpec("qdrant", v[len("qdrant+") :])
        if low.startswith("qdrant:"):
            return StoreSpec("qdrant", "path:" + os.path.expanduser(v[len("qdrant:") :]))
        return StoreSpec("qdrant", v)  # http(s)://host:6333

    @classmethod
    def from_config(cls, spec: StoreSpec, settings: Settings, database: object = None) -> QdrantConnector:
        return cls(spec, settings)

    def __init__(self, spec: StoreSpec, settings: Settings) -> None:
        self.spec = spec
        self.settings = settings
        self._client: Any = None
        self._lock = threading.Lock()

    @property
    def client(self) -> Any:
        """The shared client, made on first use (local mode opens its folder then)."""
        with self._lock:
            if self._client is None:
                from ragspine.stores.qdrant.client import make_qdrant_client

                target = self.spec.target or "memory:"
                if target == "memory:":
                    self._client = make_qdrant_client(location=":memory:")
                elif target.startswith("path:"):
                    path = target[len("path:") :]
                    os.makedirs(path, exist_ok=True)
                    self._client = make_qdrant_client(path=path)
                else:
                    self._client = make_qdrant_client(target, api_key=self.settings.qdrant_api_key)
            return self._client

    def open(self, library_id: str, *, model_id: str, dim: int) -> QdrantVectorStore:
        client = self.client  # a missing qdrant-client is reported here, naming the extra
        from ragspine.stores.qdrant.store import QdrantVectorStore

        s = self.settings
        return QdrantVectorStore(client, library_id=library_id, model_id=model_id, dim=dim,
                                 exact=s.vector_exact, hnsw_ef=s.hnsw_ef_search)

    def check(self) -> None:
        self.client.get_collections()

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
