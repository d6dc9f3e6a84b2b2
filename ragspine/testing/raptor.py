"""RAPTOR's invariants as plain functions raising ``AssertionError`` (so a test can show each
one fails on a deliberately broken tree or retriever):

* :func:`assert_same_tree` — two builds of one library are the same tree (ids, texts, leaves);
* :func:`assert_tree_is_the_librarys` — every leaf is a stored, active, open chunk of the
  library the tree belongs to, with its own document and locator (isolation, provenance);
* :func:`assert_no_restricted_text` — no RESTRICTED text in any synthesis text or prompt;
* :func:`assert_snippets_are_stored_leaves` — every snippet is a stored chunk (its text and
  locator as stored), never a synthesis node;
* :func:`assert_not_evidence` — a token planted in every generated text is in no snippet.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ragspine.retrieval.raptor.base import RaptorTree
from ragspine.retrieval.sensitivity import is_restricted

if TYPE_CHECKING:
    from ragspine.retrieval.chunking.chunk_store import ChunkStore

__all__ = [
    "assert_no_restricted_text",
    "assert_not_evidence",
    "assert_same_tree",
    "assert_snippets_are_stored_leaves",
    "assert_tree_is_the_librarys",
    "tree_signature",
]


def tree_signature(tree: RaptorTree) -> list[tuple[Any, ...]]:
    """What makes a tree the same tree: each node's id, level, text, children and leaves."""
    return sorted((n.node_id, n.level, n.text, n.children, n.leaves) for n in tree.nodes)


def assert_same_tree(a: RaptorTree, b: RaptorTree) -> None:
    assert a.info.tree_id == b.info.tree_id, "the same library gave two different tree ids"
    assert tree_signature(a) == tree_signature(b), "the same library gave two different trees"
    vectors = {n.node_id: n.vector for n in a.nodes}
    for node in b.nodes:
        assert node.vector.shape == vectors[node.node_id].shape
        assert abs(node.vector - vectors[node.node_id]).max() <= 1e-6, f"node {node.node_id}'s vector differs"


def assert_tree_is_the_librarys(tree: RaptorTree, store: ChunkStore) -> None:
    """Every leaf of every node is an active, open chunk of ``store`` (the tree's library) at
    the version, document and locator the node records; a node's leaves are its children's."""
    assert tree.info.library_id == store.library_id, "a tree saved under another library"
    leaves = {leaf.chunk_id: leaf for n in tree.nodes for leaf in n.leaves}
    stored = {c.chunk_id: c for c in store.get_chunks(sorted(leaves))}
    for chunk_id, leaf in leaves.items():
        chunk = stored.get(chunk_id)
        assert chunk is not None, f"leaf {chunk_id!r} is not an active chunk of library {store.library_id!r}"
        assert (chunk.doc_id, chunk.version, chunk.source_locator) == (leaf.doc_id, leaf.version, leaf.source_locator), (
            f"leaf {chunk_id!r} does not carry its chunk's provenance")
        assert not is_restricted(chunk.sensitivity), f"RESTRICTED chunk {chunk_id!r} is a member of a synthesis node"
    by_id = {n.node_id: n for n in tree.nodes}
    for node in tree.nodes:
        assert node.is_synthesis and node.text
        if node.level > 1:
            union = {leaf for child in node.children for leaf in by_id[child].leaves}
            assert set(node.leaves) == union, f"node {node.node_id}'s leaves are not the union of its children's"


def assert_no_restricted_text(tree: RaptorTree | None, prompts: Iterable[str], secrets: Sequence[str]) -> None:
    lowered = [s.lower() for s in secrets]
    for node in tree.nodes if tree is not None else ():
        for secret in lowered:
            assert secret not in node.text.lower(), f"RESTRICTED text {secret!r} in synthesis node {node.node_id}"
    for prompt in prompts:
        for secret in lowered:
            assert secret not in prompt.lower(), f"RESTRICTED text {secret!r} reached a prompt"


def assert_snippets_are_stored_leaves(snippets: Sequence[Mapping[str, Any]], stores: Mapping[str, Any],
                                      trees: Iterable[RaptorTree] = ()) -> None:
    """Each snippet is an active chunk of its library's store (``stores[library_id]``), with
    the stored text and locator — never a synthesis node's id or text."""
    node_ids = {n.node_id for t in trees for n in t.nodes}
    node_texts = {n.text for t in trees for n in t.nodes}
    for s in snippets:
        assert s["chunk_id"] not in node_ids and s["text"] not in node_texts, f"synthesis node {s['chunk_id']!r} returned as a snippet"
        store = stores[s["library_id"]]
        chunks = store.get_chunks([s["chunk_id"]])
        assert chunks, f"snippet {s['chunk_id']!r} is not a stored chunk of {s['library_id']!r}"
        (chunk,) = chunks
        assert (chunk.text, chunk.source_locator, chunk.doc_id) == (s["text"], s["source_locator"], s["doc_id"]), (
            f"snippet {s['chunk_id']!r} is not its stored chunk")


def assert_not_evidence(snippets: Sequence[Mapping[str, Any]], mark: str) -> None:
    for s in snippets:
        assert mark.lower() not in json.dumps(s, ensure_ascii=False).lower(), f"generated text in snippet {s.get('chunk_id')!r}"
