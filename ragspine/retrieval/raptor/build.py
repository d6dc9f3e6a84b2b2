"""Building a library's RAPTOR tree from its chunk vectors (``ragspine raptor build``).

:func:`build_raptor_tree` reads, through the library's pipeline (it needs the dense leg: a
pipeline in economy mode is refused):

1. the library's change-log position, *then* its active chunks, RESTRICTED ones left out —
   they never join a cluster, so no RESTRICTED text reaches a summarizer or a prompt and the
   tree does not depend on whether a library holds RESTRICTED documents;
2. their vectors (the embedding cache's, else embedded now, as ``ragspine embed`` would);
   chunks sorted by id, so the input order never matters;
3. level 1: :func:`~ragspine.retrieval.raptor.cluster.threshold_clusters` of the chunk
   vectors; each cluster gets a synthesis node — its text from the summarizer, its vector
   the embedding of that text, its leaves its members; level ``k + 1`` clusters level ``k``'s
   node vectors (at ``threshold - (k) * level_step``), a node's leaves the union of its
   children's; until a level forms no cluster or ``levels`` are built.

A node's id is a digest of its level, its leaves' ``(chunk_id, version)`` and the summary
options: a rebuild reuses the text and vector of every node whose id the previous tree (of
the same model) has, so only clusters that changed are summarized and embedded again — and
the result is the tree a fresh build would give. :func:`rebuild` saves it, or does nothing
when the stored tree is current (same change-log position, model and options).
"""

from __future__ import annotations

import hashlib
import json
import time
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import numpy as np

from ragspine.deadline import check as check_deadline
from ragspine.errors import ConfigError
from ragspine.retrieval.chunking.chunk_store import ChangeLog, StoredChunk, StreamingReads
from ragspine.retrieval.raptor.base import (
    Leaf,
    RaptorObserver,
    RaptorOptions,
    RaptorStore,
    RaptorTree,
    Summarizer,
    SynthesisNode,
    TreeInfo,
    open_members,
)
from ragspine.retrieval.raptor.cluster import normalized, threshold_clusters
from ragspine.retrieval.vector.embedding import model_namespace

if TYPE_CHECKING:
    from ragspine.retrieval.pipeline import LibraryPipeline

__all__ = ["build_raptor_tree", "describe_tree", "economy_refusal", "rebuild"]


def economy_refusal(library_id: str, mode: str) -> ConfigError:
    """The one-line refusal of RAPTOR where a library has no vectors."""
    return ConfigError(
        f"RAPTOR needs chunk vectors, and library {library_id!r} runs in {mode} mode (no embedding backend):"
        " use RAGSPINE_RETRIEVAL_MODE=hybrid with RAGSPINE_EMBEDDING=onnx (or another backend), or turn RAPTOR off"
    )


def _dense(pipeline: Any) -> Any:
    dense = getattr(pipeline.retriever, "dense", None)
    if dense is None:
        raise economy_refusal(pipeline.library_id, pipeline.mode.name)
    return dense


def _digest(*parts: object) -> str:
    data = json.dumps(parts, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.blake2b(data.encode("utf-8", "surrogatepass"), digest_size=10).hexdigest()


def _active_chunks(store: Any) -> list[StoredChunk]:
    chunks = list(store.iter_active()) if isinstance(store, StreamingReads) else store.iter_chunks()
    return sorted(open_members(chunks), key=lambda c: c.chunk_id)


class _Level:
    """One level's items: ids, vectors (unit rows), texts and leaves, in canonical order."""

    def __init__(self, ids: list[str], vectors: np.ndarray, texts: list[str], leaves: list[tuple[Leaf, ...]]) -> None:
        self.ids, self.vectors, self.texts, self.leaves = ids, vectors, texts, leaves


def _embed(dense: Any, texts: list[str]) -> list[np.ndarray | None]:
    """Each text's unit vector (``None`` when the dense gate cannot read it)."""
    out: list[np.ndarray | None] = [None] * len(texts)
    readable = [i for i, ok in enumerate(dense.gate.readable(texts)) if ok]
    for start in range(0, len(readable), dense.embed_batch_size):
        check_deadline("embedding RAPTOR synthesis texts")
        batch = readable[start : start + dense.embed_batch_size]
        for i, vec in zip(batch, dense.backend.embed_texts([texts[j] for j in batch]), strict=False):
            out[i] = normalized(np.asarray([vec], dtype=np.float32))[0]
    return out


def build_raptor_tree(
    pipeline: LibraryPipeline, *, options: RaptorOptions | None = None, summarizer: Summarizer | None = None, previous: RaptorTree | None = None,
) -> RaptorTree:
    """The tree of ``pipeline``'s library (see the module docstring); nothing is written."""
    from ragspine.retrieval.raptor.summarize import ExtractiveSummarizer

    options = options or RaptorOptions()
    summarizer = summarizer or ExtractiveSummarizer()
    if summarizer.name != options.summarizer:
        options = RaptorOptions(**{**options.__dict__, "summarizer": summarizer.name})
    started = time.perf_counter()
    dense = _dense(pipeline)
    store = pipeline.store
    pipeline.retriever.refresh()
    seq = store.change_seq() if isinstance(store, ChangeLog) else 0
    chunks = _active_chunks(store)
    if len(chunks) > options.max_chunks:
        raise ConfigError(
            f"library {pipeline.library_id!r} has {len(chunks):,} open chunks, more than RAGSPINE_RAPTOR_MAX_CHUNKS"
            f" ({options.max_chunks:,}): RAPTOR's clustering compares every pair; raise the limit or split the library"
        )
    namespace = model_namespace(dense.backend)
    reuse = {n.node_id: n for n in previous.nodes} if previous is not None and previous.info.model == namespace else {}
    pairs = [(c, v) for c, v in zip(chunks, dense.vectors(chunks), strict=False) if v.size]
    level = _Level(
        [c.chunk_id for c, _ in pairs],
        normalized(np.asarray([v for _, v in pairs], dtype=np.float32)) if pairs else np.zeros((0, 0), dtype=np.float32),
        [c.text for c, _ in pairs],
        [(Leaf(c.chunk_id, c.doc_id, c.version, c.source_locator),) for c, _ in pairs],
    )
    nodes: list[SynthesisNode] = []
    for depth in range(1, options.levels + 1):
        check_deadline("building the RAPTOR tree")
        groups = threshold_clusters(level.vectors, options.threshold_at(depth), options.max_cluster)
        made = _nodes(depth, groups, level, options, summarizer, dense, reuse)
        if not made:
            break
        nodes.extend(made)
        made.sort(key=lambda n: n.node_id)
        level = _Level([n.node_id for n in made], np.asarray([n.vector for n in made]), [n.text for n in made],
                       [n.leaves for n in made])
        if len(made) < 2:
            break
    info = TreeInfo(
        library_id=pipeline.library_id, tree_id=_digest([(n.node_id, n.text) for n in nodes], namespace),
        change_seq=seq, model=namespace, params=options.build_params(), chunks=len(chunks), nodes=len(nodes),
        levels=max((n.level for n in nodes), default=0), built_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        build_seconds=round(time.perf_counter() - started, 3),
    )
    return RaptorTree(info, tuple(nodes))


def _nodes(
    depth: int, groups: list[list[int]], level: _Level, options: RaptorOptions, summarizer: Summarizer, dense: Any,
    reuse: dict[str, SynthesisNode],
) -> list[SynthesisNode]:
    """The synthesis nodes of one level's clusters (a cluster with no text or no readable
    vector gets none)."""
    planned = []
    for group in groups:
        leaves = tuple(sorted({leaf for i in group for leaf in level.leaves[i]}, key=lambda leaf: leaf.chunk_id))
        node_id = "raptor:" + _digest(depth, [(leaf.chunk_id, leaf.version) for leaf in leaves],
                                      options.summarizer, options.summary_chars)
        planned.append((node_id, tuple(level.ids[i] for i in group), leaves, [level.texts[i] for i in group]))
    texts: dict[str, tuple[str, str]] = {}
    for node_id, _, _, members in planned:
        check_deadline("summarizing RAPTOR clusters")
        old = reuse.get(node_id)
        texts[node_id] = (old.text, old.written_by) if old is not None else summarizer.summarize(members, max_chars=options.summary_chars)
    fresh = [node_id for node_id, *_ in planned if node_id not in reuse and texts[node_id][0]]
    vectors: dict[str, np.ndarray | None] = dict(zip(fresh, _embed(dense, [texts[i][0] for i in fresh]), strict=True))
    out = []
    for node_id, children, leaves, _ in planned:
        text, written_by = texts[node_id]
        vector = reuse[node_id].vector if node_id in reuse else vectors.get(node_id)
        if text and vector is not None:
            out.append(SynthesisNode(node_id, depth, text, children, leaves, np.asarray(vector, dtype=np.float32), written_by))
    return out


def rebuild(
    pipeline: LibraryPipeline, trees: RaptorStore, *, options: RaptorOptions | None = None, summarizer: Summarizer | None = None,
    force: bool = False, observer: RaptorObserver | None = None,
) -> tuple[RaptorTree | None, str]:
    """Build ``pipeline``'s tree and save it in ``trees``: ``(tree, "built")``; ``(None,
    "unchanged")`` when the stored one is current (``force`` builds anyway). ``observer``
    hears the outcome (``failed`` too, before the error propagates)."""
    options = options or RaptorOptions()
    started = time.perf_counter()
    try:
        dense = _dense(pipeline)
        current = trees.info()
        store = pipeline.store
        if current is not None and not force:
            pipeline.retriever.refresh()
            seq = store.change_seq() if isinstance(store, ChangeLog) else -1
            wanted = {**options.build_params(), **({"summarizer": summarizer.name} if summarizer else {})}
            if current.change_seq == seq and current.model == model_namespace(dense.backend) and dict(current.params) == wanted:
                if observer is not None:
                    observer.raptor_build("unchanged", time.perf_counter() - started, current.nodes)
                return None, "unchanged"
        previous = trees.load() if current is not None else None
        tree = build_raptor_tree(pipeline, options=options, summarizer=summarizer, previous=previous)
        trees.save(tree)
    except Exception:
        if observer is not None:
            observer.raptor_build("failed", time.perf_counter() - started, 0)
        raise
    if observer is not None:
        observer.raptor_build("built", time.perf_counter() - started, tree.info.nodes)
    return tree, "built"


def describe_tree(info: TreeInfo | None, current_seq: int | None) -> str:
    """One line: what the stored tree is, and whether the library moved past it."""
    if info is None:
        return "no tree (ragspine raptor build)"
    state = "current" if current_seq is None or current_seq == info.change_seq else "stale (the library changed since: its changed nodes are ignored)"
    return (f"{info.nodes} synthesis node(s) over {info.chunks} chunk(s), {info.levels} level(s), model {info.model},"
            f" summarizer {info.params.get('summarizer')}, built {info.built_at} in {info.build_seconds:.2f}s; {state}")
