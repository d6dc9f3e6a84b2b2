"""The seed's lexical entry point: scoring, fusion, rewriting and the retrievers.

The pieces live in small modules (``tokenizer``, ``bm25``, ``fusion``, ``rewrite``,
``index``, ``hybrid``); this module keeps the seed's import path working.
"""

from ragspine.retrieval.fusion import DEFAULT_RRF_K, rrf_fuse, sort_fused
from ragspine.retrieval.lexical.bm25 import (
    DEFAULT_BM25_B,
    DEFAULT_BM25_K1,
    bm25_idf,
    bm25_scores,
)
from ragspine.retrieval.lexical.hybrid import HybridRetriever
from ragspine.retrieval.lexical.index import (
    InMemoryLexicalIndex,
    LexicalHit,
    LexicalIndex,
)
from ragspine.retrieval.lexical.rewrite import (
    DEFAULT_GLOSSARY,
    GlossaryQueryRewriter,
    QueryRewriter,
)
from ragspine.retrieval.lexical.tokenizer import tokenize
from ragspine.retrieval.narrative_index import NarrativeIndex
from ragspine.retrieval.types import RetrievalResult
from ragspine.retrieval.vector.embedding import EmbeddingBackend

__all__ = [
    "DEFAULT_BM25_B",
    "DEFAULT_BM25_K1",
    "DEFAULT_GLOSSARY",
    "DEFAULT_RRF_K",
    "EmbeddingBackend",
    "GlossaryQueryRewriter",
    "HybridRetriever",
    "InMemoryLexicalIndex",
    "LexicalHit",
    "LexicalIndex",
    "NarrativeIndex",
    "QueryRewriter",
    "RetrievalResult",
    "bm25_idf",
    "bm25_scores",
    "rrf_fuse",
    "sort_fused",
    "tokenize",
]
