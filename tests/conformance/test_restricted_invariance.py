"""RESTRICTED content moves no exposed score, on every lexical index and chunk store.

The same open documents are ingested into two libraries; one also holds RESTRICTED documents
that are the best lexical (and, with the deterministic embedding, vector) match for every
query. Every answer — snippets, order, ``bm25`` / ``vector`` / ``fused`` scores, the Dify-style
normalized score — is identical between the two, in every mode, filtered or not, at every
``top_k``. The inverse: an index that does hold RESTRICTED chunks (``include_restricted``)
changes the open results' BM25 scores, so the comparison can fail.
"""

from __future__ import annotations

from typing import Any

import pytest

from ragspine.retrieval.lexical.index import InMemoryLexicalIndex
from ragspine.retrieval.link.narrative_link import NarrativeIndexRetriever
from ragspine.retrieval.pipeline import LibraryPipeline
from ragspine.retrieval.vector.embedding_backends import DeterministicEmbeddingBackend
from tests.conformance.conftest import QUERY, library_a_docs
from tests.conformance.test_store_backends import LEXICAL_BACKENDS, open_chunk_database

OPEN = [d for d in library_a_docs() if d.sensitivity != "RESTRICTED"]
SECRETS = [d for d in library_a_docs() if d.sensitivity == "RESTRICTED"]
QUERIES = (QUERY, "gearbox", "supply delays board", "castings bearings")
FILTERS: list[Any] = [None, {"year": {"gte": 2023}}, {"region": "north"}, {"classification": "board-only"}]


@pytest.fixture(params=list(LEXICAL_BACKENDS.values()), ids=list(LEXICAL_BACKENDS))
def backend(request, tmp_path):
    """``(chunk store factory, lexical index factory)`` of every lexical index x chunk store."""
    index_kind, store_kind = request.param
    db = open_chunk_database(store_kind, request, tmp_path)
    if index_kind == "memory":
        yield db.chunk_store, InMemoryLexicalIndex
    else:
        from ragspine.stores.postgres.lexical import PostgresLexicalIndex

        yield db.chunk_store, PostgresLexicalIndex
    db.close()


def _pipelines(backend: Any, mode: str) -> tuple[LibraryPipeline, LibraryPipeline]:
    store_factory, index_factory = backend
    out = []
    for lib, docs in (("with", OPEN + SECRETS), ("without", OPEN)):
        store = store_factory(lib)
        pipeline = LibraryPipeline(store, embedding_backend=DeterministicEmbeddingBackend() if mode != "economy" else None,
                                   mode=mode, lexical_index=index_factory(store))
        for d in docs:
            pipeline.ingest_text(d.doc_id, d.text, title=d.doc_id, metadata=d.metadata, sensitivity=d.sensitivity, source=d.doc_id)
        out.append(pipeline)
    return out[0], out[1]


def _answers(pipeline: LibraryPipeline) -> list[Any]:
    retriever = NarrativeIndexRetriever(pipeline)
    out = []
    for query in QUERIES:
        best = pipeline.max_fused_score(query)
        for filters in FILTERS:
            for top_k in (1, 3, 10):
                answer = retriever.search(query, filters=_parse(filters), top_k=top_k)
                out.append((query, str(filters), top_k, answer.filters_dropped,
                            [(s["chunk_id"], s["text"], s["scores"], s["scores"]["fused"] / best) for s in answer.snippets]))
    return out


def _parse(filters: Any) -> Any:
    from ragspine.retrieval.filtering.filters import parse_filter

    return parse_filter(filters)


@pytest.mark.parametrize("mode", ["economy", "hybrid", "vector"])
def test_a_library_answers_the_same_with_and_without_its_restricted_documents(backend, mode):
    with_secrets, without = _pipelines(backend, mode)
    answers = _answers(without)
    assert any(snippets for *_, snippets in answers)
    assert _answers(with_secrets) == answers
    with_secrets.retriever.refresh()
    assert len(with_secrets.retriever.index) == len(without.retriever.index)  # the secrets are not indexed


def test_inverse_an_index_holding_restricted_chunks_moves_the_scores(sqlite_db):
    exposed = (sqlite_db.chunk_store, lambda store: InMemoryLexicalIndex(store, include_restricted=True))
    with_secrets, without = _pipelines(exposed, "economy")
    assert _answers(with_secrets) != _answers(without)
