"""RESTRICTED isolation at both exits (the third invariant, ``docs/concepts.md``): a RESTRICTED chunk that is the best
lexical match is never returned and never reaches a judge/reranker prompt — in every mode,
with and without filters and routing, whatever the case of its sensitivity; neither does its
window text. An exit that does not drop RESTRICTED must fail the checker."""

from __future__ import annotations

from typing import Any

import pytest

from ragspine.retrieval.ask_again import Page
from ragspine.retrieval.lexical.index import InMemoryLexicalIndex
from ragspine.retrieval.lexical.tokenizer import tokenize
from ragspine.retrieval.link.narrative_link import (
    NarrativeIndexRetriever,
    ProviderListwiseJudge,
    Retrieval,
    build_narrative_retriever,
    to_snippet,
)
from ragspine.retrieval.narrative_index import NarrativeIndex
from ragspine.retrieval.rerank.listwise_rerank import ListwiseReranker
from ragspine.retrieval.routing.multi_index import MultiIndexRetriever
from ragspine.retrieval.routing.routers import KeywordLibraryRouter
from ragspine.retrieval.sensitivity import RESTRICTED_SENSITIVITY, is_restricted
from ragspine.retrieval.vector.embedding_backends import DeterministicEmbeddingBackend
from tests.conformance.conftest import (
    DESCRIPTIONS,
    QUERY,
    SECRET_WINDOW_WORD,
    SECRET_WORD,
    Doc,
    RecordingJudge,
    RecordingProvider,
    assert_no_restricted,
    exposed_index,
    ingest,
    library_a_docs,
    library_b_docs,
)
from tests.helpers import make_chunk

MODES = ("auto", "hybrid", "vector", "economy", "bm25", "lexical")
SENSITIVITIES = ("RESTRICTED", "restricted", " Restricted ")
FILTERS = {"no-filter": None, "filter": {"region": {"in": ["north", "south"]}}}
OPEN_WINDOW = "open parent section about gearbox supply planning"


class RecordingReranker:
    """A custom Reranker: records the text and window text of everything it is shown."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def rerank(self, query: str, results: list[Any]) -> list[Any]:
        for r in results:
            self.seen.append(f"{r.chunk.text}\n{r.chunk.window_text}\n{r.chunk.sensitivity}")
        return list(reversed(results))


def _window_chunks(doc_id: str, sensitivity: str, secret: bool) -> list[Any]:
    text = f"Gearbox supply delays window child {SECRET_WORD if secret else 'open'}"
    return [
        make_chunk(
            doc_id,
            0,
            text,
            title=doc_id,
            source_locator=f"{doc_id}#char=0,{len(text)}",
            char_end=len(text),
            metadata={"region": "north", "year": 2023},
            sensitivity=sensitivity,
            parent_id=f"{doc_id}/parent",
            window_text=(f"{SECRET_WINDOW_WORD} restricted parent section" if secret else OPEN_WINDOW),
            parent_locator=f"{doc_id}#char=0,{len(text)}",
        )
    ]


def _fill(index: NarrativeIndex, docs: list[Doc], sensitivity: str, lib: str) -> None:
    ingest(index, docs)
    index.replace_doc_chunks(f"{lib}/secret-window", _window_chunks(f"{lib}/secret-window", sensitivity, True))
    index.replace_doc_chunks(f"{lib}/open-window", _window_chunks(f"{lib}/open-window", "INTERNAL", False))


def build(db, mode: str, sensitivity: str, *, routed: bool, custom_reranker: bool):
    """Returns (retriever, prompt sources, indexes)."""
    backend = DeterministicEmbeddingBackend()
    provider = RecordingProvider("1, 0, 2")
    recorder = RecordingReranker()
    libs = {"lib-a": library_a_docs(sensitivity), "lib-b": library_b_docs(sensitivity)}
    retrievers, indexes = {}, {}
    for lib in libs if routed else ["lib-a"]:
        db.ensure_library(lib, DESCRIPTIONS[lib])
        store = db.chunk_store(lib)
        retriever, _ = build_narrative_retriever(
            store,
            provider,
            lexical_index=InMemoryLexicalIndex(store, include_restricted=True),
            embedding_backend=backend,
            mode=mode,
            library_id=lib,
            reranker=recorder if custom_reranker else None,
        )
        _fill(retriever.index, libs[lib], sensitivity, lib)
        retrievers[lib], indexes[lib] = retriever, retriever.index
    if routed:
        top: Any = MultiIndexRetriever(retrievers, router=KeywordLibraryRouter(), descriptions=DESCRIPTIONS)
    else:
        top = retrievers["lib-a"]
    return top, (lambda: provider.prompts + recorder.seen), indexes


def assert_restricted_is_top_lexical(index: NarrativeIndex, filters: Any = None) -> None:
    index.retriever.refresh()
    hit = index.retriever.index.search(tokenize(QUERY), top_k=1)[0]
    chunk = index.store.get_chunks([hit.chunk_id])[0]
    assert is_restricted(chunk.sensitivity), f"precondition: {chunk.chunk_id} should be RESTRICTED"
    fused = index.retrieve(QUERY, top_k=3, metadata_filter=filters)
    assert any(is_restricted(r.chunk.sensitivity) for r in fused)


@pytest.mark.parametrize("custom_reranker", [False, True], ids=["listwise-judge", "custom-reranker"])
@pytest.mark.parametrize("routed", [False, True], ids=["single", "routed"])
@pytest.mark.parametrize("filt", list(FILTERS))
@pytest.mark.parametrize("mode", MODES)
def test_restricted_best_match_never_returned_nor_prompted(db, mode, filt, routed, custom_reranker):
    for sensitivity in SENSITIVITIES:
        db_lib = db  # a fresh library set per sensitivity variant
        for lib in ("lib-a", "lib-b"):
            db_lib.delete_library(lib)
        retriever, prompts, indexes = build(db_lib, mode, sensitivity, routed=routed, custom_reranker=custom_reranker)
        for index in indexes.values():
            assert_restricted_is_top_lexical(index, FILTERS[filt])
        snippets = retriever.retrieve(QUERY, filters=FILTERS[filt], top_k=10)
        assert snippets, "open chunks match the query too"
        assert_no_restricted(snippets, prompts())
        assert prompts(), "the reranker/judge must have been consulted (non-vacuous)"
        assert {s["library_id"] for s in snippets} <= set(indexes)
        # the open window chunk keeps its prompt_text: the exit drops only RESTRICTED parents
        for s in snippets:
            if s["doc_id"].endswith("/open-window"):
                assert s["prompt_text"] == OPEN_WINDOW


@pytest.mark.parametrize("sensitivity", SENSITIVITIES)
def test_restricted_sensitivity_is_case_insensitive(sensitivity):
    assert is_restricted(sensitivity)
    assert not is_restricted("INTERNAL") and not is_restricted("restricted-ish")
    assert RESTRICTED_SENSITIVITY == "RESTRICTED"


@pytest.mark.parametrize("mode", ["economy", "hybrid"])
@pytest.mark.parametrize("sensitivity", SENSITIVITIES)
def test_all_restricted_candidates_never_call_the_judge(db, mode, sensitivity):
    provider = RecordingProvider("0")
    secret_store = db.chunk_store("only-secret")
    retriever, _ = build_narrative_retriever(
        secret_store, provider, embedding_backend=DeterministicEmbeddingBackend(),
        mode=mode, library_id="only-secret", lexical_index=InMemoryLexicalIndex(secret_store, include_restricted=True),
    )
    docs = [d for d in library_a_docs(sensitivity) if is_restricted(d.sensitivity)]
    docs.append(Doc("a/board-memo-2", f"Gearbox supply delays again. {SECRET_WORD}", {"region": "north"}, sensitivity))
    _fill(retriever.index, docs, sensitivity, "only-secret")
    retriever.index.retire("only-secret/open-window")
    for filters in (None, {"region": "north"}, {"region": "nowhere"}):
        assert retriever.retrieve(QUERY, filters=filters, top_k=10) == []
    assert provider.prompts == []


@pytest.mark.parametrize("routed", [False, True], ids=["single", "routed"])
@pytest.mark.parametrize("mode", ["economy", "hybrid", "vector"])
def test_filter_selecting_only_restricted_is_no_existence_oracle(db, mode, routed):
    """A filter matching only RESTRICTED chunks gets the same answer as one matching nothing:
    neither the snippets nor the prompts show that RESTRICTED content matched."""
    retriever, prompts, _ = build(db, mode, "restricted", routed=routed, custom_reranker=False)
    selects_secret = retriever.retrieve(QUERY, filters={"classification": "board-only"}, top_k=10)
    selects_nothing = retriever.retrieve(QUERY, filters={"classification": "no-such"}, top_k=10)
    assert selects_secret == selects_nothing
    assert_no_restricted(selects_secret, prompts())


def test_judge_sees_only_open_candidates_in_rrf_positions(db):
    judge = RecordingJudge()
    lib_store = db.chunk_store("lib-a")
    retriever, _ = build_narrative_retriever(
        lib_store, reranker=ListwiseReranker(judge), library_id="lib-a",
        lexical_index=InMemoryLexicalIndex(lib_store, include_restricted=True),
    )
    _fill(retriever.index, library_a_docs(), "restricted", "lib-a")
    plain = retriever.index.retrieve(QUERY, top_k=10)
    assert is_restricted(plain[0].chunk.sensitivity)
    snippets = retriever.retrieve(QUERY, top_k=10)
    assert judge.calls and all(SECRET_WORD not in t for call in judge.calls for t in call)
    assert_no_restricted(snippets)


# -- the inverse proofs ----------------------------------------------------------------------
class LeakyExit(NarrativeIndexRetriever):
    """Broken on purpose: builds a snippet for every result, RESTRICTED included."""

    def retrieve(self, query, *, filters=None, top_k=50):
        return [to_snippet(r) for r in self.index.retrieve(query, top_k=top_k, metadata_filter=filters)]

    def search(self, query, *, filters=None, top_k=50):
        return Retrieval(self.retrieve(query, filters=filters, top_k=top_k))


class LeakyRerankIndex(NarrativeIndex):
    """Broken on purpose: sends every fused result (RESTRICTED too) to the judge."""

    def __init__(self, *args: Any, judge: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.judge = judge

    def search_once(self, query, want, metadata_filter, skip_stale=False):
        page = super().search_once(query, want, metadata_filter, skip_stale)
        results = page.items
        order = self.judge.judge(query, [f"{r.chunk.text} {r.chunk.window_text}" for r in results])
        return Page([results[i] for i in order], page.exhausted, page.dense_coverage)


class LeakyWindowExit(NarrativeIndexRetriever):
    """Broken on purpose: drops RESTRICTED chunks but pastes their window text into a neighbour."""

    def retrieve(self, query, *, filters=None, top_k=50):
        results = self.index.retrieve(query, top_k=top_k, metadata_filter=filters)
        windows = " ".join(r.chunk.window_text for r in results if is_restricted(r.chunk.sensitivity))
        out = [to_snippet(r) for r in results if not is_restricted(r.chunk.sensitivity)]
        if out:
            out[0]["prompt_text"] = f"{out[0].get('prompt_text', '')} {windows}"
        return out


@pytest.mark.parametrize("sensitivity", SENSITIVITIES)
@pytest.mark.parametrize("mode", ["economy", "hybrid"])
def test_inverse_exits_that_keep_restricted_fail_the_checker(db, mode, sensitivity):
    backend = DeterministicEmbeddingBackend()
    index = exposed_index(db.chunk_store("lib-a"), embedding_backend=backend, mode=mode)
    _fill(index, library_a_docs(sensitivity), sensitivity, "lib-a")
    assert_no_restricted(NarrativeIndexRetriever(index).retrieve(QUERY, top_k=10))  # the real exit
    for leaky in (LeakyExit(index), LeakyWindowExit(index)):
        with pytest.raises(AssertionError):
            assert_no_restricted(leaky.retrieve(QUERY, top_k=10))
    provider = RecordingProvider("0")
    leaky_store = db.chunk_store("lib-a")
    leaky_index = LeakyRerankIndex(
        leaky_store, embedding_backend=backend, mode=mode, judge=ProviderListwiseJudge(provider),
        lexical_index=InMemoryLexicalIndex(leaky_store, include_restricted=True),
    )
    snippets = NarrativeIndexRetriever(leaky_index).retrieve(QUERY, top_k=10)
    assert_no_restricted(snippets)  # the link exit still drops them ...
    with pytest.raises(AssertionError):  # ... but the rerank exit leaked them into a prompt
        assert_no_restricted(snippets, provider.prompts)


def test_inverse_multi_index_over_a_leaky_exit_fails(db):
    index = exposed_index(db.chunk_store("lib-a"))
    _fill(index, library_a_docs(), "RESTRICTED", "lib-a")
    multi = MultiIndexRetriever({"lib-a": LeakyExit(index)}, router=KeywordLibraryRouter())
    with pytest.raises(AssertionError):
        assert_no_restricted(multi.retrieve(QUERY, top_k=10))
