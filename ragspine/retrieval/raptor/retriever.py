"""``make_raptor_retriever``: a link exit whose searches use RAPTOR's tree; ``make_raptor_store``.

``make_raptor_retriever(pipeline)`` (or ``{library: pipeline}``) gives each pipeline RAPTOR's
leg (``leg.py``) reading the tree of its library from ``trees`` (default: the tables of the
pipeline's own chunk database), and returns a :class:`RaptorRetriever`: the usual exit
(:class:`~ragspine.retrieval.link.narrative_link.NarrativeIndexRetriever`, or the routed
multi-library one) with the leg switched on for its searches only. What comes out is what
the exit always returns — snippets of stored chunks, RESTRICTED ones dropped at both exits;
a synthesis node's text is never one. A pipeline without vectors (economy mode) is refused
(:func:`check_raptor`), as is a library without a tree (on its first search).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ragspine.errors import ConfigError
from ragspine.registries import CHUNK_STORES, RAPTOR_STORES
from ragspine.retrieval.chunking.chunk_store import DEFAULT_LIBRARY_ID, ChunkDatabase
from ragspine.retrieval.raptor.base import RaptorOptions, RaptorStore
from ragspine.retrieval.raptor.build import economy_refusal
from ragspine.retrieval.raptor.leg import RaptorLeg, attach_raptor
from ragspine.retrieval.request import Answer, RequestRetriever, SearchRequest, ask

if TYPE_CHECKING:
    from ragspine.config import Settings
    from ragspine.retrieval.filtering.automatic import FilterExtractor
    from ragspine.retrieval.link.narrative_link import NarrativeRetriever
    from ragspine.retrieval.pipeline import LibraryPipeline

__all__ = ["RaptorRetriever", "check_raptor", "make_raptor_retriever", "make_raptor_store", "raptor_leg", "raptor_store_kind"]

DEFAULT_TOP_K = 50


def raptor_store_kind(database: ChunkDatabase) -> str | None:
    """The :data:`~ragspine.registries.RAPTOR_STORES` name serving ``database`` (``None``: none)."""
    target = f"{type(database).__module__}:{type(database).__qualname__}"
    kind = next((name for name in CHUNK_STORES.names() if CHUNK_STORES[name].target == target), None)
    return kind if kind in RAPTOR_STORES.names() else None


def make_raptor_store(library_id: str = DEFAULT_LIBRARY_ID, *, database: ChunkDatabase | None = None, settings: Settings | None = None) -> RaptorStore:
    """The RAPTOR tree store of ``library_id`` in ``database`` (a chunk database: its
    :data:`~ragspine.registries.RAPTOR_STORES` line of the same name; default: the configured
    chunk store, opened here and closed with the tree store). No I/O."""
    owns = database is None
    if database is None:
        from ragspine.stores.registry import make_chunk_store

        database = make_chunk_store(settings=settings)
    kind = raptor_store_kind(database)
    if kind is None:
        raise ConfigError(f"no RAPTOR tree store for a chunk store of type {type(database).__name__}; they are {RAPTOR_STORES.choices()}")
    store: RaptorStore = RAPTOR_STORES.load(kind)(database, library_id=library_id, owns_db=owns)
    return store


def raptor_leg(pipeline: LibraryPipeline) -> RaptorLeg | None:
    """``pipeline``'s RAPTOR leg, if it has one."""
    leg = getattr(getattr(pipeline, "retriever", None), "raptor", None)
    return leg if isinstance(leg, RaptorLeg) else None


def check_raptor(pipelines: Mapping[str, Any], *, needs_leg: bool = False) -> None:
    """Refuse RAPTOR over a pipeline without vectors (economy mode): one line, naming the fix;
    with ``needs_leg``, also one that was given no RAPTOR leg (a chunk store without tree tables)."""
    for library_id, pipeline in pipelines.items():
        if getattr(pipeline.retriever, "dense", None) is None:
            raise economy_refusal(library_id, pipeline.mode.name)
        if needs_leg and raptor_leg(pipeline) is None:
            raise ConfigError(f"library {library_id!r}: its chunk store keeps no RAPTOR trees (they are kept by {RAPTOR_STORES.choices()})")


def _ensure_leg(pipeline: Any, trees: RaptorStore | None, options: RaptorOptions) -> RaptorLeg:
    leg = raptor_leg(pipeline)
    if leg is not None and trees is None:
        return leg
    if trees is None:
        trees = make_raptor_store(pipeline.library_id, database=getattr(pipeline.store, "db", None))
    made = attach_raptor(pipeline, trees, default=leg.default if leg is not None else False, top_nodes=options.top_nodes)
    assert made is not None  # check_raptor ran first
    return made


class RaptorRetriever(RequestRetriever):
    """``inner`` (a link exit) with RAPTOR's leg on in its searches (see the module docstring):
    it asks ``inner`` the request with ``raptor`` on."""

    def __init__(self, inner: Any, legs: Mapping[str, RaptorLeg]) -> None:
        self.inner = inner
        self.legs = dict(legs)

    def _answer(self, request: SearchRequest) -> Answer:
        return ask(self.inner, replace(request, raptor=True))


def make_raptor_retriever(
    index: LibraryPipeline | Mapping[str, LibraryPipeline], *, trees: RaptorStore | Mapping[str, RaptorStore] | None = None,
    options: RaptorOptions | None = None, retry_without_filters: bool = True, filter_extractor: FilterExtractor | None = None,
    inner: NarrativeRetriever | None = None,
) -> RaptorRetriever:
    """See the module docstring. ``index``: a :class:`~ragspine.retrieval.pipeline.LibraryPipeline`
    or ``{library_id: pipeline}``; ``trees``: a tree store (one library) or one per library;
    ``inner``: the exit to wrap (default: the plain exit over the pipelines)."""
    from ragspine.retrieval.link.narrative_link import NarrativeIndexRetriever
    from ragspine.retrieval.routing.multi_index import MultiIndexRetriever

    pipelines: dict[str, Any] = dict(index) if isinstance(index, Mapping) else {index.library_id: index}
    check_raptor(pipelines)
    options = options or RaptorOptions()
    per_library = trees if isinstance(trees, Mapping) else {lib: trees for lib in pipelines} if trees is not None else {}
    legs = {lib: _ensure_leg(p, per_library.get(lib), options) for lib, p in pipelines.items()}
    if inner is None:
        if len(pipelines) == 1:
            (pipeline,) = pipelines.values()
            inner = NarrativeIndexRetriever(pipeline, retry_without_filters=retry_without_filters, filter_extractor=filter_extractor)
        else:
            inner = MultiIndexRetriever(
                {lib: NarrativeIndexRetriever(p, retry_without_filters=False, share_expansions=False) for lib, p in pipelines.items()},
                filter_extractor=filter_extractor, retry_without_filters=retry_without_filters,
            )
    return RaptorRetriever(inner, legs)
