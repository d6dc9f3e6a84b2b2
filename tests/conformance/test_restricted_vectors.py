"""No RESTRICTED vector where an approximate search walks: on every vector store.

RESTRICTED chunks get no vector — as they get no BM25 postings — on every write path (an
ingest, a batch replace, a bulk ingest then ``sync_vectors``, a re-ingest in either direction
of sensitivity). So an approximate search (pgvector's HNSW here; Qdrant local mode and the
in-process store are exact) never walks one, and a library answers its open queries exactly
as it did before RESTRICTED documents were added — the same ids, ranks, vector, BM25 and
fused scores — even with RESTRICTED documents written to be the nearest match of every query.

The library is built once and measured, then the RESTRICTED documents are added to the same
library and it is measured again: a shared HNSW graph is then the same graph, so any
difference is the RESTRICTED content's.
"""

from __future__ import annotations

from typing import Any, Callable

import pytest

from ragspine.retrieval.chunking.chunk_store import DocumentChunks
from ragspine.retrieval.lexical.index import InMemoryLexicalIndex
from ragspine.retrieval.link.narrative_link import NarrativeIndexRetriever
from ragspine.retrieval.pipeline import LibraryPipeline
from ragspine.retrieval.vector.embedding_backends import DeterministicEmbeddingBackend
from ragspine.retrieval.vector.store import InProcessVectorStore
from ragspine.retrieval.vector.vector_store import VectorRecord
from tests import backends
from tests.corpora import sample_queries, stdlib_docstrings_corpus
from tests.helpers import needs

DIM = 128
LIBRARY_DOCS = 1_100
N_QUERIES = 24
STORES = ["memory", "pgvector-hnsw", "qdrant-local"]


@pytest.fixture(params=STORES)
def vector_store_factory(request: Any) -> Any:
    """``make(library_id)``: a vector store of the parametrized kind (pgvector: approximate, HNSW)."""
    if request.param == "memory":
        yield lambda library_id: InProcessVectorStore(library_id=library_id, dim=DIM)
        return
    if request.param == "pgvector-hnsw":
        needs("sqlalchemy", "psycopg", "pgvector")
        from ragspine.stores.pgvector.store import PgVectorStore
        from ragspine.stores.postgres.database import PostgresDatabase

        url, schema = request.getfixturevalue("pg_schema")
        db = PostgresDatabase(url, schema=schema)
        db.init_schema()
        _force_the_hnsw_path(db.engine)
        yield lambda library_id: PgVectorStore(db.engine, library_id=library_id, model_id="restricted-vectors", dim=DIM,
                                               schema=schema, exact=False, ef_search=10, hnsw_m=4, hnsw_ef_construction=8)
        db.close()
        return
    needs("qdrant_client")
    from ragspine.stores.qdrant.store import QdrantVectorStore

    client = request.getfixturevalue("qdrant_local_client")
    prefix = backends.collection_prefix()
    yield lambda library_id: QdrantVectorStore(client, library_id=library_id, model_id="restricted-vectors", dim=DIM,
                                               collection_prefix=prefix)


def _force_the_hnsw_path(engine: Any) -> None:
    """Make the planner serve every query by the HNSW index: at this size it would otherwise
    scan the library exactly (which is also exact), and the test would walk no graph."""
    import sqlalchemy as sa

    @sa.event.listens_for(engine, "connect")
    def _settings(dbapi_connection: Any, _: Any) -> None:
        with dbapi_connection.cursor() as cur:
            cur.execute("SET enable_seqscan = off; SET enable_bitmapscan = off; SET enable_sort = off")
        dbapi_connection.commit()

    engine.dispose()


def _pipeline(sqlite_db: Any, make_store: Callable[[str], Any], library_id: str) -> LibraryPipeline:
    store = sqlite_db.chunk_store(library_id)
    return LibraryPipeline(store, embedding_backend=DeterministicEmbeddingBackend(dim=DIM), vector_store=make_store(library_id),
                           mode="hybrid", lexical_index=InMemoryLexicalIndex(store))


def _answers(pipeline: LibraryPipeline, queries: list[str]) -> list[Any]:
    """Every query's open answers, in hybrid and vector mode, at top_k 1 and 10, with every
    score (the Dify-normalized one too), and the raw dense ranking 40 deep."""
    out: list[Any] = []
    vector_only = LibraryPipeline(pipeline.store, embedding_backend=pipeline.embedding_backend, vector_store=pipeline.vector_store,
                                  embedding_cache=pipeline.retriever.embedding_cache, mode="vector",
                                  lexical_index=pipeline.retriever.index)
    for p in (pipeline, vector_only):
        retriever = NarrativeIndexRetriever(p)
        for query in queries:
            best = p.max_fused_score(query)
            for top_k in (1, 10):
                snippets = retriever.search(query, top_k=top_k).snippets
                out.append((p.mode.name, query, top_k, [(s["chunk_id"], s["version"], s["scores"], s["scores"]["fused"] / best)
                                                        for s in snippets]))
        out.append([p.retriever.rankings(q, depth=40, legs_to_run=("vector",))["vector"] for q in queries])
    return out


def _secrets(queries: list[str]) -> list[tuple[str, str]]:
    """RESTRICTED documents written to be each query's nearest match, in both legs."""
    return [(f"secret-{i:02d}", f"{q} {q} board memo. {q}") for i, q in enumerate(queries)]


@pytest.mark.slow
def test_restricted_documents_change_no_open_answer_at_a_thousand_documents(vector_store_factory, sqlite_db):
    corpus = stdlib_docstrings_corpus(limit=LIBRARY_DOCS)
    assert len(corpus) >= 1_000
    queries = sample_queries(corpus, N_QUERIES)
    lib = _pipeline(sqlite_db, vector_store_factory, "lib")
    lib.ingest_many(DocumentChunks(doc_id, lib.chunker.chunk(text, doc_id, title=doc_id)) for doc_id, text in corpus)
    lib.sync_vectors()
    vectors = lib.vector_store
    assert vectors is not None
    held = vectors.count()
    if hasattr(vectors, "explain"):  # pgvector: the approximate path is really taken
        plan = vectors.explain(lib.embedding_backend.embed_texts([queries[0]])[0], top_k=26)
        assert "_hnsw" in plan, plan
    before = _answers(lib, queries)
    assert sum(len(a[3]) for a in before if isinstance(a, tuple)) > 0

    secrets = _secrets(queries)
    third = len(secrets) // 3
    for doc_id, text in secrets[:third]:  # one document at a time (ragspine ingest, the Python API)
        lib.ingest_text(doc_id, text, title=doc_id, sensitivity="RESTRICTED")
    lib.replace_docs([DocumentChunks(d, lib.chunker.chunk(t, d, title=d, sensitivity="RESTRICTED"))  # a service batch
                      for d, t in secrets[third : 2 * third]])
    lib.ingest_many(DocumentChunks(d, lib.chunker.chunk(t, d, title=d, sensitivity="restricted"))  # bulk + embed
                    for d, t in secrets[2 * third :])
    lib.sync_vectors()
    lib.ingest_text(secrets[0][0], secrets[0][1] + " Revised.", title="again", sensitivity="RESTRICTED")  # a new version
    assert vectors.count() == held, "a RESTRICTED chunk got a vector"
    assert lib.store.count() > lib.retriever.index.__len__()  # the secrets are stored, not searchable
    after = _answers(lib, queries)
    assert after == before


def test_a_document_turning_restricted_loses_its_vectors_and_one_turning_open_gains_them(vector_store_factory, sqlite_db):
    lib = _pipeline(sqlite_db, vector_store_factory, "flip")
    vectors = lib.vector_store
    assert vectors is not None
    text = "Gearbox supply delays at the northern plant.\n\nThe castings arrived late; bearings too."
    lib.ingest_text("keep", "Warranty claims rose in the third quarter.", title="keep")
    lib.ingest_text("memo", text, title="memo")
    ids = [c.chunk_id for c in lib.store.iter_chunks(doc_id="memo")]
    assert set(vectors.versions(ids)) == set(ids)
    lib.ingest_text("memo", text, title="memo", sensitivity="RESTRICTED")  # open -> RESTRICTED: the same chunk ids
    assert vectors.versions(ids) == {} and vectors.count() == 1
    assert "memo" not in {r.chunk.doc_id for r in lib.retrieve("gearbox castings", top_k=5)}
    lib.ingest_text("memo", text + " Cleared.", title="memo", sensitivity="INTERNAL")  # RESTRICTED -> open
    assert set(vectors.versions(ids)) == set(ids) and vectors.count() == 1 + len(ids)
    lib.replace_docs([DocumentChunks("memo", lib.chunker.chunk(text, "memo", sensitivity="RESTRICTED"))])  # a batch
    assert vectors.versions(ids) == {}
    lib.ingest_many([DocumentChunks("memo", lib.chunker.chunk(text, "memo", sensitivity="INTERNAL"))])  # bulk, then embed
    lib.sync_vectors()
    assert set(vectors.versions(ids)) == set(ids)
    lib.ingest_many([DocumentChunks("memo", lib.chunker.chunk(text, "memo", sensitivity="RESTRICTED"))])
    lib.sync_vectors()
    assert vectors.versions(ids) == {} and vectors.count() == 1


def test_ragspine_embed_drops_the_restricted_vectors_an_older_release_wrote(vector_store_factory, sqlite_db):
    lib = _pipeline(sqlite_db, vector_store_factory, "old")
    lib.ingest_text("open", "Warranty claims rose in the third quarter.", title="open")
    lib.ingest_text("memo", "Board memo on the gearbox recall.", title="memo", sensitivity="RESTRICTED")
    vectors = lib.vector_store
    assert vectors is not None and vectors.count() == 1
    (memo,) = lib.store.iter_chunks(doc_id="memo")
    backend = DeterministicEmbeddingBackend(dim=DIM)
    vectors.upsert([VectorRecord(memo.chunk_id, backend.embed_texts([memo.text])[0], "memo", memo.version, memo.sensitivity)])
    assert vectors.count() == 2  # what an older release left
    lib.sync_vectors()
    assert vectors.count() == 1 and vectors.versions([memo.chunk_id]) == {}
