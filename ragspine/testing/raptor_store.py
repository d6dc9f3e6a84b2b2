"""``RaptorStoreConformance``: the RaptorStore contract, one mixin per capability.

Fixture needed: ``raptor_store_factory`` — ``factory(library_id) -> (RaptorStore, chunk
database)``: the tree store of that library in a chunk database of its own namespace (two
libraries share tables, not rows). The trees are made by :func:`sample_tree` (no model, no
pipeline): what is checked is the store.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

import numpy as np

from ragspine.retrieval.chunking.chunking import Chunk
from ragspine.retrieval.raptor.base import Leaf, RaptorStore, RaptorTree, SynthesisNode, TreeInfo

Factory = Callable[[str], tuple[RaptorStore, Any]]


def sample_tree(library_id: str, *, seed: int = 0, nodes: int = 3, change_seq: int = 7) -> RaptorTree:
    """A small two-level tree of ``library_id`` with float vectors, CJK text and odd locators."""
    rng = np.random.default_rng(seed)  # seeded test data
    made = []
    for i in range(nodes):
        leaves = tuple(Leaf(f"d{i}#{j}", f"d{i}", 1 + j, f"src/{i}.md#char={j * 10},{j * 10 + 9}") for j in range(2))
        made.append(SynthesisNode(f"raptor:{seed}-{i}", 1, f"node {i} 齿轮箱 \u00e9 text", tuple(leaf.chunk_id for leaf in leaves),
                                  leaves, rng.normal(size=8).astype(np.float32)))
    top = SynthesisNode(f"raptor:{seed}-top", 2, "theme", tuple(n.node_id for n in made),
                        tuple(leaf for n in made for leaf in n.leaves), rng.normal(size=8).astype(np.float32), "llm")
    info = TreeInfo(library_id, f"tree-{seed}", change_seq, "test-model@8",
                    {"threshold": 0.5, "max_cluster": 8, "levels": 3, "summary_chars": 480, "summarizer": "extractive",
                     "level_step": 0.1}, chunks=2 * nodes, nodes=nodes + 1, levels=2, built_at="2026-12-05T10:00:00+00:00",
                    build_seconds=0.25)
    return RaptorTree(info, (*made, top))


def assert_same_tree(got: RaptorTree | None, want: RaptorTree) -> None:
    assert got is not None, "the saved tree is not there"
    assert got.info == want.info
    assert len(got.nodes) == len(want.nodes)
    for a, b in zip(got.nodes, want.nodes, strict=True):
        assert a.same(b), (a.node_id, b.node_id)
        assert a.vector.dtype == np.float32


class RaptorStoreRoundTripTests:
    def test_nothing_before_a_save(self, raptor_store_factory: Factory) -> None:
        store, _ = raptor_store_factory("lib-empty")
        assert store.info() is None and store.load() is None and store.delete() is False

    def test_a_saved_tree_comes_back_exactly(self, raptor_store_factory: Factory) -> None:
        store, _ = raptor_store_factory("lib-rt")
        tree = sample_tree("lib-rt")
        store.save(tree)
        assert store.info() == tree.info
        assert_same_tree(store.load(), tree)

    def test_a_save_replaces_the_whole_tree(self, raptor_store_factory: Factory) -> None:
        store, _ = raptor_store_factory("lib-re")
        store.save(sample_tree("lib-re", seed=1, nodes=5))
        smaller = sample_tree("lib-re", seed=2, nodes=1)
        store.save(smaller)
        assert_same_tree(store.load(), smaller)
        assert store.delete() is True and store.load() is None and store.info() is None

    def test_an_empty_tree_is_a_tree(self, raptor_store_factory: Factory) -> None:
        store, _ = raptor_store_factory("lib-none")
        info = TreeInfo("lib-none", "empty", 3, "m@8", {"summarizer": "extractive"}, 0, 0, 0)
        store.save(RaptorTree(info))
        got = store.load()
        assert got is not None and got.nodes == () and got.info == info


class RaptorStoreIsolationTests:
    def test_libraries_keep_their_own_trees(self, raptor_store_factory: Factory) -> None:
        a, db = raptor_store_factory("lib-a")
        b, _ = raptor_store_factory("lib-b")
        a.save(sample_tree("lib-a", seed=1))
        assert b.info() is None and b.load() is None, "a library sees another library's tree"
        b.save(sample_tree("lib-b", seed=2))
        b.delete()
        assert_same_tree(a.load(), sample_tree("lib-a", seed=1))

    def test_a_tree_cannot_be_saved_under_another_library(self, raptor_store_factory: Factory) -> None:
        import pytest

        from ragspine.errors import ConfigError

        store, _ = raptor_store_factory("lib-x")
        with pytest.raises(ConfigError):
            store.save(sample_tree("lib-y"))
        assert store.info() is None

    def test_trees_live_apart_from_the_chunks_and_go_with_the_library(self, raptor_store_factory: Factory) -> None:
        store, db = raptor_store_factory("lib-d")
        chunks = db.chunk_store("lib-d")
        chunks.replace_doc_chunks("d", [Chunk("d#0", "d", "open text", source_locator="d#char=0,9")])
        store.save(sample_tree("lib-d"))
        assert chunks.count(include_inactive=True) == 1 and [c.chunk_id for c in chunks.iter_chunks()] == ["d#0"]
        assert db.delete_library("lib-d") is True
        assert store.info() is None and store.load() is None, "a deleted library left its tree behind"


class RaptorStoreConcurrencyTests:
    def test_concurrent_saves_leave_one_whole_tree(self, raptor_store_factory: Factory) -> None:
        store, _ = raptor_store_factory("lib-w")
        trees = [sample_tree("lib-w", seed=s, nodes=2 + s) for s in range(4)]
        errors: list[BaseException] = []

        def save(tree: RaptorTree) -> None:
            try:
                store.save(tree)
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=save, args=(t,)) for t in trees]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        got = store.load()
        assert got is not None
        (winner,) = [t for t in trees if t.info == got.info]
        assert_same_tree(got, winner)


class RaptorStoreConformance(RaptorStoreRoundTripTests, RaptorStoreIsolationTests, RaptorStoreConcurrencyTests):
    """Every RaptorStore capability test."""
