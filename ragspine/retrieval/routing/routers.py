"""Library routers: which libraries a query should search.

``LibraryRouter.route(query, libraries) -> list[str]`` returns library ids, best first.
``make_library_router(spec)`` (names from the registry): ``none`` → ``None`` (search every
library), ``keyword`` → :class:`KeywordLibraryRouter` (BM25 of the query against library
descriptions), ``llm`` → :class:`LLMLibraryRouter` (opt-in, needs a provider). A router can only choose among the
libraries it is shown; an empty or failed answer means "search them all". An LLM answer
that is not a JSON list of shown library ids is reported as malformed (metrics) and searches
them all too.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any, Sequence

from ragspine.errors import ConfigError
from ragspine.llm.observe import report_malformed
from ragspine.retrieval.chunking.chunk_store import LibraryInfo
from ragspine.retrieval.lexical.bm25 import bm25_scores
from ragspine.retrieval.lexical.tokenizer import tokenize
from ragspine.retrieval.routing.base import LibraryRouter

if TYPE_CHECKING:
    from ragspine.llm.base import LLMProvider

__all__ = ["KeywordLibraryRouter", "LLMLibraryRouter", "LibraryRouter", "make_library_router"]


class KeywordLibraryRouter:
    """Deterministic: BM25 of the query over each library's ``library_id + description``.

    Chooses every library scoring at least ``relative_threshold`` × the best score; no
    overlap at all → ``[]`` (the caller then searches every library).
    """

    def __init__(self, *, relative_threshold: float = 0.5) -> None:
        if not 0.0 < relative_threshold <= 1.0:
            raise ConfigError("relative_threshold must be within (0, 1]")
        self.relative_threshold = relative_threshold

    def route(self, query: str, libraries: Sequence[LibraryInfo]) -> list[str]:
        if not libraries:
            return []
        docs = [tokenize(f"{lib.library_id.replace('_', ' ')} {lib.description}") for lib in libraries]
        scores = bm25_scores(tokenize(query), docs)
        best = max(scores, default=0.0)
        if best <= 0.0:
            return []
        ranked = sorted(zip(scores, [lib.library_id for lib in libraries], strict=True), key=lambda s: (-s[0], s[1]))
        return [lib for score, lib in ranked if score >= best * self.relative_threshold]


class LLMLibraryRouter:
    """Asks an LLM provider (``chat(messages) -> str``) for a JSON list of library ids."""

    def __init__(self, provider: Any) -> None:
        if provider is None:
            raise ConfigError("the llm library router needs an LLM provider")
        self.provider = provider

    def route(self, query: str, libraries: Sequence[LibraryInfo]) -> list[str]:
        lines = [f"- {lib.library_id}: {lib.description}" for lib in libraries]
        prompt = (
            "Which libraries can answer the question? Reply with a JSON list of library ids.\n"
            f"Libraries:\n{chr(10).join(lines)}\n\nQuestion: {query}"
        )
        answer = self.provider.chat([{"role": "user", "content": prompt}])
        match = re.search(r"\[.*?\]", answer if isinstance(answer, str) else "", re.S)
        try:
            ids = json.loads(match.group()) if match else None
        except ValueError:
            ids = None
        known = {lib.library_id for lib in libraries}
        chosen = [i for i in ids if isinstance(i, str) and i in known] if isinstance(ids, list) else []
        if ids is None or (ids and not chosen):  # not a list, or naming no library it was shown
            report_malformed(self.provider, "router", answer)
        return chosen


def make_library_router(spec: str = "none", *, provider: LLMProvider | None = None) -> LibraryRouter | None:
    """The router named ``spec`` (the caller's ``RAGSPINE_LIBRARY_ROUTER``; default ``none``, the
    seed's); ``None`` for ``none`` (search every library). ``llm`` needs ``provider``."""
    from ragspine.registries import LIBRARY_ROUTERS

    name = LIBRARY_ROUTERS.canonical(spec)
    router: LibraryRouter | None = LIBRARY_ROUTERS.build(name, provider) if name == "llm" else LIBRARY_ROUTERS.build(name)
    return router
