"""A probe's legs travel with the probe: HyDE's passage runs the dense leg only, at the probe
weight, whatever its text says — even when it is the question's own text or a glossary
variant's (nothing is recognised by string identity), and a variant keeps every leg."""

from __future__ import annotations

from typing import Any

import pytest

from ragspine.retrieval.link.narrative_link import NarrativeIndexRetriever
from ragspine.retrieval.pipeline import LibraryPipeline
from ragspine.retrieval.query.transforms import HyDETransform
from ragspine.retrieval.reasoning import ReasoningRetriever
from ragspine.retrieval.vector.embedding_backends import DeterministicEmbeddingBackend
from ragspine.stores.sqlite import SQLiteDatabase
from ragspine.testing.llm import ScriptedLLMProvider
from tests.unit.retrieval.reasoning.conftest import DOCS

QUESTION = "gearbox revenue fell in 2023"
VARIANT = "gearbox sales dropped last year"


class Variants:
    """A rewriter giving the question and one fixed variant."""

    def rewrite(self, query: str) -> list[str]:
        return [query, VARIANT]


@pytest.fixture
def hybrid():
    database = SQLiteDatabase(":memory:")
    database.init_schema()

    def make(rewriter: Any = None) -> tuple[LibraryPipeline, list[tuple[str, tuple[str, ...], float]]]:
        pipeline = LibraryPipeline(database.chunk_store(f"lib{id(rewriter)}"), embedding_backend=DeterministicEmbeddingBackend(dim=64),
                                   rewriter=rewriter)
        for doc_id, (text, meta) in DOCS.items():
            pipeline.ingest_text(doc_id, text, title=doc_id, metadata=meta, source=doc_id)
        runs: list[tuple[str, tuple[str, ...], float]] = []
        own = pipeline.retriever.rankings

        def rankings(query: Any, **kwargs: Any) -> Any:  # records which text ran which legs, at which weight
            legs = own(query, **kwargs)
            runs.append((getattr(query, "text", query), tuple(legs), legs.weight))
            return legs

        pipeline.retriever.rankings = rankings  # type: ignore[method-assign]
        return pipeline, runs

    yield make
    database.close()


def hyde(pipeline: LibraryPipeline, passage: str) -> ReasoningRetriever:
    return ReasoningRetriever(NarrativeIndexRetriever(pipeline), transform=HyDETransform(ScriptedLLMProvider(passage)))


def test_a_hyde_passage_equal_to_the_question_still_runs_the_dense_leg_only(hybrid) -> None:
    pipeline, runs = hybrid()
    assert pipeline.retriever.legs_for(QUESTION) == ("bm25", "vector")  # the dense gate reads it: not vacuous
    answer = hyde(pipeline, QUESTION).search(QUESTION, top_k=3)
    assert runs == [(QUESTION, ("bm25", "vector"), 1.0), (QUESTION, ("vector",), 0.5)]
    assert answer.snippets and answer.trace is not None and answer.trace[0]["hyde_passages"] == 1


def test_a_hyde_passage_equal_to_a_glossary_variant_leaves_the_variant_every_leg(hybrid) -> None:
    pipeline, runs = hybrid(Variants())
    hyde(pipeline, VARIANT).search(QUESTION, top_k=3)
    assert runs == [(QUESTION, ("bm25", "vector"), 1.0), (VARIANT, ("bm25", "vector"), 1.0), (VARIANT, ("vector",), 0.5)]


def test_without_a_transform_only_the_questions_own_variants_run(hybrid) -> None:
    pipeline, runs = hybrid(Variants())
    NarrativeIndexRetriever(pipeline).search(QUESTION, top_k=3)
    assert runs == [(QUESTION, ("bm25", "vector"), 1.0), (VARIANT, ("bm25", "vector"), 1.0)]
