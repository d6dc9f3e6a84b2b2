"""Reranking: the ``Reranker`` role (``base.py``), the listwise LLM judge and :func:`make_reranker`."""

from ragspine.retrieval.rerank.base import Reranker, make_reranker, rerank_open_subset

__all__ = ["Reranker", "make_reranker", "rerank_open_subset"]
