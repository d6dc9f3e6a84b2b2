"""The link exits over a set of pipelines: one library's, or the routed, fused multi-library
one, wrapped in query-time reasoning where a library's options or the security gate ask for it
(:class:`Exits`). Pure wiring of :class:`~ragspine.assembly.resources.Resources`' parts; each
reasoning option set's parts (transform, decomposer, classifier, rewrite) are built once.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Mapping

from ragspine.assembly.resources import Resources
from ragspine.registries import LIBRARY_ROUTERS
from ragspine.retrieval.link.narrative_link import NarrativeIndexRetriever, NarrativeRetriever
from ragspine.retrieval.pipeline import LibraryPipeline
from ragspine.retrieval.raptor.base import raptor_requested
from ragspine.retrieval.raptor.retriever import check_raptor
from ragspine.retrieval.reasoning import ReasoningObserver, ReasoningOptions, ReasoningRetriever
from ragspine.retrieval.reasoning.build import reasoning_parts, uses_llm
from ragspine.retrieval.reasoning.per_library import LibraryReasoner, PerLibraryReasoning
from ragspine.retrieval.routing.multi_index import MultiIndexRetriever
from ragspine.retrieval.routing.routers import make_library_router


class Exits:
    """Builds the exits of :meth:`~ragspine.stack.Stack.retriever_for` from ``res``'s parts."""

    def __init__(self, res: Resources) -> None:
        self.res = res
        self._lock = threading.RLock()
        self._reasoning: dict[ReasoningOptions, dict[str, Any]] = {}  # each option set's parts, built once

    def retriever_for(
        self,
        pipelines: dict[str, LibraryPipeline],
        *,
        descriptions: dict[str, str] | None = None,
        retry_without_filters: bool = True,
        reasoning: ReasoningOptions | Mapping[str, ReasoningOptions] | None = None,
        raptor: bool | None = None,
    ) -> NarrativeRetriever:
        """The link exit over ``pipelines`` (library id → pipeline): one library's exit, or the
        routed, fused multi-library one (the retry without filters then applies to the fused
        answer, so one library's unfiltered fallback never sits next to another's matches).
        With a security deny list or any query-time ``reasoning`` (default: the configured
        options; a mapping gives each library its own, the configured ones where it has none)
        the exit is wrapped in a :class:`ReasoningRetriever` — or, when the libraries' options
        differ, each library reasons for itself (:class:`PerLibraryReasoning`); with neither
        it is the plain exit, byte for byte. ``raptor``: the request's RAPTOR choice (``None``: each
        library's own), checked here — RAPTOR without vectors is refused."""
        for library_id, pipeline in pipelines.items():
            default = pipeline.raptor_default
            if raptor_requested(self.res.settings.raptor.enabled if default is None else default, raptor):
                check_raptor({library_id: pipeline}, needs_leg=True)  # RAPTOR without vectors is refused, never silently left out
        per_library = self._options_per_library(pipelines, reasoning)
        gate = self.res.security_gate
        if len(set(per_library.values())) > 1:
            return self._per_library_reasoning(pipelines, descriptions, retry_without_filters, per_library)
        options = next(iter(per_library.values()), None) or self.reasoning_options()
        if not options.active and gate is None:
            return self._exit_for(pipelines, descriptions, retry_without_filters)
        owns_retry = options.decompose != "none" or options.adaptive != "none" or options.corrective
        inner = self._exit_for(pipelines, descriptions, retry_without_filters and not owns_retry)
        return self._reasoner(inner, options, retry_without_filters=retry_without_filters, owns_retry=owns_retry)

    def _options_per_library(
        self, pipelines: Mapping[str, LibraryPipeline], reasoning: ReasoningOptions | Mapping[str, ReasoningOptions] | None,
    ) -> dict[str, ReasoningOptions]:
        if isinstance(reasoning, ReasoningOptions):
            return {lib: reasoning for lib in pipelines}
        configured = self.reasoning_options()
        return {lib: (reasoning or {}).get(lib, configured) for lib in pipelines}

    def _reasoner(self, inner: NarrativeRetriever, options: ReasoningOptions, *, retry_without_filters: bool,
                  owns_retry: bool) -> ReasoningRetriever:
        return ReasoningRetriever(
            inner, gate=self.res.security_gate, retry_without_filters=retry_without_filters, owns_retry=owns_retry, rrf_k=self.res.settings.ranking.rrf_k,
            observer=self.res._llm_observer if isinstance(self.res._llm_observer, ReasoningObserver) else None,
            **self._reasoning_parts(options),
        )

    def _per_library_reasoning(self, pipelines: dict[str, LibraryPipeline], descriptions: dict[str, str] | None,
                               retry_without_filters: bool, per_library: Mapping[str, ReasoningOptions]) -> NarrativeRetriever:
        """Libraries whose reasoning differs: each reasons over its own answer, the question is
        gated once and filters are dropped once, on the fused answer (``per_library.py``)."""
        def own(library_id: str, exit_: NarrativeRetriever) -> NarrativeRetriever:
            options = per_library[library_id]
            if not options.active:
                return exit_
            return LibraryReasoner(library_id, self._reasoner(exit_, options, retry_without_filters=False, owns_retry=False))

        fused = self._exit_for(pipelines, descriptions, retry_without_filters, wrap=own)
        return PerLibraryReasoning(self._reasoner(fused, ReasoningOptions(), retry_without_filters=retry_without_filters, owns_retry=False))

    def reasoning_options(self, **overrides: Any) -> ReasoningOptions:
        """The configured query-time reasoning with a request's ``overrides`` (checked)."""
        return ReasoningOptions.from_settings(self.res.settings).override(**overrides)

    def check_reasoning(self, options: ReasoningOptions) -> None:
        """Build ``options``' parts now: a ``ConfigError`` when one needs a model this stack lacks."""
        self._reasoning_parts(options)

    def _reasoning_parts(self, options: ReasoningOptions) -> dict[str, Any]:
        """The transform, decomposer, classifier and rewrite of ``options`` (built once each)."""
        with self._lock:
            if options not in self._reasoning:
                self._reasoning[options] = reasoning_parts(options, self.res.settings, self.res.provider if uses_llm(options) else None)
            return self._reasoning[options]

    def _exit_for(self, pipelines: dict[str, LibraryPipeline], descriptions: dict[str, str] | None,
                  retry_without_filters: bool, *,
                  wrap: Callable[[str, NarrativeRetriever], NarrativeRetriever] | None = None) -> NarrativeRetriever:
        """One library's exit, or the routed multi-library one (``wrap``: each library's retriever in it)."""
        extractor = self.res.filter_extractor
        if len(pipelines) == 1:
            (pipeline,) = pipelines.values()
            return NarrativeIndexRetriever(pipeline, retry_without_filters=retry_without_filters, filter_extractor=extractor)
        router = self.res.settings.library_router
        return MultiIndexRetriever(
            {lib: (wrap or _same)(lib, NarrativeIndexRetriever(p, retry_without_filters=False, share_expansions=False))
             for lib, p in pipelines.items()},
            router=make_library_router(router, **self.res.needs(LIBRARY_ROUTERS, router)),
            filter_extractor=extractor,
            descriptions=descriptions,
            rrf_k=self.res.settings.ranking.rrf_k,
            retry_without_filters=retry_without_filters,
            library_fusion=self.res.settings.library_fusion,
        )


def _same(_library_id: str, retriever: NarrativeRetriever) -> NarrativeRetriever:
    return retriever
