"""Adding a backend is one new module, one registry line and one conformance parameter.

A throwaway vector store and a throwaway chunker are written as modules of their own (here in
a temporary directory, as a plugin would be), registered with one line each, and then reached
from configuration, the stack, the CLI and the error messages without editing any RAGSpine
file — and the vector store passes the shipped conformance suite.
"""

from __future__ import annotations

import sys
import textwrap

import pytest

from ragspine.cli import main
from ragspine.config import load_settings
from ragspine.errors import ConfigError
from ragspine.registries import CHUNKERS, VECTOR_STORES
from ragspine.registry import Entry
from ragspine.stack import Stack, describe_stack
from ragspine.testing import VectorStoreConformance

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


@pytest.fixture
def plugins(tmp_path, monkeypatch):
    (tmp_path / "toy_vectors.py").write_text(textwrap.dedent(TOY_VECTORS), encoding="utf-8")
    (tmp_path / "toy_chunker.py").write_text(textwrap.dedent(TOY_CHUNKER), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    # the one registry line of each backend
    VECTOR_STORES.register("toy", Entry("toy_vectors:ToyVectorConnector", "toy or toy:NAME (a throwaway store)", accepts=("toy", "toy:")))
    CHUNKERS.register("lines", Entry("toy_chunker:LineChunker", "one chunk per line"))
    yield sys.modules
    VECTOR_STORES.unregister("toy")
    CHUNKERS.unregister("lines")
    for name in ("toy_vectors", "toy_chunker"):
        sys.modules.pop(name, None)


def test_configuration_stack_cli_and_errors_reach_the_new_backends(plugins, tmp_path, capsys, monkeypatch) -> None:
    env = {"RAGSPINE_CHUNK_STORE": str(tmp_path / "toy.db"), "RAGSPINE_EMBEDDING": "deterministic",
           "RAGSPINE_VECTOR_STORE": "toy", "RAGSPINE_CHUNKER": "lines", "RAGSPINE_RETRIEVAL_MODE": "hybrid"}
    settings = load_settings(env)
    assert dict(describe_stack(settings))["vector store"] == "toy" and dict(describe_stack(settings))["chunker"] == "lines"
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


class TestToyVectorStoreConformance(VectorStoreConformance):
    """The conformance parameter: the shipped suite, on the throwaway store."""

    @pytest.fixture
    def vector_store_factory(self, plugins):
        connector = VECTOR_STORES.load("toy").from_config(None, None)
        return lambda library_id, dim: connector.open(library_id, model_id="toy", dim=dim)
