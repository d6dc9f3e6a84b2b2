"""End-to-end conformance of the production stacks, chosen by environment alone.

(a) The same corpus and queries give identical ranked chunk ids (scores within 1e-6) on the
    embedded default and on each production stack with exact vector search.
(b) No query, filter, router or adversarial filter key/value returns another library's chunk
    or a RESTRICTED snippet.
(c) Retiring a document or deleting a library removes it from every store.
"""

from __future__ import annotations

import pytest

from ragspine.config import load_settings
from ragspine.retrieval.filtering.filters import FilterCondition, MetadataFilter
from ragspine.retrieval.routing.multi_index import MultiIndexRetriever
from ragspine.stack import Stack
from tests.corpora import sample_queries, stdlib_docstrings_corpus

STACKS = ["embedded", "postgres18+pgvector+redis", "postgres15+qdrant-local", "sqlite+qdrant-local"]
CORPUS_SIZE = 200
N_QUERIES = 20


@pytest.fixture(scope="module")
def corpus():
    docs = stdlib_docstrings_corpus(limit=CORPUS_SIZE)
    return docs, sample_queries(docs, N_QUERIES)


def _environ(name: str, request, tmp_path) -> dict[str, str]:
    env = {
        "RAGSPINE_EMBEDDING": "deterministic",
        "RAGSPINE_VECTOR_EXACT": "1",
        "RAGSPINE_DATA_DIR": str(tmp_path / "data"),
    }
    if name == "embedded":
        env["RAGSPINE_CHUNK_STORE"] = str(tmp_path / "chunks.db")
    elif name == "postgres18+pgvector+redis":
        url, schema = request.getfixturevalue("pg_schema")
        redis_url, prefix = request.getfixturevalue("redis_namespace")
        env.update(
            RAGSPINE_CHUNK_STORE=url, RAGSPINE_PG_SCHEMA=schema, RAGSPINE_VECTOR_STORE="pgvector",
            RAGSPINE_EMBEDDING_CACHE=redis_url, RAGSPINE_REDIS_PREFIX=prefix,
        )
    elif name == "postgres15+qdrant-local":
        url, schema = request.getfixturevalue("pg15_schema")
        request.getfixturevalue("qdrant_local_client")  # fails in CI when qdrant-client is missing
        env.update(RAGSPINE_CHUNK_STORE=url, RAGSPINE_PG_SCHEMA=schema, RAGSPINE_VECTOR_STORE="qdrant::memory:")
    else:
        request.getfixturevalue("qdrant_local_client")
        env.update(RAGSPINE_CHUNK_STORE=str(tmp_path / "chunks.db"), RAGSPINE_VECTOR_STORE=f"qdrant:{tmp_path / 'qdrant'}")
    return env


@pytest.fixture
def open_stack(request, tmp_path):
    opened: list[Stack] = []

    def make(name: str, mode: str = "hybrid") -> Stack:
        stack = Stack(load_settings(_environ(name, request, tmp_path / name)), mode=mode)
        opened.append(stack)
        return stack

    yield make
    for stack in opened:
        stack.close()


def _ingest(stack: Stack, library_id: str, docs) -> None:
    stack.ensure_library(library_id, "stdlib docstrings")
    index = stack.index(library_id)
    for doc_id, text in docs:
        index.ingest_text(doc_id, text, title=doc_id, metadata={"module": doc_id.split(".")[0], "n": len(text)})


def _rankings(stack: Stack, library_id: str, queries) -> list[list[tuple[str, float, float, float]]]:
    retriever = stack.retriever([library_id])
    out = []
    for q in queries:
        snippets = retriever.retrieve(q, top_k=10)
        out.append([(s["chunk_id"], s["scores"]["bm25"], s["scores"]["vector"], s["scores"]["fused"]) for s in snippets])
    return out


@pytest.mark.parametrize("mode", ["economy", "hybrid"])
@pytest.mark.parametrize("name", STACKS[1:])
def test_production_stack_ranks_like_the_embedded_default(open_stack, corpus, name, mode):
    docs, queries = corpus
    embedded, production = open_stack("embedded", mode), open_stack(name, mode)
    for stack in (embedded, production):
        _ingest(stack, "lib", docs)
    want, got = _rankings(embedded, "lib", queries), _rankings(production, "lib", queries)
    assert sum(len(r) for r in want) > N_QUERIES  # the queries do find things
    for q, w, g in zip(queries, want, got, strict=True):
        assert [c for c, *_ in g] == [c for c, *_ in w], q
        for (cid, *gs), (_, *ws) in zip(g, w, strict=True):
            assert all(abs(a - b) <= 1e-6 + 1e-12 for a, b in zip(gs, ws, strict=True)), (q, cid, gs, ws)
    if mode == "hybrid":
        assert any(v for r in got for _, _, v, _ in r)  # the dense leg really ran


ADVERSARIAL = [
    ("topic", "eq", "x' OR '1'='1"),
    ("topic'--", "eq", "secret"),
    ("topic", "in", ["secret", "'; DROP TABLE ragspine_chunk; --"]),
    ("名前", "ne", "🙂"),
    ("a.b", "gte", ""),
    ("topic", "lt", "z" * 5000),
    ("topic", "ne", None),
]


@pytest.mark.parametrize("name", STACKS)
def test_no_filter_or_router_crosses_libraries_or_surfaces_restricted(open_stack, name):
    stack = open_stack(name)
    for lib, who in (("tenant-a", "alpha"), ("tenant-b", "beta")):
        stack.ensure_library(lib, f"{who} tenant documents")
        index = stack.index(lib)
        index.ingest_text(f"{who}-open", f"The {who} quarterly revenue grew on strong demand.", metadata={"topic": "secret"})
        index.ingest_text(
            f"{who}-memo", f"RESTRICTED memo: the {who} quarterly revenue secret revenue revenue.",
            sensitivity="RESTRICTED", metadata={"topic": "secret", "名前": "x", "a.b": "y"},
        )
    query = "quarterly revenue secret"
    for spec in [None, *ADVERSARIAL]:
        filters = MetadataFilter((FilterCondition(*spec),)) if spec else None
        for lib, who in (("tenant-a", "alpha"), ("tenant-b", "beta")):
            for snippet in stack.retriever([lib]).retrieve(query, filters=filters, top_k=10):
                assert snippet["library_id"] == lib and snippet["doc_id"].startswith(who), (spec, snippet)
                assert snippet["sensitivity"].upper() != "RESTRICTED", (spec, snippet)
        both = stack.retriever(["tenant-a", "tenant-b"])
        assert isinstance(both, MultiIndexRetriever)
        for snippet in both.retrieve(query, filters=filters, top_k=10):
            assert snippet["doc_id"].startswith("alpha" if snippet["library_id"] == "tenant-a" else "beta")
            assert snippet["sensitivity"].upper() != "RESTRICTED"


@pytest.mark.parametrize("name", STACKS)
def test_retiring_a_document_or_deleting_a_library_removes_it_everywhere(open_stack, name):
    stack = open_stack(name)
    stack.ensure_library("lib", "d")
    stack.ensure_library("keep", "k")
    index = stack.index("lib")
    index.ingest_text("gone", "Alpha beta gamma. " * 40)
    index.ingest_text("stays", "Delta epsilon zeta.")
    stack.index("keep").ingest_text("other", "Alpha beta gamma in another library.")
    gone_ids = [c.chunk_id for c in index.store.iter_chunks(doc_id="gone")]
    vectors = index.vector_store
    assert vectors is not None and set(vectors.versions(gone_ids)) == set(gone_ids)

    index.retire("gone")
    assert index.store.iter_chunks(doc_id="gone") == []
    assert vectors.versions(gone_ids) == {}
    assert all(s["doc_id"] != "gone" for s in stack.retriever(["lib"]).retrieve("alpha beta gamma", top_k=10))
    if name.startswith("postgres18"):  # another process, sharing the server, sees the same
        fresh = Stack(stack.settings, mode="hybrid")
        try:
            assert fresh.index("lib").vector_store.versions(gone_ids) == {}
        finally:
            fresh.close()

    stay_ids = [c.chunk_id for c in index.store.iter_chunks(doc_id="stays")]
    assert stack.delete_library("lib")
    assert stack.library("lib") is None
    assert stack.db.chunk_store("lib").count(include_inactive=True) == 0
    assert stack.vector_store("lib").versions(stay_ids) == {}
    assert [s["doc_id"] for s in stack.retriever(["keep"]).retrieve("alpha beta gamma", top_k=5)] == ["other"]
