"""``Stack(settings)``: assembly from configuration, lazily, and nothing embedding-related in
economy mode."""

from __future__ import annotations

import pytest

from ragspine.config import load_settings
from ragspine.errors import BackendError, ConfigError, MissingDependencyError
from ragspine.retrieval.lexical.rewrite import load_glossary
from ragspine.retrieval.link.narrative_link import NarrativeIndexRetriever
from ragspine.retrieval.routing.multi_index import MultiIndexRetriever
from ragspine.retrieval.routing.routers import KeywordLibraryRouter
from ragspine.retrieval.vector import embedding_backends
from ragspine.retrieval.vector.cache import InMemoryEmbeddingCache
from ragspine.retrieval.vector.embedding_backends import DeterministicEmbeddingBackend
from ragspine.stack import Stack
from ragspine.stores.sqlite.embedding_cache import SQLiteEmbeddingCache
from ragspine.testing.llm import ScriptedLLMProvider
from tests.helpers import needs


@pytest.fixture
def settings(tmp_path):
    def make(**env: str):
        base = {"RAGSPINE_CHUNK_STORE": str(tmp_path / "stack.db"), "RAGSPINE_CACHE_DIR": str(tmp_path / "cache"),
                "RAGSPINE_EMBEDDING": "deterministic"}
        base.update(env)
        return load_settings(base)

    return make


def fill(stack: Stack) -> None:
    stack.ensure_library("finance", "revenue and results")
    stack.ensure_library("support", "warranty and claims")
    stack.index("finance").ingest_text("f1", "Revenue fell in the third quarter.", metadata={"topic": "results"})
    stack.index("finance").ingest_text("f2", "Board memo on revenue.", sensitivity="RESTRICTED")
    stack.index("support").ingest_text("s1", "Warranty claims rose in the third quarter.", metadata={"topic": "claims"})


@pytest.mark.parametrize("mode", ["economy", "bm25", "lexical"])
def test_economy_builds_no_embedding_parts(settings, mode):
    with Stack(settings(RAGSPINE_RETRIEVAL_MODE=mode)) as stack:
        assert stack.mode.name == "economy"
        assert stack.embedding_backend is None
        assert stack.embedding_cache is None
        assert stack.vector_store("finance") is None
        fill(stack)
        index = stack.index("finance")
        assert index.embedding_backend is None and index.vector_store is None
        assert [s["doc_id"] for s in stack.retriever(["finance"]).retrieve("revenue")] == ["f1"]


def test_hybrid_builds_backend_cache_and_stores_lazily(settings):
    with Stack(settings(RAGSPINE_RETRIEVAL_MODE="hybrid")) as stack:
        assert stack._backend_built is False  # nothing built before first use
        backend = stack.embedding_backend
        assert isinstance(backend, DeterministicEmbeddingBackend)
        assert stack.embedding_backend is backend
        assert isinstance(stack.embedding_cache, SQLiteEmbeddingCache) and stack.embedding_cache.db is stack.db
        fill(stack)
        index = stack.index("finance")
        assert index.embedding_backend is backend and index.vector_store is not None
        assert stack.index("finance") is index  # one index per library
        assert stack.index("support").vector_store is not index.vector_store
        snippets = stack.retriever(["finance"]).retrieve("revenue third quarter")
        assert [s["doc_id"] for s in snippets] == ["f1"] and snippets[0]["scores"]["vector"] > 0


def test_memory_embedding_cache(settings):
    with Stack(settings(RAGSPINE_RETRIEVAL_MODE="hybrid", RAGSPINE_EMBEDDING_CACHE="memory")) as stack:
        assert isinstance(stack.embedding_cache, InMemoryEmbeddingCache)


def test_sqlite_embedding_cache_survives_a_restart(settings, monkeypatch):
    calls: list[int] = []
    real = DeterministicEmbeddingBackend.embed_texts

    def counting(self, texts):
        calls.append(len(texts))
        return real(self, texts)

    monkeypatch.setattr(DeterministicEmbeddingBackend, "embed_texts", counting)
    with Stack(settings(RAGSPINE_RETRIEVAL_MODE="hybrid")) as stack:
        fill(stack)
        stack.index("finance").sync_vectors()
        stack.retriever(["finance"]).retrieve("revenue")
    first = sum(calls)
    assert first >= 2
    calls.clear()
    with Stack(settings(RAGSPINE_RETRIEVAL_MODE="hybrid")) as stack:
        assert [s["doc_id"] for s in stack.retriever(["finance"]).retrieve("fell in the third quarter")] == ["f1"]
    assert calls == [1]  # only the query: chunk vectors came from the SQLite cache


def test_auto_mode_without_a_backend_is_economy(settings):
    with Stack(settings(RAGSPINE_EMBEDDING="none")) as stack:
        assert stack.mode.name == "auto"
        assert stack.embedding_backend is None
        fill(stack)
        assert stack.index("finance").mode.name == "economy"
        assert stack.retriever(["finance"]).retrieve("revenue")


@pytest.mark.parametrize("mode", ["hybrid", "vector"])
def test_embedding_modes_need_a_backend(settings, mode):
    with Stack(settings(RAGSPINE_RETRIEVAL_MODE=mode, RAGSPINE_EMBEDDING="none")) as stack:
        with pytest.raises(ConfigError, match="needs an embedding backend"):
            _ = stack.embedding_backend


@pytest.mark.parametrize("mode", ["hybrid", "vector"])
def test_embedding_modes_without_the_onnx_extra_name_it(settings, monkeypatch, mode):
    monkeypatch.setattr(embedding_backends, "onnx_available", lambda: False)
    with Stack(settings(RAGSPINE_RETRIEVAL_MODE=mode, RAGSPINE_EMBEDDING="auto")) as stack:
        with pytest.raises(MissingDependencyError, match="embed-onnx"):
            _ = stack.embedding_backend


def test_auto_without_the_onnx_extra_falls_back_to_bm25(settings, monkeypatch):
    monkeypatch.setattr(embedding_backends, "onnx_available", lambda: False)
    with Stack(settings(RAGSPINE_EMBEDDING="auto")) as stack:
        assert stack.embedding_backend is None
        fill(stack)
        assert stack.retriever(["finance"]).retrieve("revenue")


def test_mode_argument_overrides_settings(settings):
    with Stack(settings(RAGSPINE_RETRIEVAL_MODE="hybrid"), mode="lexical") as stack:
        assert stack.mode.name == "economy" and stack.embedding_backend is None


@pytest.mark.parametrize(
    "env,words",
    [
        ({"RAGSPINE_VECTOR_STORE": "faiss"}, ("faiss", "memory")),
        ({"RAGSPINE_EMBEDDING_CACHE": "memcached"}, ("memcached", "sqlite")),
        ({"RAGSPINE_RETRIEVAL_MODE": "turbo"}, ("turbo", "economy")),
    ],
)
def test_bad_settings_are_config_errors(settings, env, words):
    with pytest.raises(ConfigError) as info:
        Stack(settings(**env))
    for word in words:
        assert word in str(info.value)


def test_retriever_single_and_multi(settings):
    with Stack(settings(RAGSPINE_RETRIEVAL_MODE="economy")) as stack:
        fill(stack)
        single = stack.retriever(["support"])
        assert isinstance(single, NarrativeIndexRetriever) and single.library_id == "support"
        multi = stack.retriever()
        assert isinstance(multi, MultiIndexRetriever) and multi.router is None
        assert sorted(multi.retrievers) == ["finance", "support"]
        snippets = multi.retrieve("third quarter")
        assert {(s["library_id"], s["doc_id"]) for s in snippets} == {("finance", "f1"), ("support", "s1")}
        assert all(s["doc_id"] != "f2" for s in stack.retriever(["finance"]).retrieve("board memo revenue"))
        dup = stack.retriever(["support", "support"])
        assert isinstance(dup, NarrativeIndexRetriever)


def test_retriever_uses_the_configured_router(settings):
    with Stack(settings(RAGSPINE_RETRIEVAL_MODE="economy", RAGSPINE_LIBRARY_ROUTER="keyword")) as stack:
        fill(stack)
        multi = stack.retriever()
        assert isinstance(multi.router, KeywordLibraryRouter)
        assert multi.descriptions == {"finance": "revenue and results", "support": "warranty and claims"}
        assert {s["library_id"] for s in multi.retrieve("warranty claims third quarter")} == {"support"}
        assert {s["library_id"] for s in multi.retrieve("third quarter")} == {"finance", "support"}


def test_llm_router_without_a_provider_is_a_config_error(settings):
    with Stack(settings(RAGSPINE_RETRIEVAL_MODE="economy", RAGSPINE_LIBRARY_ROUTER="llm")) as stack:
        fill(stack)
        with pytest.raises(ConfigError, match="provider"):
            stack.retriever()

    provider = ScriptedLLMProvider('["support"]')
    with Stack(settings(RAGSPINE_RETRIEVAL_MODE="economy", RAGSPINE_LIBRARY_ROUTER="llm"), provider=provider) as stack:
        assert {s["library_id"] for s in stack.retriever().retrieve("third quarter")} == {"support"}


def test_unknown_library_and_no_library(settings):
    with Stack(settings(RAGSPINE_RETRIEVAL_MODE="economy")) as stack:
        with pytest.raises(ConfigError, match="ingest"):
            stack.retriever()
        fill(stack)
        with pytest.raises(ConfigError) as info:
            stack.retriever(["finance", "nope"])
        assert "'nope'" in str(info.value) and "finance" in str(info.value) and "support" in str(info.value)


def test_libraries_catalog(settings):
    with Stack(settings(RAGSPINE_RETRIEVAL_MODE="economy")) as stack:
        fill(stack)
        libs = {lib.library_id: lib for lib in stack.libraries()}
        assert libs["finance"].documents == 2 and libs["support"].chunks == 1
        assert stack.library("support").description == "warranty and claims"
        assert stack.library("nope") is None


def test_reingest_replaces_in_both_legs(settings):
    with Stack(settings(RAGSPINE_RETRIEVAL_MODE="hybrid")) as stack:
        fill(stack)
        stack.index("support").ingest_text("s1", "Gearbox repairs now take five days.")
        retriever = stack.retriever(["support"])
        old = retriever.retrieve("warranty claims rose")
        assert all("Warranty claims rose" not in s["text"] for s in old)  # neither leg keeps v1
        (hit,) = retriever.retrieve("gearbox repairs")
        assert hit["version"] == 2


def test_glossary_setting(settings, tmp_path):
    glossary = tmp_path / "glossary.yaml"
    glossary.write_text("gearbox:\n  - reducer\n  - 减速器\n", encoding="utf-8")
    assert load_glossary(str(glossary)) == {"gearbox": ["reducer", "减速器"]}
    with Stack(settings(RAGSPINE_RETRIEVAL_MODE="economy", RAGSPINE_GLOSSARY=str(glossary))) as stack:
        stack.ensure_library("lib")
        stack.index("lib").ingest_text("d", "The gearbox warranty is 36 months.")
        assert [s["doc_id"] for s in stack.retriever(["lib"]).retrieve("reducer warranty")] == ["d"]
        assert [s["doc_id"] for s in stack.retriever(["lib"]).retrieve("reducer")] == ["d"]


@pytest.mark.parametrize("content", ["- just\n- a list\n", "gearbox: reducer\n"])
def test_bad_glossary_is_a_config_error(tmp_path, content):
    path = tmp_path / "g.yaml"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ConfigError, match="RAGSPINE_GLOSSARY"):
        load_glossary(str(path))
    with pytest.raises(ConfigError, match="cannot read"):
        load_glossary(str(tmp_path / "missing.yaml"))


def test_close_closes_the_database(settings):
    stack = Stack(settings(RAGSPINE_RETRIEVAL_MODE="economy"))
    with stack:
        fill(stack)
    with pytest.raises(BackendError, match="is closed"):
        stack.db.query("SELECT 1")


def test_a_filter_over_several_libraries_only_narrows(settings):
    """The retry without filters is for an empty answer to the whole query: a library with
    no match must not add unfiltered chunks next to another library's matches."""
    with Stack(settings(RAGSPINE_RETRIEVAL_MODE="economy")) as stack:
        fill(stack)
        multi = stack.retriever()
        matched = multi.retrieve("third quarter", filters={"topic": "results"})
        assert [(s["library_id"], s["doc_id"]) for s in matched] == [("finance", "f1")]
        # nothing matches anywhere: one retry without filters, over every library
        fallback = multi.retrieve("third quarter", filters={"topic": "nowhere"})
        assert {s["doc_id"] for s in fallback} == {"f1", "s1"}
        assert all(s["doc_id"] != "f2" for s in fallback)


# -- what the HTTP service needs: indexes per mode/embedding, probes, full deletion ------------
def test_index_per_mode_and_embedding_shares_lexical_and_vector_state(settings):
    with Stack(settings(RAGSPINE_EMBEDDING="none", RAGSPINE_RETRIEVAL_MODE="auto")) as stack:
        fill(stack)
        plain = stack.index("finance")
        assert plain.mode.name == "economy" and stack.embedding_backend is None
        dense = stack.index("finance", mode="hybrid", embedding="deterministic")
        assert isinstance(dense.embedding_backend, DeterministicEmbeddingBackend) and dense.vector_store is not None
        assert stack.index("finance", mode="vector", embedding="deterministic").vector_store is dense.vector_store
        assert dense.retriever.index is plain.retriever.index  # one lexical index per library
        assert stack.index("finance", mode="hybrid", embedding="deterministic") is dense
        assert stack.index("finance", mode="economy", embedding="deterministic") is plain
        with pytest.raises(ConfigError, match="needs an embedding backend"):
            stack.index("finance", mode="hybrid")  # the configured embedding is none
    with Stack(settings(RAGSPINE_RETRIEVAL_MODE="economy")) as stack:
        with pytest.raises(ConfigError, match="economy"):
            stack.index("finance", mode="hybrid")


def test_max_fused_score_normalizes_to_one_for_the_top_of_every_leg(settings):
    with Stack(settings(RAGSPINE_RETRIEVAL_MODE="hybrid")) as stack:
        fill(stack)
        index = stack.index("finance")
        assert index.retriever.legs_for("revenue") == ("bm25", "vector")
        variants = len(index.rewriter.rewrite("revenue"))  # the glossary adds synonym queries
        assert variants > 1 and index.max_fused_score("revenue") == pytest.approx(2 * variants / 61)
        assert index.max_fused_score("fell") == pytest.approx(2 / 61)
        top = index.retrieve("fell", top_k=1)[0]
        assert top.chunk.doc_id == "f1" and top.scores["fused"] / index.max_fused_score("fell") == pytest.approx(1.0)
        assert stack.index("finance", mode="economy").max_fused_score("fell") == pytest.approx(1 / 61)


def test_delete_library_removes_vectors_and_cache_entries_of_every_embedding(settings):
    with Stack(settings(RAGSPINE_EMBEDDING="deterministic", RAGSPINE_EMBEDDING_CACHE="memory")) as stack:
        fill(stack)
        stack.index("finance").sync_vectors()
        stack.index("support").sync_vectors()
        cache = stack.embedding_cache
        assert isinstance(cache, InMemoryEmbeddingCache) and len(cache) == 2  # f1 and s1: RESTRICTED f2 is never embedded
        vectors = stack.index("finance").vector_store
        assert stack.delete_library("finance", embeddings=["none"])
        assert vectors.count() == 0 and len(cache) == 1  # support's entry stays
        assert stack.library("finance") is None and stack.library("support") is not None


def test_check_stores_and_cache_stats(settings, tmp_path):
    needs("redis", "qdrant_client")
    from tests.backends import free_port

    with Stack(settings()) as stack:
        assert stack.check_stores() == [("chunk store", None)]
        assert stack.cache_stats() == {"hits": 0, "misses": 0, "errors": 0, "fallbacks": 0}
        fill(stack)
        assert stack.cache_stats()["misses"] > 0
    dead = f"redis://127.0.0.1:{free_port()}/0"
    with Stack(settings(RAGSPINE_EMBEDDING_CACHE=dead, RAGSPINE_VECTOR_STORE="qdrant::memory:")) as stack:
        checks = dict(stack.check_stores())
        assert checks["chunk store"] is None and checks["vector store"] is None
        assert checks["embedding cache"] and "Error" in checks["embedding cache"]


def test_warm_cache_embeds_before_the_replace_which_then_only_hits(settings):
    from ragspine.retrieval.chunking.chunking import chunk_document

    with Stack(settings(RAGSPINE_EMBEDDING_CACHE="memory")) as stack:
        index = stack.index("lib")
        chunks = chunk_document("Gearbox warranty is 36 months.\n\nRepairs take five days.", "d", max_chars=40, overlap_chars=0)
        assert index.retriever.warm_cache(chunks) == len(chunks) == 2
        assert index.retriever.warm_cache(chunks) == 0  # cached now
        misses = stack.cache_stats()["misses"]
        index.replace_doc_chunks("d", chunks)
        assert stack.cache_stats()["misses"] == misses and index.vector_store.count() == 2



def test_lexical_index_setting(settings):
    from ragspine.retrieval.lexical.index import InMemoryLexicalIndex

    for choice in ("auto", "memory"):
        with Stack(settings(RAGSPINE_RETRIEVAL_MODE="economy", RAGSPINE_LEXICAL_INDEX=choice)) as stack:
            assert isinstance(stack.index("lib").retriever.index, InMemoryLexicalIndex)
    with pytest.raises(ConfigError, match="unknown lexical index 'elastic'.*choose one of auto, memory, warm, postgres"):
        settings(RAGSPINE_RETRIEVAL_MODE="economy", RAGSPINE_LEXICAL_INDEX="elastic")
    needs("sqlalchemy")  # the postgres index's module is imported before it looks at the store
    with Stack(settings(RAGSPINE_RETRIEVAL_MODE="economy", RAGSPINE_LEXICAL_INDEX="postgres")) as stack, \
            pytest.raises(ConfigError, match="needs a PostgreSQL chunk store"):
        stack.index("lib")


def test_the_constructor_does_no_io(tmp_path):
    """Stack(settings) parses the configuration and touches nothing: no SQLite file or folder
    is created, no PostgreSQL connection is tried — the first use does that."""
    path = tmp_path / "not" / "yet" / "chunks.db"
    stack = Stack(load_settings({"RAGSPINE_CHUNK_STORE": str(path), "RAGSPINE_EMBEDDING": "deterministic"}))
    assert not path.parent.exists()
    assert stack.libraries() == [] and path.exists()  # first use: created
    stack.close()
    from tests.backends import free_port

    dead = f"postgresql://nobody@127.0.0.1:{free_port()}/none"
    pg = Stack(load_settings({"RAGSPINE_CHUNK_STORE": dead, "RAGSPINE_VECTOR_STORE": "pgvector", "RAGSPINE_EMBEDDING": "deterministic"}))
    assert pg.chunk_spec.kind == "postgresql" and pg.vector_spec.kind == "pgvector"  # parsed, nothing connected
    needs("sqlalchemy", "psycopg")
    with pytest.raises(Exception, match="127.0.0.1"):
        pg.libraries()
    pg.close()


def test_open_lexical_indexes_are_bounded_least_recently_used_first(settings):
    """RAGSPINE_LEXICAL_CACHE_ROWS bounds the in-process indexes a stack holds, all libraries
    together: opening one past the budget closes the least recently used, which reopens (and
    answers the same) on its next query."""
    with Stack(settings(RAGSPINE_RETRIEVAL_MODE="economy", RAGSPINE_LEXICAL_CACHE_ROWS="5")) as stack:
        for name in ("a", "b", "c"):
            stack.ensure_library(name)
            stack.index(name).ingest_many(
                [(f"{name}{d}", [_chunk(f"{name}{d}", f"shared words {name} document {d}")]) for d in range(3)]
            )
        before = {name: [s["chunk_id"] for s in stack.retriever([name]).retrieve("shared document")] for name in "abc"}
        assert list(stack._lexical) == ["b", "c"]  # 3 + 3 rows > 5: "a", used least recently, was closed
        stack.retriever(["b"]).retrieve("shared")  # "b" is now the most recent
        assert [s["chunk_id"] for s in stack.retriever(["a"]).retrieve("shared document")] == before["a"]
        assert list(stack._lexical) == ["b", "a"]  # reopening "a" closed "c", not "b"
        assert not any(key[0] == "c" for key in stack._pipelines)
    with Stack(settings(RAGSPINE_RETRIEVAL_MODE="economy")) as stack:
        for name in "abc":
            stack.retriever([name]).retrieve("shared")
        assert list(stack._lexical) == ["a", "b", "c"]  # the default budget holds them all


def _chunk(doc_id: str, text: str):
    from tests.helpers import make_chunk

    return make_chunk(doc_id, 0, text)


def test_chunk_packing_reaches_every_packing_chunker_and_is_off_by_default(settings) -> None:
    text = "# Guide\n\nOne.\n\nTwo.\n\nThree."
    with Stack(settings(RAGSPINE_CHUNKER="parent_child")) as stack:
        assert stack.settings.chunk_packing == "pack"
        assert [c.text for c in stack.chunker().chunk(text, "d")] == [text]
    with Stack(settings(RAGSPINE_CHUNKER="parent_child", RAGSPINE_CHUNK_PACKING="unit")) as stack:
        chunks = stack.chunker().chunk(text, "d")
        assert [c.text for c in chunks] == ["# Guide\n\nOne.", "Two.", "Three."]
        assert {c.window_text for c in chunks} == {text}  # the parent is still the whole section
        assert [c.text for c in stack.chunker("default").chunk(text, "d")] == ["# Guide", "One.", "Two.", "Three."]
        with pytest.raises(ConfigError, match="RAGSPINE_CHUNK_PACKING=unit does not apply to RAGSPINE_CHUNKER=sentence_window"):
            stack.chunker("sentence_window")


def test_chunk_packing_is_validated(settings) -> None:
    with pytest.raises(ConfigError, match="RAGSPINE_CHUNK_PACKING='paragraph': choose pack or unit"):
        settings(RAGSPINE_CHUNK_PACKING="paragraph")
