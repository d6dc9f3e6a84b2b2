"""A search's two values: the :class:`SearchRequest` that goes down, the :class:`Answer` that
comes back.

Whatever varies per search travels in the request — the question and its probes, the parsed
filter, ``top_k``, the ranking stages and leg weights a request overrides, whether RAPTOR's leg
runs, whether the filter may be dropped — never in state that requests share. Each layer hands
the next a transformed copy (:func:`dataclasses.replace`): the reasoning adds a question's
probes, the multi-library exit fans out per library, the corrective loop drops the filter, the
RAPTOR exit turns its leg on. What comes back is one typed :class:`Answer`: the snippets, the
flags, and — where reasoning ran — what was refused and the trace.

Every link exit (:class:`RequestRetriever`) answers ``search(request)``; ``search(query,
filters=, top_k=)`` and ``retrieve(query, filters=, top_k=)`` build the request for callers that
have only a question. :func:`ask` is how one layer asks the next.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ragspine.retrieval.query.probes import Probe
from ragspine.security.principals import ANONYMOUS, Viewer

if TYPE_CHECKING:
    from ragspine.retrieval.filtering.filters import FilterSpec, MetadataFilter
    from ragspine.retrieval.fusion.weights import LegWeights
    from ragspine.retrieval.link.narrative_link import NarrativeRetriever
    from ragspine.retrieval.ranking import Stages
    from ragspine.retrieval.snippet import Snippet
    from ragspine.retrieval.vector.dense import DenseCoverage

__all__ = ["DEFAULT_RETRIEVE_TOP_K", "Answer", "Probe", "RequestRetriever", "SearchRequest", "ask"]

DEFAULT_RETRIEVE_TOP_K = 50


@dataclass(frozen=True)
class SearchRequest:
    """One search (see the module docstring).

    ``probes``: texts the question's search runs besides its own variants (a query transform's);
    ``filter``: parsed once at the edge (``None``: none); ``stages``: the reranker, depth and
    postprocessors to rank with instead of each library's (``None``: each library's own);
    ``weights``: the legs' fusion weights instead of each library's (``None``: its own);
    ``raptor``: whether RAPTOR's leg runs (``None``: each library's default);
    ``retry_without_filters``: whether the caller allows dropping the filter when nothing
    matched (a layer drops it only where it is configured to as well); ``viewer``: whom the
    search runs for — every leg scores only the documents it may read, with their statistics
    (default: a caller who is no principal, who reads only the documents without an ACL).
    """

    question: str
    probes: tuple[Probe, ...] = ()
    filter: MetadataFilter | None = None
    top_k: int = DEFAULT_RETRIEVE_TOP_K
    stages: Stages | None = None
    weights: LegWeights | None = None
    raptor: bool | None = None
    retry_without_filters: bool = True
    viewer: Viewer = ANONYMOUS

    @classmethod
    def of(cls, query: SearchRequest | str, *, filters: MetadataFilter | None = None, top_k: int | None = None) -> SearchRequest:
        """``query`` as a request: a request as it is (``filters``/``top_k`` then belong in it:
        ``TypeError``), a question with ``filters`` and ``top_k`` (default
        :data:`DEFAULT_RETRIEVE_TOP_K`)."""
        if isinstance(query, SearchRequest):
            if filters is not None or top_k is not None:
                raise TypeError("a SearchRequest carries its own filter and top_k: pass them in it")
            return query
        return cls(query, filter=filters, top_k=DEFAULT_RETRIEVE_TOP_K if top_k is None else top_k)


@dataclass(frozen=True)
class Answer:
    """A link exit's answer: the ``snippets`` (RESTRICTED-free), whether they were found only
    after the filters were dropped, the libraries whose dense leg lacked vectors
    (``{library_id: DenseCoverage}``: the answer came from BM25 plus the vectors that exist;
    ``ragspine embed`` computes the rest) and, where query-time reasoning or the security gate
    ran, what was ``refused`` (the kind, the text — never HyDE's passage — and the entity), the
    ``trace`` of every step, and the fixed ``refusal`` message when the whole question was
    refused (no snippets then). ``refused``/``trace`` are ``None`` where nothing reasoned.

    ``library_runs``: the answers of libraries that reasoned for themselves inside a
    multi-library search (``reasoning/per_library.py`` merges their steps into the trace).
    """

    snippets: list[Snippet] = field(default_factory=list)
    filters_dropped: bool = False
    dense_incomplete: dict[str, DenseCoverage] = field(default_factory=dict)
    refused: list[dict[str, Any]] | None = None
    trace: list[dict[str, Any]] | None = None
    refusal: str | None = None
    library_runs: tuple[tuple[str, Answer], ...] = field(default=(), repr=False, compare=False)


class RequestRetriever:
    """A link exit speaking the request contract: subclasses answer :meth:`_answer`."""

    def search(self, request: SearchRequest | str, *, filters: MetadataFilter | None = None, top_k: int | None = None) -> Answer:
        """The answer to ``request`` (or to the question ``request`` with ``filters``, already
        parsed, and ``top_k``)."""
        return self._answer(SearchRequest.of(request, filters=filters, top_k=top_k))

    def retrieve(self, query: str, *, filters: FilterSpec = None, top_k: int = DEFAULT_RETRIEVE_TOP_K) -> list[Snippet]:
        """The snippets for ``query``; ``filters`` in any form ``parse_filter`` reads
        (``FilterError`` before any I/O). Each carries ``"filters_dropped": True`` when the
        filters were dropped to find it."""
        from ragspine.retrieval.filtering.filters import parse_filter

        return self.search(query, filters=parse_filter(filters), top_k=top_k).snippets

    def _answer(self, request: SearchRequest) -> Answer:
        raise NotImplementedError


def ask(retriever: NarrativeRetriever, request: SearchRequest) -> Answer:
    """``retriever``'s answer to ``request``: the request itself to a :class:`RequestRetriever`;
    to any other :class:`~ragspine.retrieval.link.narrative_link.NarrativeRetriever` (a caller's
    own, speaking ``search(query, filters=, top_k=)``) its question, filter and ``top_k``."""
    if isinstance(retriever, RequestRetriever):
        return retriever.search(request)
    answer: Answer = retriever.search(request.question, filters=request.filter, top_k=request.top_k)
    return answer
