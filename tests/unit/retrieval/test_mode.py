"""Retrieval modes: the factory, aliases, legs, and what NarrativeIndex builds per mode."""

from __future__ import annotations

import pytest

from ragspine.errors import ConfigError
from ragspine.retrieval.mode import RETRIEVAL_MODES, RetrievalMode, make_retrieval_mode
from ragspine.retrieval.narrative_index import NarrativeIndex
from ragspine.retrieval.vector.embedding_backends import DeterministicEmbeddingBackend


@pytest.mark.parametrize(
    "spec,canonical",
    [
        ("auto", "auto"),
        ("hybrid", "hybrid"),
        ("vector", "vector"),
        ("economy", "economy"),
        ("bm25", "economy"),
        ("lexical", "economy"),
        (" Economy ", "economy"),
        ("BM25", "economy"),
        ("HYBRID", "hybrid"),
    ],
)
def test_names_and_aliases(spec, canonical):
    mode = make_retrieval_mode(spec)
    assert mode.name == canonical
    assert mode.requested == spec.strip().lower()


def test_every_listed_mode_resolves():
    assert set(RETRIEVAL_MODES) == {"auto", "hybrid", "vector", "economy", "bm25", "lexical"}
    for name in RETRIEVAL_MODES:
        assert make_retrieval_mode(name).name in ("auto", "hybrid", "vector", "economy")


@pytest.mark.parametrize("bad", ["dense", "", "economy-plus", "none"])
def test_unknown_mode_is_a_config_error_listing_the_names(bad):
    with pytest.raises(ConfigError) as info:
        make_retrieval_mode(bad)
    message = str(info.value)
    assert repr(bad) in message
    for name in RETRIEVAL_MODES:
        assert name in message
    assert isinstance(info.value, ValueError)


def test_a_mode_passes_through():
    mode = make_retrieval_mode("bm25")
    assert make_retrieval_mode(mode) is mode


def test_default_is_auto_and_reads_no_environment(monkeypatch):
    """The seed's ``auto``; the caller passes its settings' ``retrieval_mode`` (the Stack does)."""
    assert make_retrieval_mode().name == "auto"
    monkeypatch.setenv("RAGSPINE_RETRIEVAL_MODE", "Lexical")
    assert make_retrieval_mode().name == "auto"
    assert make_retrieval_mode("Lexical").name == "economy"
    with pytest.raises(ConfigError):
        make_retrieval_mode("bogus")


@pytest.mark.parametrize(
    "name,uses,requires,with_backend,without_backend",
    [
        ("auto", True, False, ("bm25", "vector"), ("bm25",)),
        ("hybrid", True, True, ("bm25", "vector"), ("bm25",)),
        ("vector", True, True, ("vector",), ("bm25",)),
        ("economy", False, False, ("bm25",), ("bm25",)),
    ],
)
def test_mode_properties_and_legs(name, uses, requires, with_backend, without_backend):
    mode = RetrievalMode(name, name)
    assert mode.uses_embeddings is uses
    assert mode.requires_embeddings is requires
    assert mode.legs(True) == with_backend
    assert mode.legs(False) == without_backend


@pytest.mark.parametrize("name", ["economy", "bm25", "lexical"])
def test_economy_index_drops_a_given_backend(store, name):
    index = NarrativeIndex(store, embedding_backend=DeterministicEmbeddingBackend(), mode=name)
    assert index.mode.name == "economy"
    assert index.embedding_backend is None and index.vector_store is None
    assert index.retriever.embedding_cache is None and index.retriever.legs == ("bm25",)


@pytest.mark.parametrize("name,legs", [("auto", ("bm25", "vector")), ("hybrid", ("bm25", "vector")), ("vector", ("vector",))])
def test_embedding_modes_build_a_vector_store(store, name, legs):
    backend = DeterministicEmbeddingBackend()
    index = NarrativeIndex(store, embedding_backend=backend, mode=name)
    assert index.embedding_backend is backend and index.vector_store is not None
    assert index.retriever.legs == legs


def test_index_default_mode_follows_the_backend(store):
    assert NarrativeIndex(store).mode.name == "economy"
    assert NarrativeIndex(store, embedding_backend=DeterministicEmbeddingBackend()).mode.name == "hybrid"


@pytest.mark.parametrize("name", ["hybrid", "vector"])
def test_embedding_modes_without_a_backend_are_a_config_error(store, name):
    with pytest.raises(ConfigError, match=name):
        NarrativeIndex(store, mode=name)


def test_auto_mode_without_a_backend_is_bm25(store):
    index = NarrativeIndex(store, mode="auto")
    assert index.embedding_backend is None and index.vector_store is None
    index.ingest_text("d", "gearbox warranty")
    (hit,) = index.retrieve("gearbox")
    assert hit.scores["bm25"] > 0 and hit.scores["vector"] == 0.0
