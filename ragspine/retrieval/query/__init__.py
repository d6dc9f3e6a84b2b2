"""Query-time transformations of the narrative pipeline (the ``QueryRewriter`` role)."""

from ragspine.retrieval.query.base import QueryRewriter

__all__ = ["QueryRewriter"]
