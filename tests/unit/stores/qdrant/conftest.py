"""A ``qdrant`` fixture over both Qdrant modes: every store test runs on local mode here and,
where a server exists (``RAGSPINE_TEST_QDRANT_URL`` or Docker), on the server too — the same
scenario functions, so the two modes stay congruent (qdrant-client's own approach)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

import pytest

from tests import backends


@dataclass
class QdrantEnv:
    client: Any
    mode: str  # "local" | "server"
    prefix: str
    stores: list[Any] = field(default_factory=list)

    def store(self, library_id: str = "lib-a", *, model_id: str = "test-model", dim: int = 8, **kw: Any) -> Any:
        from ragspine.stores.qdrant.store import QdrantVectorStore

        kw.setdefault("exact", True)
        store = QdrantVectorStore(
            self.client, library_id=library_id, model_id=model_id, dim=dim, collection_prefix=self.prefix, **kw
        )
        self.stores.append(store)
        return store


def server_env(url: str) -> Iterator[QdrantEnv]:
    from ragspine.stores.qdrant.client import make_qdrant_client

    client = make_qdrant_client(url)
    env = QdrantEnv(client, "server", backends.collection_prefix())
    try:
        yield env
    finally:
        for collection in client.get_collections().collections:
            if collection.name.startswith(env.prefix + "_"):
                client.delete_collection(collection.name)
        client.close()


@pytest.fixture(params=["local", "server"])
def qdrant(request) -> Iterator[QdrantEnv]:
    if request.param == "local":
        yield QdrantEnv(request.getfixturevalue("qdrant_local_client"), "local", "t")
    else:
        yield from server_env(request.getfixturevalue("qdrant_server_url"))
