"""The visual seam's role and its one output: ``VisualEmbedder`` and ``VisualHint``.

A report dense with charts loses its layout when OCR or a text layer turns it into text; a
*visual* retriever reads the page as a picture instead (ColPali: late interaction, a query's
token vectors against a page's patch vectors, scored by the ColBERT path's MaxSim,
:func:`ragspine.retrieval.rerank.maxsim.maxsim_many`).

* :class:`VisualEmbedder` — ``embed_pages(images)``: per page image a ``(patches, dim)`` matrix;
  ``embed_query(text)``: a ``(tokens, dim)`` matrix; both float32, rows L2-normalized (a zero
  row, a token the model gives no vector, scores 0). ``fingerprint`` names the model, so an
  index built by another model is never searched with this one.
* :class:`VisualHint` — what a visual search returns: a page of a document, its score and where
  to look (``<file>#page=N``). ``is_visual`` is always true: a hint points a person (or the
  agent's caller) at a page; it is **never a snippet and never a citation** — no text of the
  page is in it, and nothing in an answer's ``text`` may rest on it.

Off by default (``RAGSPINE_VISUAL_EMBEDDER=none``): then nothing is built, rendered or
searched, and answers are byte for byte what they were without the seam.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, Sequence, runtime_checkable

if TYPE_CHECKING:
    import numpy as np


@runtime_checkable
class VisualEmbedder(Protocol):
    """Page images to patch matrices, a query to a token matrix (see the module docstring)."""

    def fingerprint(self) -> str:
        """Names the model (weights, preprocessing): an index records it and refuses another."""
        ...

    def embed_pages(self, images: Sequence[Any]) -> list[np.ndarray]:
        """Per ``PIL.Image`` page, ``(patches, dim)`` float32, rows L2-normalized."""
        ...

    def embed_query(self, query: str) -> np.ndarray:
        """``(tokens, dim)`` float32, rows L2-normalized (zero rows allowed)."""
        ...


@dataclass(frozen=True)
class VisualHint:
    """A page a visual search found (see the module docstring): a hint, never evidence."""

    doc_id: str
    title: str
    library_id: str
    page: int  # 1-based
    score: float  # MaxSim of the query's tokens against the page's patches
    source_locator: str  # ``<file>#page=N``

    @property
    def is_visual(self) -> bool:
        return True

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "visual_hint", "is_visual": True, "doc_id": self.doc_id, "title": self.title, "library_id": self.library_id,
                "page": self.page, "source_locator": self.source_locator, "score": round(self.score, 6)}


def page_locator(source: str, page: int) -> str:
    """``report.pdf#page=3``: the PDF open parameter every viewer reads."""
    return f"{source}#page={page}"


def make_visual_embedder(spec: str = "none", **options: Any) -> VisualEmbedder | None:
    """The visual embedder named ``spec`` (``RAGSPINE_VISUAL_EMBEDDER``; ``none``: ``None``, the
    seam is off). ``options`` go to its factory (``settings=``, ``model_dir=``)."""
    from ragspine.registries import VISUAL_EMBEDDERS

    embedder: VisualEmbedder | None = VISUAL_EMBEDDERS.build(spec, **options)
    return embedder
