"""The contextual header (RAGSPINE_CONTEXTUAL): built from the chunk's own fields, on the index
text only, BM25 exact over that text on every store that can hold it, vectors keyed by it, and
off by default (then nothing changes)."""

from __future__ import annotations

import pytest

from ragspine.errors import ConfigError
from ragspine.retrieval.chunking.chunk_store import DocumentChunks
from ragspine.retrieval.chunking.chunking import chunk_document
from ragspine.retrieval.contextual import (
    MAX_PART_CHARS,
    contextual_header,
    contextual_index_text,
    make_index_text_fn,
    parse_contextual,
)
from ragspine.retrieval.lexical.base import default_index_text, make_lexical_index
from ragspine.retrieval.lexical.index import InMemoryLexicalIndex
from ragspine.retrieval.link.narrative_link import NarrativeIndexRetriever
from ragspine.retrieval.pipeline import LibraryPipeline
from ragspine.retrieval.vector.embedding_backends import DeterministicEmbeddingBackend
from ragspine.testing.lexical_index import check_against_reference
from tests.corpora import stdlib_docstrings_corpus
from tests.helpers import make_chunk


def test_the_header_is_the_chunks_own_fields_once_each_in_order() -> None:
    chunk = make_chunk("d", 0, "Revenue fell.", title="ACME annual report", heading="Results",
                       metadata={"entity": "ACME", "period": "2024-Q3", "topic": "sales"})
    assert contextual_header(chunk) == "ACME annual report · ACME · 2024-Q3 · Results"
    assert contextual_index_text(chunk) == "ACME annual report · ACME · 2024-Q3 · Results\nRevenue fell."
    same = make_chunk("d", 0, "x", title="Results", heading="results", metadata={"entity": "", "period": None})
    assert contextual_header(same) == "Results"  # a repeat said once, empty fields left out
    bare = make_chunk("d", 0, "Only text.")
    assert contextual_header(bare) == "" and contextual_index_text(bare) == "Only text."
    long = make_chunk("d", 0, "x", title="word " * 100, heading="a\nmulti-line\theading")
    header = contextual_header(long)
    assert "\n" not in header and header.endswith("a multi-line heading")
    assert len(header.split(" · ")[0]) <= MAX_PART_CHARS


def test_settings_and_names() -> None:
    assert make_index_text_fn("none") is default_index_text and make_index_text_fn("off") is default_index_text
    assert make_index_text_fn("header") is contextual_index_text and make_index_text_fn(True) is contextual_index_text
    assert parse_contextual("ON") == "header" and parse_contextual(None) == "none"
    with pytest.raises(ConfigError, match="RAGSPINE_CONTEXTUAL"):
        parse_contextual("summary")


@pytest.fixture
def corpus():
    return stdlib_docstrings_corpus()[:60]


def _ingest(store, corpus) -> None:
    store.replace_many([
        DocumentChunks(doc_id, chunk_document(text, doc_id, title=f"Module {doc_id}", metadata={"entity": doc_id.split(".")[0]},
                                              max_chars=240, overlap_chars=40))
        for doc_id, text in corpus
    ])


@pytest.mark.parametrize("kind", ["sqlite", "postgresql18"])
def test_bm25_over_the_index_text_is_exactly_the_reference(kind, request, tmp_path, corpus) -> None:
    from tests.conformance.test_store_backends import open_chunk_database

    db = open_chunk_database(kind, request, tmp_path)
    try:
        store = db.chunk_store("ctx")
        _ingest(store, corpus)
        index = make_lexical_index("auto", store, auto=db.default_lexical_index, index_text=contextual_index_text)
        assert isinstance(index, InMemoryLexicalIndex)  # PostgreSQL's postings hold chunk text only: auto follows in-process
        index.refresh()
        check_against_reference(index, store, corpus, seed=4, index_text=contextual_index_text)
        if kind == "postgresql18":
            with pytest.raises(ConfigError, match="RAGSPINE_LEXICAL_INDEX=memory"):
                make_lexical_index("postgres", store, index_text=contextual_index_text)
    finally:
        db.close()


def test_a_title_word_finds_a_chunk_and_the_snippet_is_the_documents_bytes(store) -> None:
    source = "Revenue fell by twelve percent.\n\nMargins held."
    chunks = chunk_document(source, "q3", title="Kestrel quarterly report", max_chars=40, overlap_chars=0)
    store.replace_doc_chunks("q3", chunks)
    plain = NarrativeIndexRetriever(LibraryPipeline(store, mode="economy")).retrieve("kestrel margins")
    headed = NarrativeIndexRetriever(LibraryPipeline(store, mode="economy", index_text=contextual_index_text)).retrieve("kestrel")
    assert [s["chunk_id"] for s in plain] == ["q3#1"]  # "kestrel" is only in the title
    assert sorted(s["chunk_id"] for s in headed) == ["q3#0", "q3#1"]
    for s in headed:
        start, end = (int(x) for x in s["source_locator"].split("=")[1].split(","))
        assert s["text"] == source[start:end] and "Kestrel" not in s["text"]


class _Spy(DeterministicEmbeddingBackend):
    def __init__(self) -> None:
        super().__init__(dim=64)
        self.seen: list[str] = []

    def embed_texts(self, texts):
        self.seen += list(texts)
        return super().embed_texts(texts)


def test_vectors_are_of_the_index_text_and_a_new_header_is_a_new_vector(store) -> None:
    store.replace_doc_chunks("d", [make_chunk("d", 0, "Freight rates doubled.", title="Logistics review")])
    spy = _Spy()
    pipe = LibraryPipeline(store, mode="hybrid", embedding_backend=spy, index_text=contextual_index_text)
    pipe.sync_vectors()
    assert spy.seen == ["Logistics review\nFreight rates doubled."]
    plain = LibraryPipeline(store, mode="hybrid", embedding_backend=spy, embedding_cache=pipe.retriever.dense.cache)
    spy.seen.clear()
    plain.sync_vectors()  # same chunk, same cache: the plain text is another key, embedded anew
    assert spy.seen == ["Freight rates doubled."]
