"""RAPTOR's conformance pack, on SQLite, PostgreSQL 18 and PostgreSQL 15:

* the RaptorStore contract (``ragspine.testing.RaptorStoreConformance``);
* **deterministic** — two builds, and a build over the same documents ingested in another
  order, are the same tree;
* **isolation** — a tree's leaves are its own library's chunks; another library's tree is
  never used (a library without one is an error, not a borrowed tree);
* **provenance** — every snippet of a RAPTOR search is a stored leaf chunk with its own
  locator, and synthesis hits did contribute (a leaf ranked by the leg);
* **RESTRICTED** — never a member, never in a synthesis text, never in a summary prompt (a spy
  provider records them); a RESTRICTED leaf reaching the exits through a synthesis hit is
  dropped at both (the judge never sees it, no snippet carries it);
* **generated text is never evidence** — a token planted in every LLM summary is in no snippet;
* **byte-identical default** — RAPTOR unset or off gives the same JSON as a pipeline without it;
* a stale tree ignores the nodes whose leaves changed; economy mode is refused in one line.

Each check (``ragspine.testing.raptor``) is shown to fail on a deliberately broken part
(``leaky_raptor.py``).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from ragspine.errors import ConfigError
from ragspine.retrieval.lexical.index import InMemoryLexicalIndex
from ragspine.retrieval.narrative_index import NarrativeIndex
from ragspine.retrieval.raptor import (
    RaptorOptions,
    build_raptor_tree,
    make_raptor_retriever,
    make_raptor_store,
    rebuild,
)
from ragspine.retrieval.raptor.retriever import raptor_leg
from ragspine.retrieval.raptor.summarize import LLMSummarizer
from ragspine.retrieval.request import SearchRequest
from ragspine.retrieval.rerank.listwise_rerank import ListwiseReranker
from ragspine.retrieval.sensitivity import is_restricted
from ragspine.retrieval.vector.embedding_backends import DeterministicEmbeddingBackend
from ragspine.stores.sqlite import SQLiteDatabase
from ragspine.testing import RaptorStoreConformance
from ragspine.testing.llm import ScriptedLLMProvider
from ragspine.testing.raptor import (
    assert_no_restricted_text,
    assert_not_evidence,
    assert_same_tree,
    assert_snippets_are_stored_leaves,
    assert_tree_is_the_librarys,
)
from tests.conformance.conftest import (
    QUERY,
    SECRET_WORD,
    SHARED_DOC_ID,
    SHARED_TEXT,
    Doc,
    RecordingJudge,
    assert_provenance,
    ingest,
    library_a_docs,
    library_b_docs,
)
from tests.conformance.leaky_raptor import NodeTextRetriever, restricted_members, tree_of_another_library

OPTIONS = RaptorOptions(threshold=0.3, max_cluster=4)
MARK = "zqraptorsummaryzq"
BACKENDS = ["sqlite", "postgresql18", "postgresql15"]


def open_database(kind: str, request: pytest.FixtureRequest, tmp_path: Any) -> Any:
    if kind == "sqlite":
        db = SQLiteDatabase(tmp_path / "chunks.db")
    else:
        from ragspine.stores.postgres.database import PostgresDatabase

        url, schema = request.getfixturevalue("pg_schema" if kind == "postgresql18" else "pg15_schema")
        db = PostgresDatabase(url, schema=schema)
    db.init_schema()
    return db


@pytest.fixture(params=BACKENDS)
def database(request: pytest.FixtureRequest, tmp_path: Any) -> Any:
    db = open_database(request.param, request, tmp_path)
    yield db
    db.close()


class TestRaptorStores(RaptorStoreConformance):
    @pytest.fixture
    def raptor_store_factory(self, database: Any) -> Any:
        return lambda library_id: (make_raptor_store(library_id, database=database), database)


def docs_of(library: str) -> list[Doc]:
    docs = library_a_docs() if library == "lib-a" else library_b_docs()
    return [*docs, Doc(SHARED_DOC_ID, SHARED_TEXT[library])]


def pipeline(db: Any, library: str, *, exposed: bool = False, mode: str = "hybrid", docs: list[Doc] | None = None, **kw: Any) -> Any:
    """``library``'s hybrid pipeline with the deterministic embedding, its documents ingested;
    ``exposed``: its lexical index holds RESTRICTED chunks too (they then reach the exits)."""
    store = db.chunk_store(library)
    if exposed:
        kw["lexical_index"] = InMemoryLexicalIndex(store, include_restricted=True)
    index = NarrativeIndex(store, embedding_backend=DeterministicEmbeddingBackend(), mode=mode, **kw)
    sources = ingest(index, docs if docs is not None else docs_of(library))
    index.sources = sources  # type: ignore[attr-defined]
    return index


def built(index: Any, summarizer: Any = None) -> Any:
    tree, outcome = rebuild(index, make_raptor_store(index.library_id, database=index.store.db), options=OPTIONS,
                            summarizer=summarizer, force=True)
    assert outcome == "built" and tree is not None and tree.nodes, "the scenario must give a tree"
    return tree


def raptor_hits(index: Any, query: str = QUERY) -> list[Any]:
    """The pipeline's results with RAPTOR on that are leaves of the synthesis nodes the query hit."""
    make_raptor_retriever(index)  # gives the pipeline its leg
    leg = raptor_leg(index)
    assert leg is not None
    via = {leaf.chunk_id for node, _ in leg.nodes_for(query) for leaf in node.leaves}
    assert any(node is not None for _, _, node in leg.collapse(query, None, 20)), "no synthesis hit (vacuous)"
    results = index.search_once(SearchRequest(query, raptor=True), 20, None).items
    return [r for r in results if r.chunk_id in via]


def search_json(retriever: Any, query: str = QUERY, raptor: bool | None = None) -> str:
    return json.dumps(retriever.search(SearchRequest(query, top_k=10, raptor=raptor)).snippets, sort_keys=True, ensure_ascii=False)


# -- deterministic -------------------------------------------------------------------------------------
def test_the_same_library_gives_the_same_tree(database: Any) -> None:
    a = pipeline(database, "lib-a")
    first, second = build_raptor_tree(a, options=OPTIONS), build_raptor_tree(a, options=OPTIONS)
    assert_same_tree(first, second)
    assert max(n.level for n in first.nodes) >= 2, "the scenario should have a level above the chunks"
    permuted = pipeline(database, "lib-a-permuted", docs=list(reversed(docs_of("lib-a"))))
    assert_same_tree(first, build_raptor_tree(permuted, options=OPTIONS))
    other = build_raptor_tree(pipeline(database, "lib-b"), options=OPTIONS)
    with pytest.raises(AssertionError):  # the check can fail
        assert_same_tree(first, other)


# -- isolation -----------------------------------------------------------------------------------------
def test_a_tree_is_its_librarys_and_another_librarys_is_never_used(database: Any) -> None:
    a, b = pipeline(database, "lib-a"), pipeline(database, "lib-b")
    tree_a = built(a)
    assert_tree_is_the_librarys(tree_a, a.store)
    with pytest.raises(AssertionError):
        assert_tree_is_the_librarys(tree_of_another_library(built(b), "lib-a"), a.store)
    make_raptor_store("lib-b", database=database).delete()
    with pytest.raises(ConfigError, match="lib-b.*no RAPTOR tree"):  # lib-a's tree is not borrowed
        make_raptor_retriever(b).retrieve(QUERY)
    snippets = make_raptor_retriever(a).retrieve(QUERY, top_k=20)
    assert snippets and {s["library_id"] for s in snippets} == {"lib-a"}
    shared = [s for s in snippets if s["doc_id"] == SHARED_DOC_ID]
    assert all(s["text"] == SHARED_TEXT["lib-a"] for s in shared)
    built(b)
    both = make_raptor_retriever({"lib-a": a, "lib-b": b}).retrieve(QUERY, top_k=20)
    assert_snippets_are_stored_leaves(both, {"lib-a": a.store, "lib-b": b.store})


# -- provenance ----------------------------------------------------------------------------------------
def test_every_snippet_of_a_synthesis_hit_is_a_stored_leaf_with_its_locator(database: Any) -> None:
    a = pipeline(database, "lib-a")
    tree = built(a)
    hits = raptor_hits(a)
    leaves = {leaf.chunk_id for n in tree.nodes for leaf in n.leaves}
    assert hits and {r.chunk_id for r in hits} <= leaves, "the leg contributed no leaf (vacuous)"
    snippets = make_raptor_retriever(a).retrieve(QUERY, top_k=20)
    assert_snippets_are_stored_leaves(snippets, {"lib-a": a.store}, [tree])
    assert_provenance(snippets, a.sources)
    leaky = NodeTextRetriever(make_raptor_retriever(a), raptor_leg(a))
    with pytest.raises(AssertionError):
        assert_snippets_are_stored_leaves(leaky.search(QUERY).snippets, {"lib-a": a.store}, [tree])


# -- RESTRICTED ----------------------------------------------------------------------------------------
def test_restricted_text_is_never_a_member_a_synthesis_text_or_a_prompt(database: Any) -> None:
    spy = ScriptedLLMProvider(lambda prompt: "Gearbox supply was late across the plants.")
    trees = [built(pipeline(database, lib), LLMSummarizer(spy)) for lib in ("lib-a", "lib-b")]
    assert spy.calls >= len(trees), "no summary prompt was sent (vacuous)"
    for tree in trees:
        assert_no_restricted_text(tree, spy.prompts, [SECRET_WORD])
    for tree, lib in zip(trees, ("lib-a", "lib-b"), strict=False):
        assert_tree_is_the_librarys(tree, database.chunk_store(lib))
    leaky_spy = ScriptedLLMProvider("summary")
    with restricted_members():
        leaky = build_raptor_tree(pipeline(database, "lib-leaky", docs=docs_of("lib-a")), options=OPTIONS,
                                  summarizer=LLMSummarizer(leaky_spy))
    with pytest.raises(AssertionError):
        assert_no_restricted_text(leaky, leaky_spy.prompts, [SECRET_WORD])


def test_a_restricted_leaf_reached_through_a_synthesis_hit_is_dropped_at_both_exits(database: Any) -> None:
    judge = RecordingJudge()
    a = pipeline(database, "lib-a", exposed=True, reranker=ListwiseReranker(judge))
    with restricted_members():  # a tree that (wrongly) holds the RESTRICTED memo as a leaf
        built(a)
    memo = [r for r in raptor_hits(a) if is_restricted(r.chunk.sensitivity)]
    assert memo, "the RESTRICTED leaf must reach the exits through the leg (vacuous otherwise)"
    judge.calls.clear()
    snippets = make_raptor_retriever(a).retrieve(QUERY, top_k=20)
    assert snippets and not any(is_restricted(s["sensitivity"]) or SECRET_WORD in json.dumps(s) for s in snippets)
    assert judge.calls and not any(SECRET_WORD in text for call in judge.calls for text in call), "the judge saw RESTRICTED text"
    b = pipeline(database, "lib-b")  # the default index: a RESTRICTED chunk is never indexed nor embedded
    with restricted_members():
        tree = built(b)
    assert any("b/board-claims" in n.doc_ids for n in tree.nodes)
    make_raptor_retriever(b)
    leg = raptor_leg(b)
    assert leg is not None and not any(cid.startswith("b/board-claims") for cid, _, _ in leg.collapse(QUERY, None, 20))


# -- generated text is never evidence --------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["hybrid", "vector"])
def test_a_token_planted_in_every_summary_is_in_no_snippet(database: Any, mode: str) -> None:
    provider = ScriptedLLMProvider(f"Gearbox supply delays {MARK} were reported by every plant and claims desk.")
    a = pipeline(database, "lib-a", mode=mode)
    tree = built(a, LLMSummarizer(provider))
    assert all(MARK in n.text for n in tree.nodes) and raptor_hits(a), "the summaries carry the token and the leg ran"
    retriever = make_raptor_retriever(a)
    for query in (QUERY, "plants claims", MARK):
        assert_not_evidence(retriever.retrieve(query, top_k=20), MARK)
    with pytest.raises(AssertionError):
        assert_not_evidence(NodeTextRetriever(retriever, raptor_leg(a)).search(QUERY).snippets, MARK)


# -- byte-identical default -----------------------------------------------------------------------------
def test_raptor_off_is_byte_identical(database: Any, tmp_path: Any) -> None:
    from ragspine.retrieval.link.narrative_link import NarrativeIndexRetriever
    from ragspine.retrieval.raptor.leg import attach_raptor

    a = pipeline(database, "lib-a")
    plain = search_json(NarrativeIndexRetriever(a))
    built(a)
    attach_raptor(a, make_raptor_store("lib-a", database=database))  # attached, off by default
    assert search_json(NarrativeIndexRetriever(a)) == plain
    assert search_json(NarrativeIndexRetriever(a), raptor=False) == plain
    assert search_json(make_raptor_retriever(a)) != plain, "RAPTOR on changes nothing (vacuous)"


def test_the_stack_default_is_byte_identical(settings_env: Any) -> None:
    from ragspine.config import load_settings
    from ragspine.stack import Stack

    def answer(**extra: str) -> str:
        with Stack(load_settings(settings_env("hybrid", **extra))) as stack:
            if not stack.libraries():
                stack.ensure_library("lib-a")
                ingest(stack.pipeline("lib-a"), docs_of("lib-a"))
            return search_json(stack.retriever(["lib-a"]))

    plain = answer()
    with Stack(load_settings(settings_env("hybrid"))) as stack:
        rebuild(stack.pipeline("lib-a"), stack.raptor_store("lib-a"), options=OPTIONS)
    assert answer(RAGSPINE_RAPTOR="0") == plain == answer()
    assert answer(RAGSPINE_RAPTOR="1", RAGSPINE_RAPTOR_THRESHOLD="0.3") != plain


# -- staleness and refusals -----------------------------------------------------------------------------
def test_a_stale_tree_ignores_the_nodes_whose_leaves_changed(database: Any) -> None:
    a = pipeline(database, "lib-a")
    tree = built(a)
    make_raptor_retriever(a)
    leg = raptor_leg(a)
    assert leg is not None
    leg.top_nodes = len(tree.nodes)
    before = {n.node_id for n, _ in leg.nodes_for(QUERY)}
    assert before == {n.node_id for n in tree.nodes}
    changed = "a/north-2022"
    a.ingest_text(changed, "Gearbox supply delays were resolved in the north.", source=changed)
    after = {n.node_id for n, _ in leg.nodes_for(QUERY)}
    touching = {n.node_id for n in tree.nodes if changed in n.doc_ids}
    assert touching and after == before - touching
    a.ingest_text("a/east-2024", "Gearbox castings memo.", source="a/east-2024", sensitivity="RESTRICTED")
    assert not any("a/east-2024" in n.doc_ids for n, _ in leg.nodes_for(QUERY)), "a node over a now-RESTRICTED chunk is used"
    rebuilt = built(a)
    assert {n.node_id for n, _ in leg.nodes_for(QUERY)} <= {n.node_id for n in rebuilt.nodes}
    assert_tree_is_the_librarys(rebuilt, a.store)


def test_economy_mode_is_refused_in_one_line(database: Any, settings_env: Any) -> None:
    from ragspine.config import load_settings
    from ragspine.stack import Stack

    economy = pipeline(database, "lib-a", mode="economy")
    with pytest.raises(ConfigError) as info:
        make_raptor_retriever(economy)
    assert "economy" in str(info.value) and len(str(info.value).splitlines()) == 1
    with pytest.raises(ConfigError, match="economy"):
        rebuild(economy, make_raptor_store("lib-a", database=database))
    with Stack(load_settings(settings_env("economy", RAGSPINE_RAPTOR="1"))) as stack:
        stack.ensure_library("lib-a")
        ingest(stack.pipeline("lib-a"), docs_of("lib-a"))
        with pytest.raises(ConfigError, match="economy"):
            stack.retriever(["lib-a"])
