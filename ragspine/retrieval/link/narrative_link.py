"""The exit to the agent: snippet dicts with full provenance, RESTRICTED removed (exit #2).

``NarrativeIndexRetriever(index).retrieve(query, filters=None, top_k=50)`` maps ``filters``
onto a :class:`MetadataFilter`, asks the index, retries once without filters when the
filtered result is empty (the library scope is never dropped), and builds one snippet dict
per result — skipping every RESTRICTED chunk *before* a dict is built, so neither its text
nor its parent/window text can reach a prompt.

A snippet carries ``text, doc_id, title, source_locator, chunk_id``, the metadata
(``metadata`` plus the seed's five fields at top level), ``sensitivity``, ``library_id``,
``version`` and ``scores = {"bm25", "vector", "fused"}``; ``prompt_text`` (the parent or
window text, for generation only) when the chunker recorded one.
"""

from __future__ import annotations

import os
from typing import Any, Protocol

from ragspine.retrieval.chunking.chunk_store import DEFAULT_LIBRARY_ID, ChunkStore
from ragspine.retrieval.filtering.automatic import FilterExtractor, safe_extract
from ragspine.retrieval.filtering.filters import parse_filter
from ragspine.retrieval.lexical.rewrite import GlossaryQueryRewriter, QueryRewriter
from ragspine.retrieval.metadata import STANDARD_FIELDS
from ragspine.retrieval.mode import RetrievalMode
from ragspine.retrieval.narrative_index import NarrativeIndex, Postprocessor
from ragspine.retrieval.rerank.listwise_rerank import (
    ListwiseReranker,
    Reranker,
    build_listwise_prompt,
    parse_listwise_response,
)
from ragspine.retrieval.sensitivity import RESTRICTED_SENSITIVITY, is_restricted
from ragspine.retrieval.types import RetrievalResult
from ragspine.retrieval.vector.base import EmbeddingBackend, EmbeddingCache, VectorStore

__all__ = [
    "RESTRICTED_SENSITIVITY",
    "LLMProvider",
    "NarrativeRetriever",
    "NarrativeIndexRetriever",
    "ProviderListwiseJudge",
    "build_narrative_retriever",
    "to_snippet",
]

DEFAULT_RETRIEVE_TOP_K = 50


class LLMProvider(Protocol):
    def chat(self, messages: list[dict[str, str]], **kwargs: Any) -> str: ...


class NarrativeRetriever(Protocol):
    """The agent-side contract: a query in, RESTRICTED-free snippet dicts out."""

    def retrieve(self, query: str, *, filters: Any = None, top_k: int = DEFAULT_RETRIEVE_TOP_K) -> list[dict[str, Any]]: ...


def to_snippet(result: RetrievalResult) -> dict[str, Any]:
    chunk = result.chunk
    snippet: dict[str, Any] = {
        "text": chunk.text,
        "doc_id": chunk.doc_id,
        "title": chunk.title,
        "source_locator": chunk.source_locator,
        "chunk_id": chunk.chunk_id,
        "sensitivity": chunk.sensitivity,
        "library_id": result.library_id or chunk.library_id,
        "version": chunk.version,
        "valid_as_of": chunk.valid_as_of,
        "metadata": dict(chunk.metadata),
        "scores": {k: float(result.scores.get(k, 0.0)) for k in ("bm25", "vector", "fused")},
    }
    for name in STANDARD_FIELDS:
        snippet[name] = getattr(chunk, name)
    if chunk.parent_id:
        snippet["parent_id"] = chunk.parent_id
    if chunk.heading:
        snippet["heading"] = chunk.heading
    if chunk.window_text:
        snippet["prompt_text"] = chunk.window_text
        snippet["parent_locator"] = chunk.parent_locator
    return snippet


class NarrativeIndexRetriever:
    """Adapts a :class:`NarrativeIndex` to :class:`NarrativeRetriever` (RESTRICTED exit #2)."""

    def __init__(
        self,
        index: NarrativeIndex,
        *,
        retry_without_filters: bool = True,
        filter_extractor: FilterExtractor | None = None,
    ) -> None:
        self.index = index
        self.retry_without_filters = retry_without_filters
        self.filter_extractor = filter_extractor

    @property
    def library_id(self) -> str:
        return self.index.library_id

    def retrieve(self, query: str, *, filters: Any = None, top_k: int = DEFAULT_RETRIEVE_TOP_K) -> list[dict[str, Any]]:
        metadata_filter = parse_filter(filters)  # FilterError here, before any I/O
        automatic = safe_extract(self.filter_extractor, query)
        if automatic:  # AND-ed: an extracted filter can only narrow
            metadata_filter = automatic.and_(metadata_filter)
        results = self._open_results(query, top_k, metadata_filter)
        open_results = [r for r in results or [] if not is_restricted(r.chunk.sensitivity)]
        # "Empty" is judged after RESTRICTED is set aside: otherwise [] versus a retried answer
        # would tell the caller whether a RESTRICTED chunk matches the filter.
        if not open_results and metadata_filter and self.retry_without_filters:
            results = self._open_results(query, top_k, None)
            open_results = [r for r in results or [] if not is_restricted(r.chunk.sensitivity)]
        return [to_snippet(r) for r in open_results[:top_k]]

    def _open_results(self, query: str, top_k: int, metadata_filter: Any) -> list[RetrievalResult] | None:
        """Up to ``top_k`` results once RESTRICTED ones are set aside: the index is asked
        for more (doubling, at most eight rounds) while RESTRICTED results took places.
        ``None`` when the index found nothing at all."""
        want = top_k
        for _ in range(8):
            results = self.index.retrieve(query, top_k=want, metadata_filter=metadata_filter)
            if not results:
                return None
            n_open = sum(not is_restricted(r.chunk.sensitivity) for r in results)
            if n_open >= top_k or len(results) < want:
                break
            want = max(2 * want, want + top_k - n_open)
        return results


class ProviderListwiseJudge:
    """A :class:`ListwiseJudge` over an ``LLMProvider``: one ``chat`` call per judgement.

    Provider errors propagate; ``listwise_rerank`` catches them and keeps the RRF order.
    """

    def __init__(self, provider: LLMProvider) -> None:
        self.provider = provider

    def judge(self, query: str, candidates: list[str]) -> list[int]:
        prompt = build_listwise_prompt(query, candidates)
        answer = self.provider.chat([{"role": "user", "content": prompt}])
        return parse_listwise_response(answer, len(candidates))


def build_narrative_retriever(
    chunk_db: "str | os.PathLike[str] | ChunkStore",
    provider: LLMProvider | None = None,
    *,
    embedding_backend: EmbeddingBackend | None = None,
    reranker: Reranker | None = None,
    postprocessor: Postprocessor | None = None,
    mode: "RetrievalMode | str | None" = None,
    library_id: str = DEFAULT_LIBRARY_ID,
    vector_store: VectorStore | None = None,
    embedding_cache: EmbeddingCache | None = None,
    rewriter: QueryRewriter | None = None,
    filter_extractor: FilterExtractor | None = None,
) -> tuple[NarrativeIndexRetriever, ChunkStore]:
    """Open the chunk store and assemble the default chain; the caller closes the store.

    Default: pure BM25 + RRF, glossary multi-query, and — when ``provider`` is given and no
    ``reranker`` is — a listwise rerank by that provider. ``embedding_backend`` turns on the
    dense leg (``mode`` ``economy``/``bm25``/``lexical`` ignores it and builds no vector store).
    """
    if isinstance(chunk_db, (str, os.PathLike)):
        from ragspine.retrieval.chunking.sqlite_store import SQLiteChunkStore

        store: ChunkStore = SQLiteChunkStore(chunk_db, library_id=library_id)
    else:
        store = chunk_db
    store.init_schema()
    if reranker is None and provider is not None:
        reranker = ListwiseReranker(ProviderListwiseJudge(provider))
    index = NarrativeIndex(
        store,
        embedding_backend=embedding_backend,
        vector_store=vector_store,
        embedding_cache=embedding_cache,
        mode=mode,
        rewriter=rewriter if rewriter is not None else GlossaryQueryRewriter(),
        reranker=reranker,
        postprocessor=postprocessor,
    )
    return NarrativeIndexRetriever(index, filter_extractor=filter_extractor), store

