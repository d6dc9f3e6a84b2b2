"""``VisualSearch``: the visual seam as the rest of the stack sees it — hints for a question over
libraries, and the places an answer takes them (:func:`gated_hints`, :func:`answer_with_hints`).

Built from settings (:meth:`VisualSearch.from_settings`, or once per stack:
:func:`visual_search_for`): ``None`` when ``RAGSPINE_VISUAL_EMBEDDER`` is ``none`` (the default),
and then nothing about an answer changes (no key, no byte). Otherwise each library's saved
:class:`~ragspine.retrieval.visual.index.VisualIndex` is loaded on first use and again when its
``index.json`` changes (a rebuild) or goes (a deleted library); a library without one gives no
hint (``ragspine visual build`` makes it).

Who gets a hint (``ragspine ask``, ``ragspine query --visual``, ``POST /v1/answer``): the security
gate decides first — a question it refuses is never embedded — and a refused question, one with
a refused sub-query, or one nothing answered (no source: no fact, no cited snippet) gets none;
an answer never points at a page it could not stand on.
"""

from __future__ import annotations

import os
import threading
import weakref
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable, Sequence

from ragspine.retrieval.visual.base import VisualEmbedder, VisualHint, make_visual_embedder
from ragspine.retrieval.visual.index import DEFAULT_TOP_K, VisualIndex, visual_dir
from ragspine.security.principals import ANONYMOUS, OPEN, Viewer

if TYPE_CHECKING:
    from ragspine.agent.base import AgentAnswer, QueryGate
    from ragspine.config import Settings
    from ragspine.retrieval.chunking.chunk_store import LibraryCatalog

__all__ = ["VisualSearch", "answer_with_hints", "gated_hints", "visual_search_for", "with_visual_hints"]


def _stamp(where: str) -> tuple[int, int] | None:
    """What changes when ``index.json`` in ``where`` is rewritten (``None``: there is none)."""
    try:
        st = os.stat(os.path.join(where, "index.json"))
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


class VisualSearch:
    """See the module docstring. Thread-safe: the service shares one per stack."""

    def __init__(self, embedder: VisualEmbedder, catalog: LibraryCatalog) -> None:
        self.embedder = embedder
        self.catalog = catalog
        self._indexes: dict[str, tuple[tuple[str, tuple[int, int] | None], VisualIndex | None]] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: Settings, catalog: LibraryCatalog) -> VisualSearch | None:
        embedder = make_visual_embedder(settings.visual_embedder, settings=settings)
        return None if embedder is None else cls(embedder, catalog)

    def index(self, library_id: str) -> VisualIndex | None:
        """``library_id``'s saved index (``None``: none), as its files are now."""
        where = visual_dir(self.catalog.chunk_store(library_id))
        if where is None:
            return None
        key = (where, _stamp(where))
        with self._lock:
            held = self._indexes.get(library_id)
            if held is not None and held[0] == key:
                return held[1]
        index = VisualIndex.load(where) if key[1] is not None else None
        with self._lock:
            self._indexes[library_id] = (key, index)
        return index

    def hints(self, query: str, library_ids: Sequence[str], *, top_k: int = DEFAULT_TOP_K, viewer: Viewer = ANONYMOUS) -> list[VisualHint]:
        """The best pages over ``library_ids`` (each library's own best, merged by score) of the
        documents ``viewer`` may read (default: a caller who is no principal — documents without an ACL)."""
        found: list[VisualHint] = []
        for library_id in dict.fromkeys(library_ids):
            index = self.index(library_id)
            if index is not None:
                store = self.catalog.chunk_store(library_id)
                found += index.search(self.embedder, query, top_k=top_k, store=store, hidden=_hidden_by_acl(store, viewer))
        return sorted(found, key=lambda h: -h.score)[:top_k]


def _hidden_by_acl(store: Any, viewer: Viewer) -> Callable[[str], bool] | None:
    """The documents of ``store`` that ``viewer`` may not read (one read of its ACLs), ``None``: none."""
    from ragspine.retrieval.chunking.chunk_store import DocumentAcls

    if viewer.everything or not isinstance(store, DocumentAcls) or store.acl_seq() == 0:
        return None
    acls = store.document_acls()[1]
    return lambda doc_id: not viewer.sees(acls.get(doc_id, OPEN))


_SEARCHES: weakref.WeakKeyDictionary[Any, tuple[VisualSearch | None]] = weakref.WeakKeyDictionary()
_SEARCHES_LOCK = threading.Lock()


def visual_search_for(stack: Any) -> VisualSearch | None:
    """The :class:`VisualSearch` of ``stack`` (anything with ``settings`` and ``db``, as
    :class:`ragspine.stack.Stack`), built once per stack — its embedder loads its model once;
    ``None`` when the seam is off (then nothing is imported or built)."""
    if stack.settings.visual_embedder == "none":
        return None
    with _SEARCHES_LOCK:
        held = _SEARCHES.get(stack)
        if held is None:
            held = _SEARCHES[stack] = (VisualSearch.from_settings(stack.settings, stack.db),)
        return held[0]


def gated_hints(search: VisualSearch | None, question: str, library_ids: Sequence[str], *, gate: QueryGate | None,
                top_k: int = DEFAULT_TOP_K, viewer: Viewer = ANONYMOUS) -> list[VisualHint] | None:
    """The hints for ``question`` over those of ``library_ids`` that have a visual index;
    ``None`` when none is due: the seam is off (``search`` is ``None``), the security ``gate``
    refuses ``question`` (asked first: a refused text is never embedded), or no library has an index."""
    if search is None:
        return None
    if gate is not None and not gate.check(question).allowed:
        return None
    indexed = [lib for lib in dict.fromkeys(library_ids) if search.index(lib) is not None]
    if not indexed:
        return None
    return search.hints(question, indexed, top_k=top_k, viewer=viewer)


def answer_with_hints(search: VisualSearch | None, answer: AgentAnswer, library_ids: Sequence[str], *,
                      gate: QueryGate | None, top_k: int = DEFAULT_TOP_K, viewer: Viewer = ANONYMOUS) -> AgentAnswer:
    """``answer`` with the hints for its question over ``library_ids`` (:func:`gated_hints`) — or
    ``answer`` itself, unchanged, when none is due: the seam is off, the question or one of its
    sub-queries was refused, nothing answered it (no source), or no library has a visual index."""
    if search is None or answer.refusal is not None or answer.refused or not answer.sources:
        return answer
    return with_visual_hints(answer, gated_hints(search, answer.question, library_ids, gate=gate, top_k=top_k, viewer=viewer))


def with_visual_hints(answer: AgentAnswer, hints: Sequence[VisualHint] | None) -> AgentAnswer:
    """``answer`` carrying ``hints`` beside its sources (``visual_hints``) — never among them, never
    cited. ``None`` (the seam off) and a refused question return ``answer`` itself, unchanged."""
    if hints is None or answer.refusal is not None:
        return answer
    carried: tuple[dict[str, Any], ...] = tuple(h.to_dict() for h in hints)
    return replace(answer, visual_hints=carried)
