"""Query-time reasoning around the link exit: the security gate, Adaptive-RAG, decomposition,
query transforms (HyDE, RAG-Fusion, step-back) and the corrective (CRAG) loop.

    layout: options.py (ReasoningOptions, ReasoningObserver) · retriever.py (ReasoningRetriever,
    the order of the steps) · fuse.py (deterministic fusion of several searches) · grade.py
    (the corrective loop's deterministic grade); the roles and their LLM adapters are in
    ``ragspine.retrieval.query``, the gate in ``ragspine.security``.
"""

from ragspine.retrieval.reasoning.options import ReasoningObserver, ReasoningOptions, ReasoningStats
from ragspine.retrieval.reasoning.retriever import (
    CORRECTIVE_REFUSAL,
    GATE_REFUSAL,
    ReasonedRetrieval,
    ReasoningRetriever,
)

__all__ = [
    "CORRECTIVE_REFUSAL",
    "GATE_REFUSAL",
    "ReasonedRetrieval",
    "ReasoningObserver",
    "ReasoningOptions",
    "ReasoningRetriever",
    "ReasoningStats",
]
