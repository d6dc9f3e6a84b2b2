"""Retrieval modes (``RAGSPINE_RETRIEVAL_MODE``): which legs a search runs.

=================  ==============================================================
``auto``           hybrid when an embedding backend is configured, else BM25 only
``hybrid``         BM25 + dense, fused by RRF (needs an embedding backend)
``vector``         dense only (BM25 stands in for a query the model cannot read)
``economy``        BM25 only; **no embedding backend and no vector store are built**
``bm25``/``lexical``  aliases of ``economy``
=================  ==============================================================
"""

from __future__ import annotations

from dataclasses import dataclass

from ragspine.errors import ConfigError

_CANONICAL = {
    "auto": "auto",
    "hybrid": "hybrid",
    "vector": "vector",
    "economy": "economy",
    "bm25": "economy",
    "lexical": "economy",
}


@dataclass(frozen=True)
class RetrievalMode:
    name: str  # canonical: auto | hybrid | vector | economy
    requested: str

    @property
    def uses_embeddings(self) -> bool:
        """Whether assembly may build an embedding backend and a vector store."""
        return self.name != "economy"

    @property
    def requires_embeddings(self) -> bool:
        return self.name in ("hybrid", "vector")

    def legs(self, has_backend: bool) -> tuple[str, ...]:
        if self.name == "economy" or not has_backend:
            return ("bm25",)
        if self.name == "vector":
            return ("vector",)
        return ("bm25", "vector")


RETRIEVAL_MODES = tuple(_CANONICAL)


def make_retrieval_mode(spec: str | RetrievalMode = "auto") -> RetrievalMode:
    """Resolve a mode name (the caller's ``RAGSPINE_RETRIEVAL_MODE``; default ``auto``, the seed's)."""
    if isinstance(spec, RetrievalMode):
        return spec
    name = str(spec).strip().lower()
    if name not in _CANONICAL:
        raise ConfigError(f"unknown retrieval mode {spec!r}; choose one of {', '.join(RETRIEVAL_MODES)}")
    return RetrievalMode(_CANONICAL[name], name)
