"""Every import path the seed documents (and every path a refactor moved) still works."""

from __future__ import annotations

import importlib

import pytest

from tests.helpers import needs

#: module -> names, as the seed (``shared/seeds/retrieval.*``) writes them.
SEED_PATHS = {
    "ragspine.retrieval.chunking.chunking": ["chunk_document", "Chunk", "DEFAULT_CHUNK_CHARS", "DEFAULT_OVERLAP_CHARS"],
    "ragspine.retrieval.chunking.chunk_store": ["ChunkStore", "StoredChunk"],
    "ragspine.retrieval.lexical.retrieval": [
        "tokenize", "bm25_scores", "rrf_fuse", "GlossaryQueryRewriter", "HybridRetriever", "EmbeddingBackend",
        "NarrativeIndex", "DEFAULT_BM25_K1", "DEFAULT_BM25_B", "DEFAULT_RRF_K",
    ],
    "ragspine.retrieval.vector.embedding_backends": ["make_embedding_backend", "EmbeddingBackend", "DeterministicEmbeddingBackend"],
    "ragspine.retrieval.vector.store": ["VectorStore", "InProcessVectorStore"],
    "ragspine.retrieval.rerank.listwise_rerank": [
        "ListwiseJudge", "listwise_rerank", "build_listwise_prompt", "parse_listwise_response", "DEFAULT_TOP_N",
    ],
    "ragspine.retrieval.link.narrative_link": [
        "NarrativeIndexRetriever", "ProviderListwiseJudge", "build_narrative_retriever", "RESTRICTED_SENSITIVITY",
    ],
    "ragspine.retrieval.postprocess": ["make_postprocessor"],
    "ragspine.retrieval.mode": ["make_retrieval_mode"],
    "ragspine.retrieval.filtering": ["MetadataFilter", "FilterCondition"],
    "ragspine.retrieval.filtering.automatic": ["make_filter_extractor"],
    "ragspine.retrieval.routing.multi_index": ["MultiIndexRetriever"],
    "ragspine.retrieval.routing": ["make_library_router"],
}
#: paths the layout moved (the code now lives elsewhere; these keep working).
KEPT_PATHS = {
    "ragspine.retrieval.narrative_index": ["NarrativeIndex", "IngestReport", "Postprocessor"],
    "ragspine.retrieval.lexical.fusion": ["rrf_fuse", "sort_fused", "DEFAULT_RRF_K"],
    "ragspine.retrieval.lexical.index": ["LexicalIndex", "LexicalHit", "InMemoryLexicalIndex", "default_index_text"],
    "ragspine.retrieval.lexical.hybrid": ["HybridRetriever", "combine_filters", "StaleRanking", "MAX_STALE_RETRIES"],
    "ragspine.retrieval.chunking.sqlite_store": ["SQLiteChunkStore", "SQLiteDatabase", "SCHEMA_VERSION"],
    "ragspine.retrieval.vector.base": ["EmbeddingBackend", "VectorStore", "EmbeddingCache", "VectorRecord", "embedding_key"],
    "ragspine.retrieval.vector.cache": ["InMemoryEmbeddingCache", "SQLiteEmbeddingCache"],
    "ragspine.stores.pgvector.filters": ["filter_clause", "pg_storable", "storable_bound"],
}


@pytest.mark.parametrize("module, names", list(SEED_PATHS.items()) + list(KEPT_PATHS.items()))
def test_import_path_works(module: str, names: list[str]) -> None:
    if module == "ragspine.stores.pgvector.filters":
        needs("sqlalchemy")
    imported = importlib.import_module(module)
    missing = [name for name in names if not hasattr(imported, name)]
    assert missing == []


def test_the_seed_names_are_the_new_objects() -> None:
    from ragspine.retrieval.narrative_index import NarrativeIndex
    from ragspine.retrieval.pipeline import LibraryPipeline
    from ragspine.retrieval.vector.store import VectorStore
    from ragspine.retrieval.vector.vector_store import VectorStore as Role

    assert NarrativeIndex is LibraryPipeline and VectorStore is Role
