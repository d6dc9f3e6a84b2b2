"""Making the client, wrapping driver errors, light imports, and local ↔ server congruence."""

from __future__ import annotations

import random
import subprocess
import sys

import numpy as np
import pytest

from tests.helpers import needs

needs("qdrant_client")

from ragspine.errors import BackendError, ConfigError, MissingDependencyError  # noqa: E402
from ragspine.retrieval.vector.base import VectorRecord  # noqa: E402
from ragspine.stores.qdrant.client import describe_client, is_local, make_qdrant_client  # noqa: E402
from ragspine.stores.qdrant.store import QdrantVectorStore  # noqa: E402
from ragspine.testing.random_filters import random_filter, random_metadata  # noqa: E402
from tests import backends  # noqa: E402
from tests.unit.stores.qdrant.conftest import QdrantEnv, server_env  # noqa: E402


def test_one_of_url_path_location_is_required():
    with pytest.raises(ConfigError, match="exactly one"):
        make_qdrant_client()
    with pytest.raises(ConfigError, match="exactly one"):
        make_qdrant_client("http://localhost:6333", path="/tmp/x")


def test_local_modes(tmp_path):
    for client in (make_qdrant_client(location=":memory:"), make_qdrant_client(path=":memory:")):
        assert is_local(client) and describe_client(client) == "Qdrant local mode (:memory:)"
        client.close()
    client = make_qdrant_client(path=str(tmp_path / "q"))
    try:
        store = QdrantVectorStore(client, library_id="a", model_id="m", dim=2)
        store.upsert([VectorRecord("x", [1.0, 0.0])])
        with pytest.raises(BackendError, match="one client per path"):
            make_qdrant_client(path=str(tmp_path / "q"))
    finally:
        client.close()
    reopened = make_qdrant_client(path=str(tmp_path / "q"))
    assert QdrantVectorStore(reopened, library_id="a", model_id="m", dim=2).versions(["x"]) == {"x": 0}
    reopened.close()


def test_missing_driver_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "qdrant_client", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'ragspine\[qdrant\]'"):
        make_qdrant_client(location=":memory:")


def test_importing_the_package_does_not_import_the_driver():
    code = (
        "import sys, ragspine, ragspine.stores, ragspine.stores.qdrant;"
        "assert 'qdrant_client' not in sys.modules, 'qdrant_client imported';"
        "assert callable(ragspine.stores.qdrant.make_qdrant_client)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_constructor_does_no_io():
    class NoIO:
        def __getattr__(self, name):
            raise AssertionError(f"constructor touched client.{name}")

    store = QdrantVectorStore(NoIO(), library_id="a", model_id="m", dim=4)
    assert store.collection_name.endswith("_d4") and store.library_id == "a"
    with pytest.raises(ConfigError):
        QdrantVectorStore(NoIO(), library_id="", model_id="m", dim=4)


def test_unreachable_server_is_a_backend_error_naming_the_url():
    url = f"http://127.0.0.1:{backends.free_port()}"
    client = make_qdrant_client(url, timeout=2)
    store = QdrantVectorStore(client, library_id="a", model_id="m", dim=4)  # no I/O yet
    with pytest.raises(BackendError) as info:
        store.count()
    message = str(info.value)
    assert url in message and "cannot connect" in message and "RAGSPINE_VECTOR_STORE" in message
    client.close()


def test_local_and_server_give_the_same_answers(qdrant_local_client, qdrant_server_url):
    """Congruence: the same data, queries and random filters on both modes (with a server)."""
    dim = 12
    rng = random.Random(17)
    vectors = np.random.default_rng(17).normal(size=(150, dim))
    records = [
        VectorRecord(f"c{i:03d}", vectors[i].tolist(), f"d{i % 5}", 1, "", random_metadata(rng)) for i in range(150)
    ]
    local = QdrantEnv(qdrant_local_client, "local", "t").store(dim=dim)
    local.upsert(records)
    for server_side in server_env(qdrant_server_url):
        remote = server_side.store(dim=dim)
        remote.upsert(records)
        for n in range(100):
            where = random_filter(rng, unstorable=0.05)
            assert local.ids(where) == remote.ids(where), where.to_list()
            if n % 5 == 0:
                q = vectors[n].tolist()
                a, b = local.query(q, top_k=20, where=where), remote.query(q, top_k=20, where=where)
                assert [h.id for h in a] == [h.id for h in b], where.to_list()
                assert np.allclose([h.score for h in a], [h.score for h in b], atol=1e-6)
