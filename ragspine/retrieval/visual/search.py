"""``VisualSearch``: the visual seam as the rest of the stack sees it — hints for a question over
libraries, and the one place an answer takes them (:func:`with_visual_hints`).

Built from settings (:meth:`VisualSearch.from_settings`): ``None`` when
``RAGSPINE_VISUAL_EMBEDDER`` is ``none`` (the default), and then nothing about an answer changes
(no key, no byte). Otherwise each library's saved :class:`~ragspine.retrieval.visual.index.VisualIndex`
is loaded on first use; a library without one gives no hint (``ragspine visual build`` makes it).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Sequence

from ragspine.retrieval.visual.base import VisualEmbedder, VisualHint, make_visual_embedder
from ragspine.retrieval.visual.index import DEFAULT_TOP_K, VisualIndex, visual_dir

if TYPE_CHECKING:
    from ragspine.agent.base import AgentAnswer
    from ragspine.config import Settings
    from ragspine.retrieval.chunking.chunk_store import LibraryCatalog


class VisualSearch:
    """See the module docstring."""

    def __init__(self, embedder: VisualEmbedder, catalog: LibraryCatalog) -> None:
        self.embedder = embedder
        self.catalog = catalog
        self._indexes: dict[str, VisualIndex | None] = {}

    @classmethod
    def from_settings(cls, settings: Settings, catalog: LibraryCatalog) -> VisualSearch | None:
        embedder = make_visual_embedder(settings.visual_embedder, settings=settings)
        return None if embedder is None else cls(embedder, catalog)

    def index(self, library_id: str) -> VisualIndex | None:
        if library_id not in self._indexes:
            where = visual_dir(self.catalog.chunk_store(library_id))
            self._indexes[library_id] = VisualIndex.load(where) if where else None
        return self._indexes[library_id]

    def hints(self, query: str, library_ids: Sequence[str], *, top_k: int = DEFAULT_TOP_K) -> list[VisualHint]:
        """The best pages over ``library_ids`` (each library's own best, merged by score)."""
        found: list[VisualHint] = []
        for library_id in dict.fromkeys(library_ids):
            index = self.index(library_id)
            if index is not None:
                found += index.search(self.embedder, query, top_k=top_k, store=self.catalog.chunk_store(library_id))
        return sorted(found, key=lambda h: -h.score)[:top_k]


def with_visual_hints(answer: AgentAnswer, hints: Sequence[VisualHint] | None) -> AgentAnswer:
    """``answer`` carrying ``hints`` beside its sources (``visual_hints``) — never among them, never
    cited. ``None`` (the seam off) and a refused question return ``answer`` itself, unchanged."""
    if hints is None or answer.refusal is not None:
        return answer
    carried: tuple[dict[str, Any], ...] = tuple(h.to_dict() for h in hints)
    return replace(answer, visual_hints=carried)
