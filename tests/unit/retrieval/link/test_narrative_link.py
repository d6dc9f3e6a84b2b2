"""The link exit: retry without filters, automatic filters, snippet dicts, the default chain."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from ragspine.errors import FilterError
from ragspine.retrieval.ask_again import Page
from ragspine.retrieval.chunking.chunk_store import StoredChunk
from ragspine.retrieval.filtering.automatic import ControlledVocabFilterExtractor
from ragspine.retrieval.filtering.filters import FilterCondition, MetadataFilter
from ragspine.retrieval.link.narrative_link import (
    DEFAULT_RETRIEVE_TOP_K,
    NarrativeIndexRetriever,
    build_narrative_retriever,
    to_snippet,
)
from ragspine.retrieval.narrative_index import NarrativeIndex
from ragspine.retrieval.rerank.listwise_rerank import ListwiseReranker, ProviderListwiseJudge
from ragspine.retrieval.types import RetrievalResult
from ragspine.testing.llm import ScriptedLLMProvider
from tests.helpers import make_chunk


def stored(doc_id: str, sensitivity: str = "INTERNAL", **fields: Any) -> StoredChunk:
    return StoredChunk(chunk_id=f"{doc_id}#0", doc_id=doc_id, text=f"text of {doc_id}", sensitivity=sensitivity, **fields)


class FakeIndex:
    """Answers from a script: ``answers[filter is None]``; records every call."""

    library_id = "lib-x"

    def __init__(self, filtered: list[RetrievalResult], unfiltered: list[RetrievalResult]) -> None:
        self.filtered = filtered
        self.unfiltered = unfiltered
        self.calls: list[tuple[str, int, Any]] = []

    def search_once(self, query, want, metadata_filter, skip_stale=False):
        self.calls.append((query, want, metadata_filter))
        pool = self.unfiltered if metadata_filter is None else self.filtered
        return Page(pool[:want], exhausted=len(pool) <= want)


def res(doc_id: str, sensitivity: str = "INTERNAL") -> RetrievalResult:
    return RetrievalResult(stored(doc_id, sensitivity), {"bm25": 2.0, "vector": 0.5, "fused": 0.03}, "lib-x")


# -- retry_without_filters --------------------------------------------------------------------
def test_retries_once_without_filters_when_the_filtered_result_is_empty():
    index = FakeIndex([], [res("a"), res("b")])
    snippets = NarrativeIndexRetriever(index).retrieve("q", filters={"topic": "x"}, top_k=5)
    assert [s["doc_id"] for s in snippets] == ["a", "b"]
    assert [c[2] is None for c in index.calls] == [False, True]
    assert index.calls[0][2] == MetadataFilter((FilterCondition("topic", "eq", "x"),))


def test_no_retry_when_the_filtered_result_is_not_empty():
    index = FakeIndex([res("a")], [res("a"), res("b")])
    snippets = NarrativeIndexRetriever(index).retrieve("q", filters={"topic": "x"}, top_k=5)
    assert [s["doc_id"] for s in snippets] == ["a"]
    assert len(index.calls) == 1


def test_retry_happens_once_only():
    index = FakeIndex([], [])
    assert NarrativeIndexRetriever(index).retrieve("q", filters={"topic": "x"}) == []
    assert len(index.calls) == 2


def test_no_retry_without_filters_or_when_disabled():
    index = FakeIndex([], [])
    assert NarrativeIndexRetriever(index).retrieve("q") == []
    assert len(index.calls) == 1
    index = FakeIndex([], [res("a")])
    assert NarrativeIndexRetriever(index, retry_without_filters=False).retrieve("q", filters={"t": 1}) == []
    assert len(index.calls) == 1


def test_malformed_filter_raises_before_any_io():
    index = FakeIndex([], [res("a")])
    with pytest.raises(FilterError):
        NarrativeIndexRetriever(index).retrieve("q", filters={"year": {"like": 3}})
    with pytest.raises(FilterError):
        NarrativeIndexRetriever(index).retrieve("q", filters=[("year", "between", [1])])
    assert index.calls == []


def test_retry_never_drops_the_library_scope(sqlite_db):
    own = NarrativeIndex(sqlite_db.chunk_store("lib-a"))
    other = NarrativeIndex(sqlite_db.chunk_store("lib-b"))
    own.ingest_text("a1", "gearbox warranty terms", metadata={"topic": "policy"})
    other.ingest_text("b1", "gearbox warranty terms and gearbox claims", metadata={"topic": "results"})
    retriever = NarrativeIndexRetriever(own)
    # the filter matches only lib-b's chunk: lib-a finds nothing, retries unfiltered in lib-a
    snippets = retriever.retrieve("gearbox warranty", filters={"topic": "results"})
    assert [(s["doc_id"], s["library_id"]) for s in snippets] == [("a1", "lib-a")]
    assert retriever.library_id == "lib-a"


def test_restricted_results_are_dropped_and_the_index_asked_for_more():
    pool = [res("r1", "RESTRICTED"), res("r2", "restricted"), res("a"), res("r3", " Restricted "), res("b"), res("c")]
    index = FakeIndex(pool, pool)
    snippets = NarrativeIndexRetriever(index).retrieve("q", top_k=2)
    assert [s["doc_id"] for s in snippets] == ["a", "b"]
    assert [c[1] for c in index.calls][0] == 2 and len(index.calls) > 1


def test_only_restricted_filtered_results_count_as_empty():
    """A filter matching only RESTRICTED chunks answers exactly like a filter matching
    nothing (a retry), so the answer does not reveal that RESTRICTED content matched."""
    only_restricted = FakeIndex([res("r1", "RESTRICTED")], [res("r1", "RESTRICTED"), res("a")])
    nothing = FakeIndex([], [res("r1", "RESTRICTED"), res("a")])
    a = NarrativeIndexRetriever(only_restricted).retrieve("q", filters={"c": "board"}, top_k=3)
    b = NarrativeIndexRetriever(nothing).retrieve("q", filters={"c": "board"}, top_k=3)
    assert a == b and [s["doc_id"] for s in a] == ["a"]
    assert [c[2] is None for c in only_restricted.calls][-1] is True
    no_retry = NarrativeIndexRetriever(only_restricted, retry_without_filters=False)
    assert no_retry.retrieve("q", filters={"c": "board"}) == []


@pytest.mark.parametrize("top_k", [1, 2, 3, 10])
def test_never_more_snippets_than_top_k(top_k):
    pool = [res(f"r{i}", "RESTRICTED") if i % 2 else res(f"o{i}") for i in range(12)]
    index = FakeIndex(pool, pool)
    snippets = NarrativeIndexRetriever(index).retrieve("q", top_k=top_k)
    assert len(snippets) <= top_k
    assert len(snippets) == min(top_k, 6)


def test_default_top_k():
    index = FakeIndex([], [])
    NarrativeIndexRetriever(index).retrieve("q")
    assert index.calls[0][1] == DEFAULT_RETRIEVE_TOP_K == 50


# -- filter_extractor ---------------------------------------------------------------------------
class Extractor:
    def __init__(self, out: Any = None, error: Exception | None = None) -> None:
        self.out = out
        self.error = error
        self.queries: list[str] = []

    def extract(self, query):
        self.queries.append(query)
        if self.error:
            raise self.error
        return self.out


def test_extracted_filter_is_anded_with_the_user_filter():
    auto = MetadataFilter((FilterCondition("entity", "eq", "ACME"),))
    index = FakeIndex([res("a")], [res("a")])
    NarrativeIndexRetriever(index, filter_extractor=Extractor(auto)).retrieve("acme q", filters={"year": 2024})
    sent = index.calls[0][2]
    assert set(sent.conditions) == {FilterCondition("entity", "eq", "ACME"), FilterCondition("year", "eq", 2024)}


def test_extracted_filter_alone_is_used_without_a_user_filter():
    auto = MetadataFilter((FilterCondition("entity", "eq", "ACME"),))
    index = FakeIndex([res("a")], [res("a")])
    NarrativeIndexRetriever(index, filter_extractor=Extractor(auto)).retrieve("q")
    assert index.calls[0][2] == auto


@pytest.mark.parametrize(
    "extractor",
    [
        Extractor(error=RuntimeError("llm down")),
        Extractor(out={"entity": "ACME"}),  # junk: not a MetadataFilter
        Extractor(out="entity = ACME"),
        Extractor(out=MetadataFilter(())),  # empty
        Extractor(out=None),
    ],
)
def test_extractor_failure_never_widens_nor_raises(extractor):
    index = FakeIndex([res("a")], [res("a"), res("b")])
    NarrativeIndexRetriever(index, filter_extractor=extractor).retrieve("q", filters={"year": 2024})
    assert index.calls[0][2] == MetadataFilter((FilterCondition("year", "eq", 2024),))
    index = FakeIndex([res("a")], [res("a"), res("b")])
    NarrativeIndexRetriever(index, filter_extractor=extractor).retrieve("q")
    assert index.calls[0][2] is None


def test_controlled_vocab_extractor_narrows_real_retrieval(sqlite_db):
    index = NarrativeIndex(sqlite_db.chunk_store("lib-a"))
    index.ingest_text("acme", "gearbox revenue report", metadata={"entity": "ACME"})
    index.ingest_text("other", "gearbox revenue report", metadata={"entity": "OTHER"})
    vocab = {"entity": {"ACME": ["acme corp"], "OTHER": ["other inc"]}}
    retriever = NarrativeIndexRetriever(index, filter_extractor=ControlledVocabFilterExtractor(vocab))
    assert [s["doc_id"] for s in retriever.retrieve("acme corp gearbox revenue")] == ["acme"]
    assert {s["doc_id"] for s in retriever.retrieve("gearbox revenue")} == {"acme", "other"}


# -- snippet dicts ------------------------------------------------------------------------------
def test_snippet_carries_full_provenance():
    chunk = stored(
        "d1",
        title="Doc one",
        source_locator="d1.md#char=10,24",
        metadata={"topic": "results", "entity": "ACME", "year": 2024},
        version=3,
        valid_as_of="2024-09-30",
        library_id="lib-store",
    )
    snippet = to_snippet(RetrievalResult(chunk, {"bm25": 1, "fused": 0.5}, "lib-x"))
    assert snippet["text"] == "text of d1"
    assert snippet["doc_id"] == "d1" and snippet["chunk_id"] == "d1#0"
    assert snippet["title"] == "Doc one"
    assert snippet["source_locator"] == "d1.md#char=10,24"
    assert snippet["sensitivity"] == "INTERNAL"
    assert snippet["library_id"] == "lib-x"
    assert snippet["version"] == 3 and snippet["valid_as_of"] == "2024-09-30"
    assert snippet["metadata"] == {"topic": "results", "entity": "ACME", "year": 2024}
    assert snippet["topic"] == "results" and snippet["entity"] == "ACME"
    assert snippet["geography"] == "" and snippet["period"] == "" and snippet["language"] == ""
    assert snippet["scores"] == {"bm25": 1.0, "vector": 0.0, "fused": 0.5}
    assert all(isinstance(v, float) for v in snippet["scores"].values())
    assert "prompt_text" not in snippet and "parent_id" not in snippet and "heading" not in snippet
    snippet["metadata"]["topic"] = "changed"
    assert chunk.metadata["topic"] == "results"  # a copy, not the chunk's own mapping


def test_snippet_library_falls_back_to_the_chunk_library():
    chunk = stored("d1", library_id="lib-store")
    assert to_snippet(RetrievalResult(chunk, {})).get("library_id") == "lib-store"


def test_snippet_window_text_becomes_prompt_text():
    chunk = stored(
        "d1", parent_id="d1/p0", heading="Results", window_text="the whole section", parent_locator="d1#char=0,99"
    )
    snippet = to_snippet(RetrievalResult(chunk, {}))
    assert snippet["prompt_text"] == "the whole section"
    assert snippet["parent_locator"] == "d1#char=0,99"
    assert snippet["parent_id"] == "d1/p0" and snippet["heading"] == "Results"
    assert snippet["text"] == "text of d1"  # the citation stays on the child


def test_restricted_window_text_never_reaches_a_snippet(store):
    index = NarrativeIndex(store)
    index.replace_doc_chunks("secret", [make_chunk("secret", 0, "gearbox memo", sensitivity="restricted",
                                                   window_text="hidden parent text")])
    index.replace_doc_chunks("open", [make_chunk("open", 0, "gearbox note", window_text="open parent text")])
    snippets = NarrativeIndexRetriever(index).retrieve("gearbox memo")
    assert [s["doc_id"] for s in snippets] == ["open"]
    assert snippets[0]["prompt_text"] == "open parent text"
    assert "hidden" not in repr(snippets)


# -- ProviderListwiseJudge / build_narrative_retriever ------------------------------------------
Provider = ScriptedLLMProvider


def test_provider_judge_parses_the_provider_answer():
    provider = Provider("[2] > [0] > [1]")
    assert ProviderListwiseJudge(provider).judge("q", ["a", "b", "c"]) == [2, 0, 1]
    assert "[0] a" in provider.prompts[0]


def test_build_narrative_retriever_from_a_path(tmp_path):
    retriever, store = build_narrative_retriever(tmp_path / "x" / "chunks.db", library_id="lib-p")
    try:
        assert isinstance(retriever, NarrativeIndexRetriever)
        assert store.library_id == "lib-p" == retriever.library_id
        assert retriever.index.mode.name == "economy"
        assert retriever.index.embedding_backend is None and retriever.index.vector_store is None
        assert retriever.index.reranker is None
        retriever.index.ingest_text("d", "gearbox warranty", source="d.md")
        (snippet,) = retriever.retrieve("warranty")
        assert snippet["source_locator"] == "d.md#char=0,16"
    finally:
        store.close()
    assert (tmp_path / "x" / "chunks.db").exists()


def test_build_narrative_retriever_with_provider_reranks(store):
    provider = Provider("1, 0")
    retriever, _ = build_narrative_retriever(store, provider)
    assert isinstance(retriever.index.reranker, ListwiseReranker)
    retriever.index.ingest_text("a", "gearbox gearbox gearbox warranty")
    retriever.index.ingest_text("b", "gearbox warranty terms and conditions apply here")
    plain = [r.chunk.doc_id for r in NarrativeIndex(store).retrieve("gearbox warranty")]
    assert plain == ["a", "b"]
    assert [s["doc_id"] for s in retriever.retrieve("gearbox warranty")] == ["b", "a"]
    assert len(provider.prompts) == 1


def test_an_explicit_reranker_wins_over_the_provider(store):
    class Keep:
        def rerank(self, query, results):
            return results

    provider = Provider()
    keep = Keep()
    retriever, _ = build_narrative_retriever(store, provider, reranker=keep)
    assert retriever.index.reranker is keep
    retriever.index.ingest_text("a", "gearbox one")
    retriever.index.ingest_text("b", "gearbox two")
    retriever.retrieve("gearbox")
    assert provider.prompts == []


def test_search_says_when_the_filters_were_dropped():
    index = FakeIndex([], [res("a"), res("b")])
    answer = NarrativeIndexRetriever(index).search("q", filters=MetadataFilter((FilterCondition("topic", "eq", "x"),)), top_k=5)
    assert answer.filters_dropped is True and [s["doc_id"] for s in answer.snippets] == ["a", "b"]
    assert all(s["filters_dropped"] is True for s in answer.snippets)
    kept = NarrativeIndexRetriever(FakeIndex([res("a")], [res("b")])).search("q", filters=MetadataFilter((FilterCondition("t", "eq", 1),)))
    assert kept.filters_dropped is False and "filters_dropped" not in kept.snippets[0]
    strict = NarrativeIndexRetriever(FakeIndex([], [res("a")]), retry_without_filters=False)
    assert strict.search("q", filters=MetadataFilter((FilterCondition("t", "eq", 1),))).snippets == []


# -- what a search reports is its own, on a pipeline that requests share -------------------------
def test_two_searches_interleaved_on_one_pipeline_each_report_their_own_dense_coverage(store):
    """One pipeline, one exit, two threads: the ``north`` search's dense leg finishes, then it
    waits (an event) while the whole ``south`` search runs, then it finishes. Its candidates all
    have vectors, the south ones none: each answer says so of itself — never what the other
    search, the last one to run the shared dense leg, found."""
    from ragspine.retrieval.vector.dense import DenseCoverage
    from ragspine.retrieval.vector.embedding_backends import DeterministicEmbeddingBackend

    index = NarrativeIndex(store, mode="hybrid", embedding_backend=DeterministicEmbeddingBackend(dim=64))
    for n in range(2):
        index.ingest_text(f"north-{n}", f"North depot gearbox report {n}.", metadata={"region": "north"})
        index.ingest_text(f"south-{n}", f"South depot gearbox report {n}.", metadata={"region": "south"}, embed=False)
    exit_ = NarrativeIndexRetriever(index)
    dense = index.retriever.dense
    searched, south_done = threading.Event(), threading.Event()
    real = dense.search

    def search(query, metadata_filter, depth, versions=None, qvec=None):  # the north search waits inside the pipeline
        found = real(query, metadata_filter, depth, versions, qvec)
        if threading.current_thread().name == "north":
            searched.set()
            assert south_done.wait(10), "the south search never finished"
        return found

    dense.search = search
    answers: dict[str, Any] = {}

    def run(region: str) -> None:
        answers[region] = exit_.search("gearbox report", filters=MetadataFilter((FilterCondition("region", "eq", region),)))

    north = threading.Thread(target=run, args=("north",), name="north")
    north.start()
    assert searched.wait(10), "the north search never reached its dense leg"
    run("south")  # the whole south search, while the north one is between its dense leg and its answer
    south_done.set()
    north.join(10)
    assert not north.is_alive()
    assert {s["doc_id"] for s in answers["north"].snippets} == {"north-0", "north-1"}
    assert {s["doc_id"] for s in answers["south"].snippets} == {"south-0", "south-1"}
    assert answers["south"].dense_incomplete == {"lib-a": DenseCoverage(missing=2, total=2)}
    assert answers["north"].dense_incomplete == {}  # its own: every north candidate has a vector
    assert not hasattr(dense, "coverage") and not hasattr(index, "dense_coverage")  # nothing "of the last search" to read
