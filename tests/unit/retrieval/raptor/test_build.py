"""Building and rebuilding a tree; the query-time leg's filter, staleness and model checks; rows."""

from __future__ import annotations

import numpy as np
import pytest

from ragspine.errors import ConfigError
from ragspine.retrieval.narrative_index import NarrativeIndex
from ragspine.retrieval.raptor import (
    RaptorOptions,
    build_raptor_tree,
    make_raptor_retriever,
    make_raptor_store,
    rebuild,
)
from ragspine.retrieval.raptor.build import describe_tree
from ragspine.retrieval.raptor.codec import NODE_COLUMNS, TREE_COLUMNS, info_row, node_row, row_to_info, row_to_node
from ragspine.retrieval.raptor.retriever import raptor_leg
from ragspine.retrieval.raptor.summarize import LLMSummarizer
from ragspine.retrieval.request import SearchRequest
from ragspine.retrieval.vector.embedding_backends import DeterministicEmbeddingBackend
from ragspine.testing.llm import ScriptedLLMProvider
from ragspine.testing.raptor_store import sample_tree

OPTIONS = RaptorOptions(threshold=0.3, max_cluster=4)
DOCS = {
    "g1": ("Gearbox supply delays slowed the northern plant. Gearbox castings were late.", {"region": "north"}),
    "g2": ("Gearbox supply delays hit the south plant too. Castings for gearbox lines arrived late.", {"region": "south"}),
    "g3": ("The gearbox supplier missed castings deadlines and supply delays grew.", {"region": "north"}),
    "w1": ("Warranty claims rose in 2023. Warranty service handled claims within five days.", {"region": "south"}),
    "w2": ("Warranty claims on motors rose; the warranty service team grew.", {"region": "north"}),
    "memo": ("Board memo: gearbox supply delays and the secret xylophonequartz plan.", {"region": "north"}),
}


@pytest.fixture
def index(sqlite_db):
    pipeline = NarrativeIndex(sqlite_db.chunk_store("lib"), embedding_backend=DeterministicEmbeddingBackend())
    for doc_id, (text, meta) in DOCS.items():
        pipeline.ingest_text(doc_id, text, title=doc_id, source=doc_id, metadata=meta,
                             sensitivity="RESTRICTED" if doc_id == "memo" else "INTERNAL")
    return pipeline


def trees(index):
    return make_raptor_store("lib", database=index.store.db)


def test_a_tree_clusters_the_open_chunks_and_embeds_each_synthesis_text(index) -> None:
    tree = build_raptor_tree(index, options=OPTIONS)
    assert tree.info.chunks == 5 and tree.info.nodes == len(tree.nodes) > 0  # the memo is not a member
    assert not any("memo" in n.doc_ids or "xylophonequartz" in n.text for n in tree.nodes)
    backend = DeterministicEmbeddingBackend()
    for node in tree.nodes:
        expected = np.asarray(backend.embed_texts([node.text])[0], dtype=np.float32)
        assert float(node.vector @ expected) == pytest.approx(1.0, abs=1e-5)
        assert node.is_synthesis and node.chunk_ids == sorted(node.chunk_ids)
    assert tree.info.params == OPTIONS.build_params() and tree.info.change_seq == index.store.change_seq()


def test_rebuild_skips_a_current_tree_and_summarizes_only_changed_clusters(index) -> None:
    provider = ScriptedLLMProvider(lambda prompt: "Summary of " + str(len(prompt)) + " characters.")
    summarizer = LLMSummarizer(provider)
    store = trees(index)
    tree, outcome = rebuild(index, store, options=OPTIONS, summarizer=summarizer)
    assert outcome == "built" and tree is not None and provider.calls == len(tree.nodes)
    assert rebuild(index, store, options=OPTIONS, summarizer=summarizer) == (None, "unchanged")
    assert provider.calls == len(tree.nodes)
    index.ingest_text("w2", "Warranty claims on motors rose sharply; the warranty service team grew.", source="w2")
    again, outcome = rebuild(index, store, options=OPTIONS, summarizer=summarizer)
    assert outcome == "built" and again is not None
    touched = [n for n in again.nodes if "w2" in n.doc_ids]
    assert touched and provider.calls == len(tree.nodes) + len(touched), "unchanged clusters were summarized again"
    assert rebuild(index, store, options=RaptorOptions(threshold=0.35, max_cluster=4), summarizer=summarizer)[1] == "built"


def test_a_library_over_the_limit_is_refused(index) -> None:
    with pytest.raises(ConfigError, match="RAGSPINE_RAPTOR_MAX_CHUNKS"):
        build_raptor_tree(index, options=RaptorOptions(max_chunks=3))


def test_the_leg_keeps_to_the_filter_and_the_top_nodes(index) -> None:
    rebuild(index, trees(index), options=OPTIONS)
    make_raptor_retriever(index, options=RaptorOptions(threshold=0.3, max_cluster=4, top_nodes=1))
    leg = raptor_leg(index)
    assert leg is not None and leg.top_nodes == 1 and len(leg.nodes_for("gearbox castings")) == 1
    from ragspine.retrieval.filtering.filters import parse_filter

    north = parse_filter({"region": "north"})
    ranked = leg.collapse("gearbox castings", north, 10)
    assert {cid for cid, _, _ in ranked} <= {"g1#0", "g3#0", "w2#0"}  # the memo is RESTRICTED: never indexed
    via = {cid for cid, _, node in ranked if node is not None}
    assert via and via <= {"g1#0", "g3#0"}
    found = leg.search("gearbox castings", north, 10)
    assert found.hits == [(cid, score) for cid, score, _ in ranked]
    assert found.coverage.complete and found.coverage.total >= 2  # the dense leg's own coverage, with the ranking
    page = index.search_once(SearchRequest("gearbox castings", raptor=True), 10, parse_filter({"region": "south"}))
    assert {r.chunk.doc_id for r in page.items} <= {"g2", "w1"}
    assert page.dense_coverage is not None and page.dense_coverage.complete  # RAPTOR's search says it as the dense leg does


def test_a_tree_of_another_model_or_no_tree_is_an_error(index, sqlite_db) -> None:
    rebuild(index, trees(index), options=OPTIONS)
    other = NarrativeIndex(sqlite_db.chunk_store("lib"), embedding_backend=DeterministicEmbeddingBackend(dim=64))
    with pytest.raises(ConfigError, match="raptor build"):
        make_raptor_retriever(other).retrieve("gearbox")
    trees(index).delete()
    with pytest.raises(ConfigError, match="no RAPTOR tree"):
        make_raptor_retriever(index).retrieve("gearbox")


def test_describe_tree_says_current_or_stale(index) -> None:
    assert "no tree" in describe_tree(None, 3)
    tree = build_raptor_tree(index, options=OPTIONS)
    assert describe_tree(tree.info, tree.info.change_seq).endswith("current")
    assert "stale" in describe_tree(tree.info, tree.info.change_seq + 1)


def test_rows_round_trip() -> None:
    tree = sample_tree("lib")
    for json_as_text in (True, False):
        row = info_row(tree.info, json_as_text=json_as_text)
        assert row_to_info([row[c] for c in TREE_COLUMNS]) == tree.info
        for i, node in enumerate(tree.nodes):
            back = row_to_node([node_row("lib", i, node, json_as_text=json_as_text)[c] for c in NODE_COLUMNS])
            assert back.same(node)


def test_a_pipeline_the_stack_gave_no_leg_is_refused_when_raptor_is_asked(index) -> None:
    from ragspine.retrieval.raptor.retriever import check_raptor, raptor_store_kind

    check_raptor({"lib": index})  # vectors: fine
    with pytest.raises(ConfigError, match="keeps no RAPTOR trees"):
        check_raptor({"lib": index}, needs_leg=True)  # e.g. a chunk store without tree tables
    assert raptor_store_kind(index.store.db) == "sqlite" and raptor_store_kind(object()) is None
    with pytest.raises(ConfigError, match="no RAPTOR tree store"):
        make_raptor_store("lib", database=object())


def test_under_acls_a_node_with_a_hidden_leaf_contributes_nothing(index) -> None:
    from ragspine.security.principals import ACL, Principal, Viewer

    rebuild(index, trees(index), options=OPTIONS)
    retriever = make_raptor_retriever(index, options=RaptorOptions(threshold=0.3, max_cluster=4, top_nodes=4))
    leg = raptor_leg(index)
    assert leg is not None
    nodes = leg.nodes_for("gearbox castings")
    assert any("g1" in node.doc_ids for node, _ in nodes)
    index.store.set_acls({"g1": ACL.parse("group:board")}, by="test")
    lexical = index.retriever.index
    lexical.refresh()
    outsider, board = Viewer(Principal.of("ann", ["hr"])), Viewer(Principal.of("bob", ["board"]))
    hidden = lexical.view(outsider)
    assert hidden is not None and lexical.view(board) is None
    assert all("g1" not in node.doc_ids for node, _ in leg.nodes_for("gearbox castings", view=hidden))
    assert [n.node_id for n, _ in leg.nodes_for("gearbox castings")] == [n.node_id for n, _ in nodes]  # the library's own view
    found = leg.search("gearbox castings", None, 10, view=hidden)
    assert found.hits and all(not cid.startswith("g1#") for cid, _ in found.hits)
    for viewer, sees_g1 in ((outsider, False), (board, True)):
        answer = retriever.search(SearchRequest("gearbox castings supply", raptor=True, viewer=viewer))
        assert any(s["doc_id"] == "g1" for s in answer.snippets) is sees_g1
