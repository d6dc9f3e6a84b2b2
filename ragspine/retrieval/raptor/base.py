"""RAPTOR's types and roles: a library's tree of synthesis nodes, where it is kept, who writes
its texts, and how a request's switch is read.

A **synthesis node** (``is_synthesis``) stands for a cluster of a library's chunks (level 1)
or of lower nodes (level 2 and up). Its ``text`` is a retrieval probe — extractive (the
members' most central sentences, verbatim) or written by a model — and never evidence: a hit
on it is resolved to its **leaves**, the stored chunks it covers, each with its own chunk id,
document, version and locator (the union of its members' provenance). A leaf is what a
search returns, through both RESTRICTED exits like any other result.

A **tree** (:class:`RaptorTree`) is one build of a library: its :class:`TreeInfo` (the
library's change-log position and the embedding model it was built at, the build options)
and its nodes. It is a pure function of the library's open active chunks, their vectors and
the options: the same library gives the same tree (``tree_id``). A query on a tree the
library has moved past ignores every node one of whose leaves is no longer active at the
version it was built from (``leg.py``); ``ragspine raptor build`` makes a new one.

Roles: :class:`RaptorStore` (the tree's tables in the chunk store's database: SQLite,
PostgreSQL) and :class:`Summarizer` (a cluster's text: ``RAGSPINE_RAPTOR_SUMMARIZER``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from ragspine.config import Settings
    from ragspine.retrieval.chunking.chunk_store import StoredChunk

__all__ = [
    "Leaf",
    "RaptorObserver",
    "RaptorOptions",
    "RaptorStore",
    "RaptorTree",
    "Summarizer",
    "SynthesisNode",
    "TreeInfo",
    "raptor_requested",
]


@dataclass(frozen=True)
class Leaf:
    """One stored chunk a synthesis node covers: where a hit on the node leads."""

    chunk_id: str
    doc_id: str
    version: int
    source_locator: str


@dataclass(frozen=True, eq=False)
class SynthesisNode:
    """A cluster's node (see the module docstring). ``children``: the member chunk ids
    (level 1) or node ids (above); ``vector``: the embedding of ``text`` (float32, L2-normalized)."""

    node_id: str
    level: int
    text: str
    children: tuple[str, ...]
    leaves: tuple[Leaf, ...]
    vector: Any  # numpy float32 array
    written_by: str = "extractive"  # extractive | llm | extractive (the model's answer was unusable)

    #: Always true: a synthesis node is never a snippet and never a citation.
    is_synthesis = True

    @property
    def chunk_ids(self) -> list[str]:
        return [leaf.chunk_id for leaf in self.leaves]

    @property
    def doc_ids(self) -> list[str]:
        return sorted({leaf.doc_id for leaf in self.leaves})

    @property
    def locators(self) -> list[str]:
        return [leaf.source_locator for leaf in self.leaves]

    def same(self, other: SynthesisNode) -> bool:
        """Equal in everything but the float vector (compared at 1e-6)."""
        import numpy as np

        return (self.node_id, self.level, self.text, self.children, self.leaves, self.written_by) == (
            other.node_id, other.level, other.text, other.children, other.leaves, other.written_by
        ) and np.allclose(self.vector, other.vector, atol=1e-6)


@dataclass(frozen=True)
class TreeInfo:
    """What a tree was built from and how (one row per library)."""

    library_id: str
    tree_id: str  # digest of the nodes: equal trees, equal ids
    change_seq: int  # the library's change-log position the build read
    model: str  # the embedding model's namespace (model@dim) of every vector
    params: Mapping[str, Any]  # the build options (RaptorOptions.build_params)
    chunks: int  # open active chunks the build clustered
    nodes: int
    levels: int
    built_at: str = ""
    build_seconds: float = 0.0


@dataclass(frozen=True)
class RaptorTree:
    info: TreeInfo
    nodes: tuple[SynthesisNode, ...] = ()

    def node(self, node_id: str) -> SynthesisNode | None:
        return next((n for n in self.nodes if n.node_id == node_id), None)


@runtime_checkable
class RaptorStore(Protocol):
    """One library's RAPTOR tree in the chunk store's database (separate tables: the chunk
    store's queries and the lexical index never see a synthesis node)."""

    library_id: str

    def save(self, tree: RaptorTree) -> None:
        """Make ``tree`` the library's tree, in one transaction (the old one goes)."""
        ...

    def info(self) -> TreeInfo | None:
        """The current tree's :class:`TreeInfo` (one row; what a query checks), ``None``: none built."""
        ...

    def load(self) -> RaptorTree | None:
        """The current tree with its nodes, ``None``: none built."""
        ...

    def delete(self) -> bool:
        """Drop the library's tree; ``True`` when there was one."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class Summarizer(Protocol):
    """Writes a cluster's synthesis text from its members (``RAGSPINE_RAPTOR_SUMMARIZER``)."""

    name: str

    def summarize(self, members: Sequence[str], *, max_chars: int) -> tuple[str, str]:
        """``(text, written_by)`` for a cluster whose members' texts are ``members`` (open
        text only: the builder never passes RESTRICTED text, and an implementation must not
        either); at most ``max_chars`` characters; ``""`` when nothing can be said."""
        ...


class RaptorObserver(Protocol):
    """What the service's metrics hear of builds."""

    def raptor_build(self, outcome: str, seconds: float, nodes: int) -> None:
        """A build finished: ``outcome`` ``built | unchanged | failed``."""
        ...


@dataclass(frozen=True)
class RaptorOptions:
    """The ``RAGSPINE_RAPTOR_*`` settings: how a tree is built and how a query uses it."""

    threshold: float = 0.5  # cosine similarity a member needs to its cluster's seed
    max_cluster: int = 8  # members per cluster
    levels: int = 3  # levels of synthesis nodes above the chunks
    summary_chars: int = 480  # longest synthesis text
    summarizer: str = "extractive"
    top_nodes: int = 4  # synthesis nodes a query resolves to their leaves
    max_chunks: int = 20000  # largest library a build clusters (O(n²) similarities)
    level_step: float = field(default=0.1)  # each level above the first clusters at threshold - step

    @classmethod
    def from_settings(cls, settings: Settings) -> RaptorOptions:
        r = settings.raptor
        return cls(threshold=r.threshold, max_cluster=r.max_cluster, levels=r.levels, summary_chars=r.summary_chars,
                   summarizer=r.summarizer, top_nodes=r.top_nodes, max_chunks=r.max_chunks)

    def build_params(self) -> dict[str, Any]:
        """The options a tree depends on (stored with it; a build with others is a new tree)."""
        return {"threshold": self.threshold, "max_cluster": self.max_cluster, "levels": self.levels,
                "summary_chars": self.summary_chars, "summarizer": self.summarizer, "level_step": self.level_step}

    def threshold_at(self, level: int) -> float:
        return self.threshold - self.level_step * (level - 1)


def raptor_requested(default: bool, requested: bool | None = None) -> bool:
    """Whether a search runs RAPTOR's leg: the request's choice (a
    :class:`~ragspine.retrieval.request.SearchRequest`'s ``raptor``), else ``default``."""
    return default if requested is None else requested


def open_members(chunks: Sequence[StoredChunk]) -> list[StoredChunk]:
    """``chunks`` without the RESTRICTED ones: what a tree may cluster and quote."""
    from ragspine.retrieval.sensitivity import is_restricted

    return [c for c in chunks if not is_restricted(c.sensitivity)]


def describe_raptor(settings: Settings, uses_embeddings: bool) -> str:
    """The ``raptor`` line of ``ragspine config``: whether queries use it, and how trees are built."""
    o = RaptorOptions.from_settings(settings)
    build = (f"trees: {o.summarizer} text ≤{o.summary_chars} chars, threshold {o.threshold:g}, ≤{o.max_cluster} per cluster,"
             f" {o.levels} level(s), libraries ≤{o.max_chunks:,} chunks")
    if not settings.raptor.enabled:
        return f"off (a query's --raptor / \"raptor\": true turns it on); {build}"
    if not uses_embeddings:
        return "on, but refused: economy mode has no vectors (RAGSPINE_RETRIEVAL_MODE=hybrid)"
    return f"on: the dense leg searches chunks and the {o.top_nodes} nearest synthesis nodes (as their leaves); {build}"
