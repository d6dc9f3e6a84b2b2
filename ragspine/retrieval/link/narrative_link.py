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
``"filters_dropped": True`` when it was found only after the filters were dropped (the
keys, typed: :class:`~ragspine.retrieval.snippet.Snippet`).
:meth:`NarrativeIndexRetriever.search` answers a
:class:`~ragspine.retrieval.request.SearchRequest` (or a question) with an
:class:`~ragspine.retrieval.request.Answer` (``Retrieval``, its old name), whose
``filters_dropped`` says it once for the whole answer.
"""

from __future__ import annotations

import os
from typing import Any, Collection, Protocol

from ragspine.llm.base import LLMProvider
from ragspine.llm.budget import llm_request
from ragspine.retrieval.ask_again import ask_again
from ragspine.retrieval.chunking.chunk_store import DEFAULT_LIBRARY_ID, ChunkStore
from ragspine.retrieval.filtering.automatic import FilterExtractor, safe_extract
from ragspine.retrieval.filtering.filters import FilterSpec, MetadataFilter
from ragspine.retrieval.lexical.base import LexicalIndex
from ragspine.retrieval.lexical.rewrite import GlossaryQueryRewriter
from ragspine.retrieval.link.expansion import share_expansions, withheld_extents
from ragspine.retrieval.mode import RetrievalMode
from ragspine.retrieval.pipeline import LibraryPipeline
from ragspine.retrieval.postprocess.base import Postprocessor
from ragspine.retrieval.query.base import QueryRewriter
from ragspine.retrieval.request import DEFAULT_RETRIEVE_TOP_K, Answer, RequestRetriever, SearchRequest
from ragspine.retrieval.rerank.base import Reranker, make_reranker
from ragspine.retrieval.sensitivity import RESTRICTED_SENSITIVITY, is_restricted
from ragspine.retrieval.snippet import Snippet, snippet_pages
from ragspine.retrieval.types import RetrievalResult
from ragspine.retrieval.vector.embedding import EmbeddingBackend
from ragspine.retrieval.vector.embedding_cache import EmbeddingCache
from ragspine.retrieval.vector.vector_store import VectorStore

__all__ = [
    "DEFAULT_RETRIEVE_TOP_K",
    "RESTRICTED_SENSITIVITY",
    "Answer",
    "LLMProvider",
    "NarrativeRetriever",
    "NarrativeIndexRetriever",
    "Retrieval",
    "SearchRequest",
    "Snippet",
    "build_narrative_retriever",
    "to_snippet",
]

#: The answer's old name (still importable from here).
Retrieval = Answer


def __getattr__(name: str) -> Any:
    """``ProviderListwiseJudge`` lives beside the listwise reranker; still importable from here."""
    if name == "ProviderListwiseJudge":
        from ragspine.retrieval.rerank.listwise_rerank import ProviderListwiseJudge

        return ProviderListwiseJudge
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class NarrativeRetriever(Protocol):
    """The agent-side contract: a query in, RESTRICTED-free snippet dicts out."""

    def retrieve(self, query: str, *, filters: FilterSpec = None, top_k: int = DEFAULT_RETRIEVE_TOP_K) -> list[Snippet]:
        """Snippets for ``query``; each carries ``"filters_dropped": True`` when the filters
        were dropped to find it."""
        ...

    def search(self, request: SearchRequest | str, *, filters: MetadataFilter | None = None, top_k: int | None = None) -> Answer:
        """The answer to ``request`` (or to the question ``request`` with ``filters``, already
        parsed, and ``top_k``), with ``filters_dropped`` said once."""
        ...


def _text(value: object) -> str:
    return "" if value is None else str(value)


def to_snippet(result: RetrievalResult, withheld: Collection[tuple[str, int, str]] = ()) -> Snippet:
    """The snippet dict of one result (see the module docstring); ``withheld``: the
    ``(doc_id, version, parent_locator)`` expansions that overlap RESTRICTED text
    (:func:`~ragspine.retrieval.link.expansion.withheld_extents`)."""
    chunk = result.chunk
    scores = result.scores
    meta = chunk.metadata
    snippet: Snippet = {
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
        # the seed's fields at top level, as text (Chunk.topic, ...): STANDARD_FIELDS, in order
        "topic": _text(meta.get("topic")),
        "entity": _text(meta.get("entity")),
        "geography": _text(meta.get("geography")),
        "period": _text(meta.get("period")),
        "language": _text(meta.get("language")),
    }
    pages = snippet_pages(meta)
    if pages is not None:
        snippet["page"] = pages[0]
        if pages[1] != pages[0]:
            snippet["page_end"] = pages[1]
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


class NarrativeIndexRetriever(RequestRetriever):
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

    def _answer(self, request: SearchRequest) -> Answer:
        with llm_request():  # one request's LLM call budget (shared with an enclosing multi-library search)
            return self._search(request)

    def _search(self, request: SearchRequest) -> Answer:
        automatic = safe_extract(self.filter_extractor, request.question)
        filters = request.filter
        metadata_filter = automatic.and_(filters) if automatic else filters  # AND-ed: an extracted filter only narrows
        answer = ask_again(
            lambda want, f, skip: self.index.search_once(request, want, f, skip),
            top_k=request.top_k,
            metadata_filter=metadata_filter,
            keep=lambda r: not is_restricted(r.chunk.sensitivity),
            retry_without_filters=self.retry_without_filters and request.retry_without_filters,
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
        return Answer(snippets, answer.filters_dropped, incomplete)


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
        reranker = make_reranker("listwise", provider=provider)  # the registry's listwise reranker, judged by ``provider``
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

