"""``ServiceContext``: what every route and job needs — settings, the stack, the service
store, the job queue and the metrics — and the library → index mapping."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ragspine.config import Settings
from ragspine.retrieval.reasoning.options import ReasoningOptions
from ragspine.service.metrics import Metrics
from ragspine.service.store import Library, ServiceStore
from ragspine.stack import Stack


def catalog_id(tenant_id: str, name: str) -> str:
    """The chunk store's library id of a tenant's library: chunk rows of two tenants never collide."""
    return f"{tenant_id}/{name}"


def tenant_text(text: str, tenant_id: str) -> str:
    """``text`` as the tenant may read it: each ``<tenant>/<name>`` library id (the catalog's,
    :func:`catalog_id`) as ``<name>``, the tenant's name for it. Every error and job message a
    tenant gets passes through here, whatever layer wrote it (a store, the RAPTOR leg, a job)."""
    if not text or f"{tenant_id}/" not in text:
        return text
    return re.sub(rf"(?<![A-Za-z0-9._/-]){re.escape(tenant_id)}/(?=[A-Za-z0-9._-])", "", text)


@dataclass
class ServiceContext:
    settings: Settings
    stack: Stack
    store: ServiceStore
    metrics: Metrics | None = None
    queue: Any = None  # a JobQueue, set once the context exists
    watch: Any = None  # the JobWatch sweeping dead jobs and lost messages, once started
    owns_stack: bool = True

    @classmethod
    def open(cls, settings: Settings, *, stack: Stack | None = None, metrics: Metrics | None = None) -> ServiceContext:
        owns = stack is None
        stack = stack or Stack(settings)
        if metrics is not None:
            stack.observe_llm(metrics)  # LLM calls, failures, latency and malformed answers
        try:
            store = ServiceStore.for_stack(stack)
        except Exception:
            if owns:
                stack.close()
            raise
        return cls(settings, stack, store, metrics, owns_stack=owns)

    def index(self, library: Library, mode: str | None = None) -> Any:
        """The library's index in ``mode`` (default: the library's own mode)."""
        recipe = library.recipe(self.stack.profile)  # its choices over the server's
        pipeline = self.stack.pipeline(library.library_id, recipe.override(mode=mode) if mode else recipe)
        if self.metrics is not None and pipeline.rerank_observer is None:
            histogram = self.metrics.rerank_latency
            pipeline.rerank_observer = lambda reranker, seconds: histogram.labels(getattr(reranker, "name", type(reranker).__name__)).observe(seconds)
        return pipeline

    def reasoning(self, library: Library, request: Mapping[str, Any] | None = None) -> ReasoningOptions:
        """The library's query-time reasoning: each of the ``request``'s choices
        (:meth:`ReasoningOptions.override`'s keywords), else the library's, else the server's
        (checked: an unknown name or a fan-out over the server's is a ``ConfigError``)."""
        chosen = {key: value for key, value in library.reasoning.items() if value is not None}
        chosen.update({key: value for key, value in (request or {}).items() if value is not None})
        return self.stack.reasoning_options(**chosen)

    def raptor(self, library: Library, request: bool | None = None) -> bool:
        """Whether a search of ``library`` runs RAPTOR: the request's choice, else the library's, else the server's."""
        for choice in (request, library.raptor):
            if choice is not None:
                return bool(choice)
        return self.settings.raptor.enabled

    def close(self) -> None:
        if self.watch is not None:
            self.watch.stop()
        if self.queue is not None:
            self.queue.close()
        self.store.close()
        if self.owns_stack:
            self.stack.close()
