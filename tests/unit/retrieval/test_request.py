"""The request travels in the call: concurrent requests with their own ranking stages and leg
weights on one shared pipeline each get their own ranking — on any thread, with no state the
requests share — and the pipeline's own choices stay as they were."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from ragspine.retrieval.link.narrative_link import NarrativeIndexRetriever, Retrieval
from ragspine.retrieval.metadata import STANDARD_FIELDS
from ragspine.retrieval.pipeline import LibraryPipeline
from ragspine.retrieval.ranking import Stages
from ragspine.retrieval.request import Answer, SearchRequest
from ragspine.retrieval.snippet import Snippet
from ragspine.retrieval.vector.embedding_backends import DeterministicEmbeddingBackend
from ragspine.stores.sqlite import SQLiteDatabase

DOCS = {
    f"d{i}": f"Gearbox {'revenue ' * (i % 3)}fell as {'supply ' * (i % 4)}delays {'halted ' * (i % 2)}deliveries in plant {i}."
    for i in range(12)
}
QUERY = "gearbox revenue supply delays"


class Reverse:
    """A slow reranker reversing the order (slow, so that concurrent searches overlap)."""

    def rerank(self, query: str, results: list[Any]) -> list[Any]:
        time.sleep(0.005)
        return list(reversed(results))


@pytest.fixture(scope="module")
def exit_():
    database = SQLiteDatabase(":memory:")  # one connection behind a lock: shared by the threads
    database.init_schema()
    pipeline = LibraryPipeline(database.chunk_store("lib"), embedding_backend=DeterministicEmbeddingBackend(dim=64), rewriter=None)
    for doc_id, text in DOCS.items():
        pipeline.ingest_text(doc_id, text, title=doc_id, source=doc_id)
    yield NarrativeIndexRetriever(pipeline)
    database.close()


REQUESTS = {
    "plain": SearchRequest(QUERY, top_k=6),
    "reversed, BM25 only": SearchRequest(QUERY, top_k=6, stages=Stages(Reverse(), 12, None), weights={"bm25": 1.0, "vector": 0.0}),
    "dense only": SearchRequest(QUERY, top_k=6, weights={"bm25": 0.0, "vector": 1.0}),
}


def ranking(answer: Answer) -> list[tuple[str, float]]:
    return [(s["doc_id"], s["scores"]["fused"]) for s in answer.snippets]


def test_concurrent_requests_on_one_pipeline_each_get_their_own_ranking(exit_) -> None:
    alone = {name: ranking(exit_.search(request)) for name, request in REQUESTS.items()}
    assert len({tuple(r) for r in alone.values()}) == len(REQUESTS), "the requests must rank differently (vacuous)"
    barrier = threading.Barrier(len(REQUESTS))
    got: dict[str, list[list[tuple[str, float]]]] = {name: [] for name in REQUESTS}
    errors: list[BaseException] = []

    def run(name: str) -> None:
        try:
            for _ in range(6):
                barrier.wait(timeout=30)
                got[name].append(ranking(exit_.search(REQUESTS[name])))
        except BaseException as exc:  # reported below, with the thread's name
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(name,), name=name) for name in REQUESTS]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors, errors
    assert got == {name: [alone[name]] * 6 for name in REQUESTS}


def test_a_request_built_on_one_thread_is_followed_on_another(exit_) -> None:
    alone = {name: ranking(exit_.search(request)) for name, request in REQUESTS.items()}
    with ThreadPoolExecutor(max_workers=2) as pool:  # the worker threads share no context with this one
        futures = {name: pool.submit(exit_.search, request) for name, request in REQUESTS.items()}
        assert {name: ranking(f.result(timeout=60)) for name, f in futures.items()} == alone
    # and the shared pipeline's own choices are untouched
    assert exit_.index.reranker is None and exit_.index.retriever.leg_weights is None
    assert ranking(exit_.search(QUERY, top_k=6)) == alone["plain"]


def test_a_request_carries_its_own_filter_and_top_k() -> None:
    request = SearchRequest("q", top_k=3)
    assert SearchRequest.of(request) is request and SearchRequest.of("q", top_k=3) == request
    assert SearchRequest.of("q").top_k == 50
    with pytest.raises(TypeError):
        SearchRequest.of(request, top_k=4)


def test_the_answer_keeps_its_old_name_and_has_every_field() -> None:
    assert Retrieval is Answer
    answer = Answer()
    assert (answer.snippets, answer.filters_dropped, answer.dense_incomplete, answer.refusal, answer.refused, answer.trace) == (
        [], False, {}, None, None, None)


def test_the_snippet_type_names_the_seeds_fields_in_their_order() -> None:
    keys = list(Snippet.__annotations__)  # the required keys first, then the optional ones
    required = list(Snippet.__required_keys__)
    assert set(STANDARD_FIELDS) <= set(required)
    assert [k for k in keys if k in STANDARD_FIELDS] == list(STANDARD_FIELDS)
