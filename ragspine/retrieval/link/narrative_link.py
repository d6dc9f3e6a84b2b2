"""The exit to the agent: snippet dicts with full provenance, RESTRICTED removed (exit #2).

``NarrativeIndexRetriever(index).retrieve(query, filters=None, top_k=50)`` is the Python
API's edge: it parses ``filters`` into a :class:`MetadataFilter` once (``FilterError`` before
any I/O), ANDs an automatic filter, and asks the pipeline through
:func:`~ragspine.retrieval.ask_again.ask_again` — which tops up when RESTRICTED results took
places and retries once without filters when nothing matched (the library scope is never
dropped). It builds one snippet dict per result — skipping every RESTRICTED chunk *before* a
dict is built, so neither its text nor its parent/window text can reach a prompt.

A snippet carries ``text, doc_id, title, source_locator, chunk_id``, the metadata
(``metadata`` plus the seed's five fields at top level), ``sensitivity``, ``library_id``,
``version`` and ``scores = {"bm25", "vector", "fused"}``; ``parent_id``/``heading`` when the
chunker set them; ``prompt_text`` (the parent or window text, for generation only) with
``parent_locator`` when the chunker recorded one — once per parent block, see
:mod:`~ragspine.retrieval.link.expansion` — and
``"filters_dropped": True`` when it was found only after the filters were dropped.
:meth:`NarrativeIndexRetriever.search` returns the same as a :class:`Retrieval`, whose
``filters_dropped`` says it once for the whole answer.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Collection, Protocol

from ragspine.llm.base import LLMProvider
from ragspine.llm.budget import llm_request
from ragspine.llm.observe import report_malformed
from ragspine.retrieval.ask_again import ask_again
from ragspine.retrieval.chunking.chunk_store import DEFAULT_LIBRARY_ID, ChunkStore
from ragspine.retrieval.filtering.automatic import FilterExtractor, safe_extract
from ragspine.retrieval.filtering.filters import MetadataFilter, parse_filter
from ragspine.retrieval.lexical.base import LexicalIndex
from ragspine.retrieval.lexical.rewrite import GlossaryQueryRewriter
from ragspine.retrieval.link.expansion import share_expansions, withheld_extents
from ragspine.retrieval.metadata import STANDARD_FIELDS
from ragspine.retrieval.mode import RetrievalMode
from ragspine.retrieval.pipeline import LibraryPipeline
from ragspine.retrieval.postprocess.base import Postprocessor
from ragspine.retrieval.query.base import QueryRewriter
from ragspine.retrieval.rerank.base import Reranker
from ragspine.retrieval.rerank.listwise_rerank import (
    ListwiseReranker,
    build_listwise_prompt,
    read_listwise_response,
)
from ragspine.retrieval.sensitivity import RESTRICTED_SENSITIVITY, is_restricted
from ragspine.retrieval.types import RetrievalResult
from ragspine.retrieval.vector.dense import DenseCoverage
from ragspine.retrieval.vector.embedding import EmbeddingBackend
from ragspine.retrieval.vector.embedding_cache import EmbeddingCache
from ragspine.retrieval.vector.vector_store import VectorStore

__all__ = [
    "RESTRICTED_SENSITIVITY",
    "LLMProvider",
    "NarrativeRetriever",
    "NarrativeIndexRetriever",
    "ProviderListwiseJudge",
    "Retrieval",
    "build_narrative_retriever",
    "to_snippet",
]

DEFAULT_RETRIEVE_TOP_K = 50


@dataclass(frozen=True)
class Retrieval:
    """Snippets, whether they were found only after the filters were dropped, and the
    libraries whose dense leg lacked vectors (``{library_id: DenseCoverage}``: the answer came
    from BM25 plus the vectors that exist; ``ragspine embed`` computes the rest)."""

    snippets: list[dict[str, Any]] = field(default_factory=list)
    filters_dropped: bool = False
    dense_incomplete: dict[str, DenseCoverage] = field(default_factory=dict)


class NarrativeRetriever(Protocol):
    """The agent-side contract: a query in, RESTRICTED-free snippet dicts out."""

    def retrieve(self, query: str, *, filters: Any = None, top_k: int = DEFAULT_RETRIEVE_TOP_K) -> list[dict[str, Any]]:
        """Snippets for ``query``; each carries ``"filters_dropped": True`` when the filters
        were dropped to find it."""
        ...

    def search(self, query: str, *, filters: MetadataFilter | None = None, top_k: int = DEFAULT_RETRIEVE_TOP_K) -> Retrieval:
        """The same answer, with ``filters_dropped`` said once (filters already parsed)."""
        ...


def to_snippet(result: RetrievalResult, withheld: Collection[tuple[str, int, str]] = ()) -> dict[str, Any]:
    """The snippet dict of one result (see the module docstring); ``withheld``: the
    ``(doc_id, version, parent_locator)`` expansions that overlap RESTRICTED text
    (:func:`~ragspine.retrieval.link.expansion.withheld_extents`)."""
    chunk = result.chunk
    scores = result.scores
    meta = chunk.metadata
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
        "metadata": dict(meta),
        "scores": {"bm25": float(scores.get("bm25", 0.0)), "vector": float(scores.get("vector", 0.0)),
                   "fused": float(scores.get("fused", 0.0))},
    }
    for name in STANDARD_FIELDS:  # the seed's fields at top level, as text (Chunk.topic, ...)
        value = meta.get(name)
        snippet[name] = "" if value is None else str(value)
    if chunk.parent_id:
        snippet["parent_id"] = chunk.parent_id
    if chunk.heading:
        snippet["heading"] = chunk.heading
    if "rerank" in scores:
        snippet["scores"]["rerank"] = float(scores["rerank"])
    if chunk.window_text:
        snippet["parent_locator"] = chunk.parent_locator
        if (chunk.doc_id, chunk.version, chunk.parent_locator) in withheld:
            snippet["expansion_withheld"] = True  # and no compressed form of it either
        else:
            snippet["prompt_text"] = chunk.window_text if result.prompt_text is None else result.prompt_text
    elif result.prompt_text is not None:  # a compression of the chunk's own text
        snippet["prompt_text"] = result.prompt_text
    return snippet


class NarrativeIndexRetriever:
    """Adapts a :class:`LibraryPipeline` to :class:`NarrativeRetriever` (RESTRICTED exit #2)."""

    def __init__(
        self,
        index: LibraryPipeline,
        *,
        retry_without_filters: bool = True,
        filter_extractor: FilterExtractor | None = None,
        share_expansions: bool = True,
    ) -> None:
        self.index = index
        self.retry_without_filters = retry_without_filters
        self.filter_extractor = filter_extractor
        self.share_expansions = share_expansions  # off under a multi-library exit, which shares after fusing

    @property
    def library_id(self) -> str:
        return self.index.library_id

    def retrieve(self, query: str, *, filters: Any = None, top_k: int = DEFAULT_RETRIEVE_TOP_K) -> list[dict[str, Any]]:
        return self.search(query, filters=parse_filter(filters), top_k=top_k).snippets  # FilterError before any I/O

    def search(self, query: str, *, filters: MetadataFilter | None = None, top_k: int = DEFAULT_RETRIEVE_TOP_K) -> Retrieval:
        with llm_request():  # one request's LLM call budget (shared with an enclosing multi-library search)
            return self._search(query, filters, top_k)

    def _search(self, query: str, filters: MetadataFilter | None, top_k: int) -> Retrieval:
        automatic = safe_extract(self.filter_extractor, query)
        metadata_filter = automatic.and_(filters) if automatic else filters  # AND-ed: an extracted filter only narrows
        answer = ask_again(
            lambda want, f, skip: self.index.search_once(query, want, f, skip),
            top_k=top_k,
            metadata_filter=metadata_filter,
            keep=lambda r: not is_restricted(r.chunk.sensitivity),
            retry_without_filters=self.retry_without_filters,
        )
        withheld = withheld_extents(answer.items, getattr(self.index, "store", None))
        snippets = [to_snippet(r, withheld) for r in answer.items]
        if self.share_expansions:
            share_expansions(snippets)
        if answer.filters_dropped:
            for snippet in snippets:
                snippet["filters_dropped"] = True
        coverage = answer.dense_coverage  # this search's own, never a shared pipeline's "last search"
        incomplete = {self.library_id: coverage} if coverage is not None and not coverage.complete else {}
        return Retrieval(snippets, answer.filters_dropped, incomplete)


class ProviderListwiseJudge:
    """A :class:`ListwiseJudge` over an ``LLMProvider``: one ``chat`` call per judgement.

    Provider errors propagate; ``listwise_rerank`` catches them and keeps the RRF order. An
    answer naming no candidate is reported as malformed and keeps the RRF order too.
    """

    def __init__(self, provider: LLMProvider) -> None:
        self.provider = provider

    def judge(self, query: str, candidates: list[str]) -> list[int]:
        prompt = build_listwise_prompt(query, candidates)
        answer = self.provider.chat([{"role": "user", "content": prompt}])
        order = read_listwise_response(answer, len(candidates))
        if order is None:
            report_malformed(self.provider, "listwise", answer)
            return list(range(len(candidates)))
        return order


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
    lexical_index: LexicalIndex | None = None,
) -> tuple[NarrativeIndexRetriever, ChunkStore]:
    """Open the chunk store and assemble the default chain; the caller closes the store.

    Default: pure BM25 + RRF, glossary multi-query, and — when ``provider`` is given and no
    ``reranker`` is — a listwise rerank by that provider. ``embedding_backend`` turns on the
    dense leg (``mode`` ``economy``/``bm25``/``lexical`` ignores it and builds no vector store).
    """
    if isinstance(chunk_db, (str, os.PathLike)):
        from ragspine.stores.sqlite.chunk_store import SQLiteChunkStore

        store: ChunkStore = SQLiteChunkStore(chunk_db, library_id=library_id)
    else:
        store = chunk_db
    store.init_schema()
    if reranker is None and provider is not None:
        reranker = ListwiseReranker(ProviderListwiseJudge(provider))
    index = LibraryPipeline(
        store,
        embedding_backend=embedding_backend,
        vector_store=vector_store,
        embedding_cache=embedding_cache,
        mode=mode,
        rewriter=rewriter if rewriter is not None else GlossaryQueryRewriter(),
        reranker=reranker,
        postprocessor=postprocessor,
        lexical_index=lexical_index,
    )
    return NarrativeIndexRetriever(index, filter_extractor=filter_extractor), store

