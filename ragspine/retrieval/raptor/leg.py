"""RAPTOR at query time: the dense leg searches the *collapsed tree* — chunks and synthesis
nodes in one pool — and a synthesis hit stands for its leaves.

With RAPTOR on (``RAGSPINE_RAPTOR``, ``--raptor``, a request's ``raptor``), each query the
dense leg reads is ranked in the dense leg's place (``HybridRetriever``) by:

1. the query's vector against every synthesis node of the library's tree (exact cosine over
   the tree's matrix, rounded to 1e-6, ties by node id); nodes are taken best first, skipping
   every node one of whose leaves is no longer active at the version the tree was built from
   (the library changed: its text may speak of text that is gone), until :attr:`top_nodes`;
2. the dense leg's own ranking of chunks and those nodes merged by similarity (a chunk first
   on a tie; a node weaker than the ranking's last chunk is left out): a node's place is taken
   by its leaves — stored chunks, never the node — in order of their own similarity, within
   the request's metadata filter (the vector store's ``where`` and ``ids``), each counted once.

So a chunk that matches the query better than any summary keeps its place, and a summary that
matches better than any single chunk (a theme spread over several) brings its members up —
RAPTOR's collapsed-tree retrieval, fused with BM25 by RRF as the dense leg always is. Each
leaf keeps its own similarity as its ``vector`` score. A synthesis text never leaves this
module: what it returns are chunk ids, which the pipeline fetches from the chunk store and
hands to both RESTRICTED exits. The tree is read from its store when its :class:`TreeInfo`
changes (one small read per search). A library without a tree, or with one of another
embedding model, is an error naming ``ragspine raptor build`` — never a silent answer without
RAPTOR.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ragspine.errors import ConfigError
from ragspine.retrieval.filtering.filters import MetadataFilter
from ragspine.retrieval.lexical.base import VersionedIndex
from ragspine.retrieval.raptor.base import RaptorStore, RaptorTree, SynthesisNode, TreeInfo, raptor_requested
from ragspine.retrieval.raptor.cluster import SIMILARITY_DECIMALS, normalized
from ragspine.retrieval.vector.dense import DenseRanking
from ragspine.retrieval.vector.embedding import embed_query, model_namespace

if TYPE_CHECKING:
    from ragspine.retrieval.pipeline import LibraryPipeline

__all__ = ["RaptorLeg", "attach_raptor"]


class _Loaded:
    def __init__(self, tree: RaptorTree) -> None:
        self.info = tree.info
        self.nodes = sorted(tree.nodes, key=lambda n: n.node_id)
        self.matrix = normalized(np.asarray([n.vector for n in self.nodes], dtype=np.float32)) if self.nodes else None


class RaptorLeg:
    """See the module docstring. ``default``: whether it runs when the request does not say."""

    def __init__(self, trees: RaptorStore, dense: Any, index: Any, *, default: bool = False, top_nodes: int = 4) -> None:
        if top_nodes < 1:
            raise ConfigError(f"RAGSPINE_RAPTOR_TOP_NODES must be >= 1, got {top_nodes}")
        self.trees = trees
        self.dense = dense
        self.index = index
        self.default = default
        self.top_nodes = top_nodes
        self._lock = threading.Lock()
        self._loaded: _Loaded | None = None

    @property
    def library_id(self) -> str:
        return self.trees.library_id

    def active(self, requested: bool | None = None) -> bool:
        """Whether a search runs this leg: the request's choice, else :attr:`default`."""
        return raptor_requested(self.default, requested)

    def tree(self) -> _Loaded:
        """The library's current tree (reloaded when its stored info changed)."""
        info: TreeInfo | None = self.trees.info()
        if info is None:
            raise ConfigError(f"library {self.library_id!r} has no RAPTOR tree: run `ragspine raptor build --library {self.library_id}`")
        namespace = model_namespace(self.dense.backend)
        if info.model != namespace:
            raise ConfigError(
                f"library {self.library_id!r}'s RAPTOR tree was built with the embedding {info.model!r}, this search embeds with"
                f" {namespace!r}: run `ragspine raptor build --library {self.library_id}`"
            )
        with self._lock:
            if self._loaded is None or self._loaded.info != info:
                tree = self.trees.load()
                if tree is None:  # deleted in between
                    raise ConfigError(f"library {self.library_id!r} has no RAPTOR tree: run `ragspine raptor build --library {self.library_id}`")
                self._loaded = _Loaded(tree)
            return self._loaded

    def _active_versions(self, chunk_ids: list[str]) -> dict[str, int]:
        if isinstance(self.index, VersionedIndex):
            return self.index.versions(chunk_ids)
        wanted = set(chunk_ids)
        return {cid: ver for cid, ver in self.index.candidates() if cid in wanted}

    def nodes_for(self, query: str, qvec: Sequence[float] | None = None, view: Any = None) -> list[tuple[SynthesisNode, float]]:
        """The :attr:`top_nodes` current nodes nearest ``query`` (``qvec``: its vector, when
        already embedded), with their similarity; under a principal's ``view``, only nodes all
        of whose leaves it may read (a node that speaks of a hidden document contributes nothing)."""
        loaded = self.tree()
        if loaded.matrix is None:
            return []
        qvec = embed_query(self.dense.backend, query) if qvec is None else qvec
        q = normalized(np.asarray([qvec], dtype=np.float32))[0]
        if q.shape[0] != loaded.matrix.shape[1]:
            return []
        sims = np.round(loaded.matrix @ q, SIMILARITY_DECIMALS)
        order = np.lexsort((np.arange(len(sims)), -sims))  # nodes are sorted by id: ties by id
        chosen: list[tuple[SynthesisNode, float]] = []
        step = max(4 * self.top_nodes, 16)
        for start in range(0, len(order), step):
            batch = [loaded.nodes[i] for i in order[start : start + step]]
            active = self._active_versions(list(dict.fromkeys(leaf.chunk_id for n in batch for leaf in n.leaves)))
            for node, i in zip(batch, order[start : start + step], strict=True):
                if all(active.get(leaf.chunk_id) == leaf.version for leaf in node.leaves) and (
                        view is None or not any(view.snapshot.hides(view.viewer, leaf.doc_id) for leaf in node.leaves)):
                    chosen.append((node, float(sims[i])))
                    if len(chosen) == self.top_nodes:
                        return chosen
        return chosen

    def collapse(
        self, query: str, metadata_filter: MetadataFilter | None, depth: int, versions: dict[str, int] | None = None,
    ) -> list[tuple[str, float, str | None]]:
        """The collapsed tree's ranking: the dense leg's ``[(chunk_id, similarity)]`` and the
        nearest current synthesis nodes in one order by similarity (a chunk first on a tie); a
        node stands for its leaves, in order of their own similarity, within the filter.
        ``[(chunk_id, its own similarity, the node it came through or None)]``, at most ``depth``;
        the query is embedded once."""
        return self._collapse(query, metadata_filter, depth, versions)[0]

    def _collapse(
        self, query: str, metadata_filter: MetadataFilter | None, depth: int, versions: dict[str, int] | None, view: Any = None,
    ) -> tuple[list[tuple[str, float, str | None]], DenseRanking]:
        """:meth:`collapse`, and the dense leg's own search (its coverage is the answer's)."""
        qvec = embed_query(self.dense.backend, query)
        seen_by = {} if view is None else {"view": view}
        found: DenseRanking = self.dense.search(query, metadata_filter, depth, versions, qvec=qvec, **seen_by)
        dense = found.hits
        floor = dense[depth - 1][1] if len(dense) >= depth else -np.inf  # a node below the depth-th chunk adds nothing
        nodes = [(node, sim) for node, sim in self.nodes_for(query, qvec, view) if sim > floor]
        if not nodes:
            return [(cid, score, None) for cid, score in dense[:depth]], found
        leaf_ids = list(dict.fromkeys(leaf.chunk_id for node, _ in nodes for leaf in node.leaves))
        hits = self.dense.vector_store.query(qvec, top_k=len(leaf_ids), where=metadata_filter, ids=leaf_ids)
        active = self._active_versions([h.id for h in hits])
        own = {h.id: (round(h.score, SIMILARITY_DECIMALS), h.version) for h in hits if active.get(h.id) == h.version}
        items: list[tuple[float, int, str, Any]] = [(score, 0, cid, None) for cid, score in dense]
        items += [(round(sim, SIMILARITY_DECIMALS), 1, node.node_id, node) for node, sim in nodes]
        items.sort(key=lambda item: (-item[0], item[1], item[2]))
        out: list[tuple[str, float, str | None]] = []
        seen: set[str] = set()
        for score, _, item_id, node in items:
            if node is None:
                members = [(item_id, score)]
            else:
                members = sorted(((leaf.chunk_id, own[leaf.chunk_id][0]) for leaf in node.leaves if leaf.chunk_id in own),
                                 key=lambda m: (-m[1], m[0]))
            for cid, sim in members:
                if cid not in seen:
                    seen.add(cid)
                    out.append((cid, sim, node.node_id if node is not None else None))
                    if node is not None and versions is not None:
                        versions[cid] = own[cid][1]
            if len(out) >= depth:
                break
        return out[:depth], found

    def search(
        self, query: str, metadata_filter: MetadataFilter | None, depth: int, versions: dict[str, int] | None = None,
        view: Any = None,
    ) -> DenseRanking:
        """:meth:`collapse` as a ranking ``[(chunk_id, similarity)]``: what the hybrid search
        fuses in the dense leg's place, with the dense leg's coverage of this search (``view``:
        a principal's: its dense leg, and only nodes all of whose leaves it may read)."""
        collapsed, dense = self._collapse(query, metadata_filter, depth, versions, view)
        return DenseRanking([(cid, score) for cid, score, _ in collapsed], dense.coverage)


def attach_raptor(pipeline: LibraryPipeline, trees: RaptorStore, *, default: bool = False, top_nodes: int = 4) -> RaptorLeg | None:
    """Give ``pipeline``'s hybrid retriever RAPTOR's leg (off unless ``default`` or a request
    turns it on); ``None`` for a pipeline without a dense leg (economy mode)."""
    retriever = pipeline.retriever
    if getattr(retriever, "dense", None) is None:
        return None
    leg = RaptorLeg(trees, retriever.dense, retriever.index, default=default, top_nodes=top_nodes)
    retriever.raptor = leg
    return leg
