"""Adding a backend is one new module, one registry line and one conformance parameter.

A throwaway vector store, a throwaway chunker and a throwaway LLM provider are written as
modules of their own (here in a temporary directory, as a plugin would be), registered with one
line each, and then reached from configuration, the stack, the CLI and the error messages
without editing any RAGSpine file — and the vector store and the LLM provider pass their
conformance suites. The LLM provider gets its options from settings through its own
``from_settings`` and writes its own ``ragspine config`` line (``describe``): nothing in
RAGSpine knows its name.
"""

from __future__ import annotations

import sys
import textwrap

import pytest

from ragspine.cli import main
from ragspine.config import load_settings
from ragspine.errors import ConfigError
from ragspine.registries import CHUNKERS, LLM_PROVIDERS, VECTOR_STORES
from ragspine.registry import Entry
from ragspine.stack import Stack, describe_stack
from ragspine.testing import VectorStoreConformance
from tests.unit.llm.conformance import LLMProviderConformance

TOY_VECTORS = '''
"""A throwaway vector store: the in-process one, counting what it is asked."""
from ragspine.retrieval.vector.store import InProcessVectorStore
from ragspine.stores.registry import StoreSpec

OPENED = []


class ToyVectorStore(InProcessVectorStore):
    queries = 0

    def query(self, *args, **kwargs):
        ToyVectorStore.queries += 1
        return super().query(*args, **kwargs)


class ToyVectorConnector:
    @classmethod
    def parse(cls, value, context):
        return StoreSpec("toy", value.partition(":")[2] or None)

    @classmethod
    def from_config(cls, spec, settings, database=None):
        return cls()

    def open(self, library_id, *, model_id, dim):
        OPENED.append((library_id, model_id, dim))
        return ToyVectorStore(library_id=library_id, dim=dim)

    def check(self):
        pass

    def close(self):
        pass
'''
TOY_CHUNKER = '''
"""A throwaway chunker: one chunk per line, with real offsets."""
from ragspine.retrieval.chunking.chunking import Chunk, chunk_id_for, make_locator


class LineChunker:
    def __init__(self, **options):
        self.options = options

    def chunk(self, text, doc_id, *, title="", metadata=None, sensitivity="INTERNAL", source=None, source_offset=0):
        chunks, pos = [], 0
        for line in text.splitlines(keepends=True):
            start, end = pos, pos + len(line.rstrip())
            pos += len(line)
            if end > start:
                n = len(chunks)
                chunks.append(Chunk(chunk_id_for(doc_id, n), doc_id, text[start:end], title,
                                    make_locator(source or doc_id, start + source_offset, end + source_offset), n,
                                    start + source_offset, end + source_offset, dict(metadata or {}), sensitivity))
        return chunks
'''
TOY_LLM = '''
"""A throwaway LLM provider: it answers "0" (the listwise judge's "first candidate first") and
records what it was sent. A typed constructor, and the two classmethods a registry line's class has."""
from __future__ import annotations


class EchoLLMProvider:
    name = "echo"

    def __init__(self, *, model: str | None = None, timeout: float = 20.0, max_tokens: int = 256) -> None:
        self.model, self.timeout, self.max_tokens = model, timeout, max_tokens
        self.messages: list[list[dict[str, str]]] = []

    @classmethod
    def from_settings(cls, settings) -> EchoLLMProvider:
        return cls(model=settings.llm.model, timeout=settings.llm.timeout, max_tokens=settings.llm.max_tokens)

    @classmethod
    def describe(cls, settings) -> str:
        limits = f"timeout {settings.llm.timeout:g} s, at most {settings.llm.max_calls} calls per request"
        return f"echo: {settings.llm.model or 'no model'} (answers 0), {limits}"

    def chat(self, messages, **kwargs) -> str:
        self.messages.append([dict(m) for m in messages])
        return "0"
'''


@pytest.fixture
def plugins(tmp_path, monkeypatch):
    (tmp_path / "toy_vectors.py").write_text(textwrap.dedent(TOY_VECTORS), encoding="utf-8")
    (tmp_path / "toy_chunker.py").write_text(textwrap.dedent(TOY_CHUNKER), encoding="utf-8")
    (tmp_path / "toy_llm.py").write_text(textwrap.dedent(TOY_LLM), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    # the one registry line of each backend
    VECTOR_STORES.register("toy", Entry("toy_vectors:ToyVectorConnector", "toy or toy:NAME (a throwaway store)", accepts=("toy", "toy:")))
    CHUNKERS.register("lines", Entry("toy_chunker:LineChunker", "one chunk per line"))
    LLM_PROVIDERS.register("echo", Entry("toy_llm:EchoLLMProvider", "a throwaway model that answers 0"))
    yield sys.modules
    VECTOR_STORES.unregister("toy")
    CHUNKERS.unregister("lines")
    LLM_PROVIDERS.unregister("echo")
    for name in ("toy_vectors", "toy_chunker", "toy_llm"):
        sys.modules.pop(name, None)


def test_configuration_stack_cli_and_errors_reach_the_new_backends(plugins, tmp_path, capsys, monkeypatch) -> None:
    env = {"RAGSPINE_CHUNK_STORE": str(tmp_path / "toy.db"), "RAGSPINE_EMBEDDING": "deterministic",
           "RAGSPINE_VECTOR_STORE": "toy", "RAGSPINE_CHUNKER": "lines", "RAGSPINE_RETRIEVAL_MODE": "hybrid"}
    settings = load_settings(env)
    assert dict(describe_stack(settings))["vector store"] == "toy" and dict(describe_stack(settings))["chunker"] == "lines (480 characters)"
    with Stack(settings) as stack:
        stack.ensure_library("lib")
        pipeline = stack.pipeline("lib")
        pipeline.ingest_text("d", "gearbox warranty is 36 months\nrepairs take five days\n")
        assert [c.text for c in pipeline.store.iter_chunks()] == ["gearbox warranty is 36 months", "repairs take five days"]
        snippets = stack.retriever(["lib"]).retrieve("gearbox warranty")
        assert snippets[0]["text"] == "gearbox warranty is 36 months" and snippets[0]["scores"]["vector"] > 0
    toy = plugins["toy_vectors"]
    assert toy.OPENED and toy.OPENED[0][0] == "lib" and toy.ToyVectorStore.queries >= 1

    # the CLI's choices and the messages are read from the registries
    doc = tmp_path / "manual.txt"
    doc.write_text("line one about gears\nline two about claims\n", encoding="utf-8")
    for key, value in env.items():
        if key != "RAGSPINE_CHUNKER":
            monkeypatch.setenv(key, value)
    assert main(["ingest", str(doc), "--library", "cli", "--chunker", "lines", "--no-embed"]) == 0
    assert "2 chunk(s)" in capsys.readouterr().out
    with pytest.raises(ConfigError, match="toy or toy:NAME"):
        Stack(load_settings({**env, "RAGSPINE_VECTOR_STORE": "faiss"}))
    with pytest.raises(ConfigError, match="lines"):
        load_settings({**env, "RAGSPINE_CHUNKER": "sentences"})


def test_a_new_llm_provider_takes_its_settings_names_itself_and_serves_the_stack(plugins, tmp_path, capsys, monkeypatch) -> None:
    env = {"RAGSPINE_CHUNK_STORE": str(tmp_path / "llm.db"), "RAGSPINE_EMBEDDING": "deterministic", "RAGSPINE_RETRIEVAL_MODE": "hybrid",
           "RAGSPINE_LLM": "echo", "RAGSPINE_LLM_MODEL": "echo-1", "RAGSPINE_LLM_TIMEOUT": "7", "RAGSPINE_LLM_MAX_TOKENS": "32",
           "RAGSPINE_RERANKER": "listwise"}
    settings = load_settings(env)
    assert settings.llm.provider == "echo"
    # its own config line, not "openai-compatible"
    line = dict(describe_stack(settings))["llm"]
    assert line == "echo: echo-1 (answers 0), timeout 7 s, at most 10 calls per request"
    echo_class = LLM_PROVIDERS.load("echo")
    # the Stack builds it through its from_settings, and the listwise judge calls it
    with Stack(settings) as stack:
        provider = stack.provider
        inner = getattr(provider, "inner", provider)  # behind the per-request call budget
        assert isinstance(inner, echo_class)
        assert (inner.model, inner.timeout, inner.max_tokens) == ("echo-1", 7.0, 32)
        stack.ensure_library("lib")
        for doc_id, text in (("a", "gearbox warranty is 36 months"), ("b", "gearbox repairs take five days"), ("c", "warranty claims")):
            stack.pipeline("lib").ingest_text(doc_id, text)
        snippets = stack.retriever(["lib"]).retrieve("gearbox warranty")
        assert snippets and snippets[0]["text"].startswith("gearbox warranty")
    assert inner.messages and "gearbox warranty" in inner.messages[0][-1]["content"]

    # `ragspine config` shows its line; a misspelled name lists it among the choices
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert main(["config"]) == 0
    (shown,) = [x for x in capsys.readouterr().out.splitlines() if x.startswith("llm:")]
    assert "echo: echo-1" in shown and "openai" not in shown
    with pytest.raises(ConfigError, match="echo"):
        load_settings({**env, "RAGSPINE_LLM": "ecko"})


class TestToyLLMProviderConformance(LLMProviderConformance):
    """The conformance parameter of the throwaway LLM provider."""

    @pytest.fixture
    def llm_settings(self, plugins):
        return load_settings({"RAGSPINE_LLM": "echo", "RAGSPINE_LLM_MODEL": "echo-1"})


class TestToyVectorStoreConformance(VectorStoreConformance):
    """The conformance parameter: the shipped suite, on the throwaway store."""

    @pytest.fixture
    def vector_store_factory(self, plugins):
        connector = VECTOR_STORES.load("toy").from_config(None, None)
        return lambda library_id, dim: connector.open(library_id, model_id="toy", dim=dim)
