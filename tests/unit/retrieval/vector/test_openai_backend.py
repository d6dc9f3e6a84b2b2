"""OpenAIEmbeddingBackend over the real openai SDK, against a fake HTTP server (MockTransport)."""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest

from tests.helpers import needs

needs("openai")

import httpx  # noqa: E402
import openai

from ragspine.errors import BackendError  # noqa: E402
from ragspine.retrieval.vector.embedding_backends import make_embedding_backend  # noqa: E402
from ragspine.retrieval.vector.openai_backend import (  # noqa: E402
    DEFAULT_OPENAI_MODEL,
    OpenAIEmbeddingBackend,
)


def fake_vector(text: str, dim: int) -> list[float]:
    """A vector that identifies its text (so reordering mistakes show)."""
    return [float(len(text)), float(sum(map(ord, text)) % 97)] + [0.5] * (dim - 2)


class FakeEmbeddingsServer:
    """Answers POST /embeddings like the OpenAI API; records every request."""

    def __init__(self, *, reverse: bool = False, status: int = 200, dim: int = 4, drop_one: bool = False) -> None:
        self.requests: list[httpx.Request] = []
        self.bodies: list[dict] = []
        self.reverse = reverse
        self.status = status
        self.dim = dim
        self.drop_one = drop_one

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        body = json.loads(request.content)
        self.bodies.append(body)
        if self.status != 200:
            return httpx.Response(self.status, json={"error": {"message": "boom", "type": "server_error", "code": None}})
        dim = body.get("dimensions") or self.dim
        data = []
        for i, text in enumerate(body["input"]):
            vec = fake_vector(text, dim)
            if body.get("encoding_format") == "base64":
                emb: object = base64.b64encode(np.asarray(vec, dtype=np.float32).tobytes()).decode()
            else:
                emb = vec
            data.append({"object": "embedding", "index": i, "embedding": emb})
        if self.reverse:
            data.reverse()
        if self.drop_one:
            data = data[:-1]
        return httpx.Response(
            200,
            json={"object": "list", "data": data, "model": body["model"], "usage": {"prompt_tokens": 1, "total_tokens": 1}},
        )


def backend_for(server: FakeEmbeddingsServer, **kwargs) -> OpenAIEmbeddingBackend:
    return OpenAIEmbeddingBackend(
        api_key="sk-test",
        base_url="http://fake-openai.test/v1",
        max_retries=0,
        http_client=httpx.Client(transport=httpx.MockTransport(server)),
        **kwargs,
    )


def test_the_sdk_accepts_an_http_client():
    import inspect

    assert "http_client" in inspect.signature(openai.OpenAI.__init__).parameters


def test_request_json_and_result():
    server = FakeEmbeddingsServer()
    backend = backend_for(server, model="text-embedding-3-small", dimensions=8)
    texts = ["alpha", "beta gamma", "供应链"]
    vectors = backend.embed_texts(texts)
    assert len(server.requests) == 1
    req = server.requests[0]
    assert req.method == "POST"
    assert str(req.url) == "http://fake-openai.test/v1/embeddings"
    assert req.headers["authorization"] == "Bearer sk-test"
    body = server.bodies[0]
    assert body["model"] == "text-embedding-3-small"
    assert body["input"] == texts
    assert body["dimensions"] == 8
    np.testing.assert_allclose(vectors, [fake_vector(t, 8) for t in texts], rtol=1e-6)
    assert all(isinstance(x, float) for v in vectors for x in v)
    assert backend.dim == 8
    assert backend.model_id == "openai:text-embedding-3-small:8"


def test_no_dimensions_field_unless_asked():
    server = FakeEmbeddingsServer(dim=5)
    backend = backend_for(server, model="custom-embedder")
    assert backend.dim is None
    backend.embed_texts(["x"])
    assert "dimensions" not in server.bodies[0]
    assert server.bodies[0]["model"] == "custom-embedder"
    assert backend.dim == 5  # learnt from the first answer


def test_default_model():
    server = FakeEmbeddingsServer()
    backend_for(server).embed_texts(["x"])
    assert server.bodies[0]["model"] == DEFAULT_OPENAI_MODEL == "text-embedding-3-small"


def test_batches_by_batch_size_in_order():
    server = FakeEmbeddingsServer()
    backend = backend_for(server, batch_size=3)
    texts = [f"text number {i}" + "x" * i for i in range(8)]
    vectors = backend.embed_texts(texts)
    assert [b["input"] for b in server.bodies] == [texts[0:3], texts[3:6], texts[6:8]]
    np.testing.assert_allclose(vectors, [fake_vector(t, 4) for t in texts], rtol=1e-6)


def test_answer_is_reordered_by_index():
    server = FakeEmbeddingsServer(reverse=True)
    texts = ["a", "bb", "ccc", "dddd"]
    vectors = backend_for(server).embed_texts(texts)
    np.testing.assert_allclose(vectors, [fake_vector(t, 4) for t in texts], rtol=1e-6)


def test_empty_input_sends_nothing():
    server = FakeEmbeddingsServer()
    assert backend_for(server).embed_texts([]) == []
    assert server.requests == []


@pytest.mark.parametrize("status", [500, 401, 429, 400])
def test_http_errors_become_backend_error(status):
    server = FakeEmbeddingsServer(status=status)
    with pytest.raises(BackendError):
        backend_for(server).embed_texts(["x"])


def test_short_answer_is_a_backend_error():
    with pytest.raises(BackendError):
        backend_for(FakeEmbeddingsServer(drop_one=True)).embed_texts(["a", "b"])


def test_connection_failure_is_a_backend_error():
    def refuse(request):
        raise httpx.ConnectError("refused", request=request)

    backend = OpenAIEmbeddingBackend(
        api_key="k", max_retries=0, http_client=httpx.Client(transport=httpx.MockTransport(refuse))
    )
    with pytest.raises(BackendError):
        backend.embed_texts(["x"])


def test_factory_passes_client_kwargs_through():
    server = FakeEmbeddingsServer()
    backend = make_embedding_backend(
        "openai", api_key="k", max_retries=0, http_client=httpx.Client(transport=httpx.MockTransport(server))
    )
    backend.embed_texts(["hello"])
    assert server.bodies[0]["input"] == ["hello"]


def test_base_url_and_key_from_the_sdk_environment(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://env-endpoint.test/v2")
    server = FakeEmbeddingsServer()
    backend = OpenAIEmbeddingBackend(max_retries=0, http_client=httpx.Client(transport=httpx.MockTransport(server)))
    backend.embed_texts(["x"])
    assert str(server.requests[0].url) == "http://env-endpoint.test/v2/embeddings"
    assert server.requests[0].headers["authorization"] == "Bearer sk-env"


def test_injected_client_is_used_as_is():
    calls = []

    class Item:
        def __init__(self, index, embedding):
            self.index, self.embedding = index, embedding

    class Client:
        class embeddings:  # noqa: N801
            @staticmethod
            def create(**kwargs):
                calls.append(kwargs)
                return type("R", (), {"data": [Item(1, [0.0, 1.0]), Item(0, [1.0, 0.0])]})()

    backend = OpenAIEmbeddingBackend(client=Client())
    assert backend.embed_texts(["a", "b"]) == [[1.0, 0.0], [0.0, 1.0]]
    assert calls == [{"model": DEFAULT_OPENAI_MODEL, "input": ["a", "b"]}]


def test_missing_api_key_is_a_config_error(monkeypatch):
    from ragspine.errors import ConfigError, RagspineError

    for var in ("OPENAI_API_KEY", "OPENAI_ADMIN_KEY"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY") as info:
        OpenAIEmbeddingBackend()
    assert isinstance(info.value, RagspineError)


def test_missing_sdk_names_the_extra(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "openai", None)  # import openai -> ImportError
    with pytest.raises(ImportError, match=r"pip install 'ragspine\[openai\]'"):
        OpenAIEmbeddingBackend(api_key="k")
