"""``MultiIndexRetriever``: route a query to libraries, search each, fuse with RRF.

Each library is searched by its own retriever — whose exit already removed RESTRICTED
content — so the fusion here only ever passes on a subset of what the libraries returned;
it never reads chunks. Every snippet is stamped with the ``library_id`` it came from.
Routing failure, an empty answer or an answer naming no known library searches every
library (routing never costs recall). Libraries are fused on ``(library_id, chunk_id)``,
so equal chunk ids in two libraries stay apart. A ``filter_extractor``'s filter is extracted
once per query and AND-ed with the caller's (it can only narrow); one search is one request
of the LLM call budget (:func:`~ragspine.llm.budget.llm_request`), its libraries included.
Each library is asked the caller's :class:`~ragspine.retrieval.request.SearchRequest` with
the search's filter and depth (its stages, weights, probes and RAPTOR choice as they are).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Mapping, Sequence

from ragspine.deadline import check as check_deadline
from ragspine.llm.budget import llm_request
from ragspine.retrieval.ask_again import Page, ask_again
from ragspine.retrieval.chunking.chunk_store import LibraryInfo
from ragspine.retrieval.filtering.automatic import FilterExtractor, safe_extract
from ragspine.retrieval.fusion import DEFAULT_RRF_K, rrf_fuse, sort_fused
from ragspine.retrieval.link.expansion import share_expansions
from ragspine.retrieval.link.narrative_link import NarrativeRetriever
from ragspine.retrieval.request import Answer, RequestRetriever, SearchRequest, ask
from ragspine.retrieval.routing.base import LibraryRouter
from ragspine.retrieval.snippet import Snippet, with_fused

if TYPE_CHECKING:
    from ragspine.retrieval.vector.dense import DenseCoverage

log = logging.getLogger(__name__)


#: How libraries' rankings are fused: ``rrf`` (each library's rank 1 counts alike) or
#: ``confidence`` (each library's RRF weighted by how well its best hit matched, see
#: :func:`confidence_weights`).
LIBRARY_FUSIONS = ("rrf", "confidence")


def confidence_weights(rankings: Sequence[Sequence[Snippet]]) -> list[float] | None:
    """One weight per library ranking: its best BM25 score over the best of every library's
    (so the best-matching library weighs 1, one whose best hit matched half as well 0.5).
    BM25 scores of two libraries are not exactly comparable (each has its own statistics), but
    a library whose best hit shares few of the query's terms scores far below one whose hits
    share many — enough that its rank 1 no longer outranks the other's strong ones. ``None``
    (plain RRF) when no library has a BM25 score (vector-only search)."""
    best = [max((float(s["scores"].get("bm25", 0.0)) if "scores" in s else 0.0 for s in ranking), default=0.0) for ranking in rankings]
    top = max(best, default=0.0)
    if top <= 0:
        return None
    return [b / top for b in best]


class MultiIndexRetriever(RequestRetriever):
    """A :class:`NarrativeRetriever` over several libraries."""

    def __init__(
        self,
        retrievers: Mapping[str, NarrativeRetriever],
        *,
        router: LibraryRouter | None = None,
        descriptions: Mapping[str, str] | None = None,
        rrf_k: int = DEFAULT_RRF_K,
        retry_without_filters: bool = False,
        library_fusion: str = "confidence",
        filter_extractor: FilterExtractor | None = None,
    ) -> None:
        if not retrievers:
            raise ValueError("MultiIndexRetriever needs at least one library")
        if library_fusion not in LIBRARY_FUSIONS:
            raise ValueError(f"library_fusion must be one of {', '.join(LIBRARY_FUSIONS)}, got {library_fusion!r}")
        self.library_fusion = library_fusion
        self.retrievers = dict(retrievers)
        self.router = router
        self.descriptions = dict(descriptions or {})
        self.rrf_k = rrf_k
        # Retry once without filters when the *fused* filtered result is empty. Use it with
        # per-library retrievers that do not retry themselves (as ``Stack`` builds them), so
        # one library's unfiltered fallback never sits next to another library's matches.
        self.retry_without_filters = retry_without_filters
        self.filter_extractor = filter_extractor

    @property
    def libraries(self) -> list[LibraryInfo]:
        return [LibraryInfo(lib, self.descriptions.get(lib, "")) for lib in self.retrievers]

    def route(self, query: str) -> list[str]:
        """The libraries to search, in routing order (falls back to all of them)."""
        everything = list(self.retrievers)
        if self.router is None:
            return everything
        try:
            chosen = self.router.route(query, self.libraries)
            if isinstance(chosen, str):  # a bare id, not a list of its characters
                chosen = [chosen]
            picked = [lib for lib in dict.fromkeys(chosen or []) if lib in self.retrievers]
        except Exception as exc:  # also a malformed answer (not a list of ids)
            log.warning("library routing failed, searching every library: %s", exc)
            return everything
        return picked or everything

    def _answer(self, request: SearchRequest) -> Answer:
        """The fused answer; when ``retry_without_filters`` (here and in the request) and
        nothing matched the filter, the libraries are searched once more without it (decided by
        ``ask_again``)."""
        with llm_request():
            automatic = safe_extract(self.filter_extractor, request.question)
            return self._fused(replace(request, filter=automatic.and_(request.filter)) if automatic else request)

    def _fused(self, request: SearchRequest) -> Answer:
        libraries = self.route(request.question)
        incomplete: dict[str, DenseCoverage] = {}
        runs: list[tuple[str, Answer]] = []
        answer = ask_again(
            lambda want, f, skip: Page(self._search(replace(request, filter=f, top_k=want), libraries, incomplete, runs), exhausted=True),
            top_k=request.top_k,
            metadata_filter=request.filter,
            retry_without_filters=self.retry_without_filters and request.retry_without_filters,
        )
        if answer.filters_dropped:
            for snippet in answer.items:
                snippet["filters_dropped"] = True
        return Answer(answer.items, answer.filters_dropped, incomplete, library_runs=tuple(runs))

    def _search(
        self, request: SearchRequest, libraries: list[str], incomplete: dict[str, DenseCoverage], runs: list[tuple[str, Answer]],
    ) -> list[Snippet]:
        """One pass over ``libraries``, each asked ``request``; what they said besides their
        snippets is added to ``incomplete`` and ``runs``."""
        per_library: dict[str, list[Snippet]] = {}
        for lib in libraries:
            check_deadline("the search")
            found = ask(self.retrievers[lib], request)
            per_library[lib] = found.snippets
            incomplete.update(found.dense_incomplete)
            runs.extend(found.library_runs)
        rankings: list[Sequence[tuple[str, str]]] = [
            [(lib, s["chunk_id"]) for s in snippets] for lib, snippets in per_library.items()
        ]
        weights = confidence_weights(list(per_library.values())) if self.library_fusion == "confidence" else None
        by_key = {(lib, s["chunk_id"]): s for lib, snippets in per_library.items() for s in snippets}
        out = []
        for (lib, chunk_id), fused in sort_fused(rrf_fuse(rankings, k=self.rrf_k, weights=weights))[:request.top_k]:
            snippet = by_key[(lib, chunk_id)].copy()
            snippet["library_id"] = lib
            snippet["scores"] = with_fused(snippet, fused)
            out.append(snippet)
        return share_expansions(out)  # after fusing: each parent block once across the fused list
