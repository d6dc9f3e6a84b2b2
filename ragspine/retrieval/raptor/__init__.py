"""RAPTOR: a library's tree of synthesis nodes over its chunk vectors, searched with its chunks.

    layout: base.py (the types, the RaptorStore and Summarizer roles, RaptorOptions, how a
    request's switch is read) · cluster.py (deterministic threshold clustering) · summarize.py
    (extractive and LLM synthesis texts) · build.py (a tree from a library; rebuild) · leg.py
    (the query-time leg: node hits resolved to leaves) · retriever.py (make_raptor_retriever,
    make_raptor_store) · codec.py (rows) (``ragspine raptor``: ragspine/cli/raptor.py); the tables' I/O is in
    ``ragspine/stores/{sqlite,postgres}/raptor_store.py``.

A synthesis node is a probe, never evidence: a hit on it resolves to its member leaves, which
pass both RESTRICTED exits like every other result.
"""

from ragspine.retrieval.raptor.base import (
    Leaf,
    RaptorObserver,
    RaptorOptions,
    RaptorStore,
    RaptorTree,
    Summarizer,
    SynthesisNode,
    TreeInfo,
    raptor_requested,
)

__all__ = [
    "Leaf",
    "RaptorObserver",
    "RaptorOptions",
    "RaptorStore",
    "RaptorTree",
    "Summarizer",
    "SynthesisNode",
    "TreeInfo",
    "build_raptor_tree",
    "make_raptor_retriever",
    "make_raptor_store",
    "raptor_requested",
    "rebuild",
]


def __getattr__(name: str) -> object:
    """The builder and the retriever load numpy: imported on first use, so ``ragspine.config``
    (which reads this package's bounds) stays light."""
    if name in ("build_raptor_tree", "rebuild"):
        from ragspine.retrieval.raptor import build

        return getattr(build, name)
    if name in ("make_raptor_retriever", "make_raptor_store"):
        from ragspine.retrieval.raptor import retriever

        return getattr(retriever, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
