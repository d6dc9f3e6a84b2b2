"""``SemanticChunker`` (``RAGSPINE_CHUNKER=semantic``): sentences grouped until the topic moves.

Contract:

* The units are the document's sentences (:func:`~ragspine.retrieval.chunking.units.
  sentence_pieces`, as for the sentence-window chunker), embedded in one call of
  ``embedding_backend.embed_texts`` (an :class:`~ragspine.retrieval.vector.embedding.
  EmbeddingBackend`).
* A boundary follows sentence ``j`` when the cosine *distance* ``1 - cos(v_j, v_j+1)`` is at
  or above the ``breakpoint_percentile``-th percentile (linear interpolation) of the
  document's adjacent distances, and above their minimum — LlamaIndex's
  ``SemanticSplitterNodeParser`` rule, made to keep ties at the top (two equal drops both cut)
  and to cut nothing when every distance is the same; equivalently the similarity falls among
  the lowest ``100 - breakpoint_percentile`` % of the document's. A zero vector says nothing
  about the topic: its similarity counts as 1. Deterministic for a deterministic model.
* A chunk is a run of whole sentences, from its first one's start to its last one's end, and
  never longer than ``max_chars``: a run that would pass the cap is cut at the last sentence
  end that keeps it under. Chunks do not overlap (``overlap_chars`` is validated, and unused).
* Without a model the constructor raises :class:`~ragspine.errors.ConfigError` naming the fix;
  so does a document the model cannot read (the dense gate's rule: the English MiniLM and a
  mostly Chinese or Japanese text) — it never falls back to another chunking.
"""

from __future__ import annotations

from typing import Iterator, Sequence

import numpy as np

from ragspine.errors import BackendError, ConfigError
from ragspine.retrieval.chunking.assemble import Doc, Piece, SpanChunker
from ragspine.retrieval.chunking.chunking import DEFAULT_CHUNK_CHARS, DEFAULT_OVERLAP_CHARS
from ragspine.retrieval.chunking.units import sentence_pieces
from ragspine.retrieval.vector.embedding import EmbeddingBackend, model_namespace
from ragspine.retrieval.vector.gate import DenseGate

NO_MODEL = (
    "RAGSPINE_CHUNKER=semantic needs an embedding model: set RAGSPINE_EMBEDDING=onnx (the [embed-onnx] extra) "
    "with a hybrid retrieval mode, or choose another chunker such as layout"
)


def unreadable(backend: object) -> str:
    return (
        f"RAGSPINE_CHUNKER=semantic: the embedding model {model_namespace(backend)} cannot read this document "
        "(mostly CJK text, or word pieces it does not know), so its similarities would be noise: "
        "give the library a model that reads it (RAGSPINE_EMBEDDING=e5) or choose another chunker (layout)"
    )


class SemanticChunker(SpanChunker):
    """See the module docstring."""

    name = "semantic"

    def __init__(
        self,
        *,
        max_chars: int = DEFAULT_CHUNK_CHARS,
        overlap_chars: int = DEFAULT_OVERLAP_CHARS,
        embedding_backend: EmbeddingBackend | None = None,
        breakpoint_percentile: float = 90,
    ) -> None:
        super().__init__(max_chars=max_chars, overlap_chars=overlap_chars)
        if embedding_backend is None or not isinstance(embedding_backend, EmbeddingBackend):
            raise ConfigError(NO_MODEL)
        if not 0 <= breakpoint_percentile <= 100:
            raise ValueError(f"breakpoint_percentile must be within 0..100, got {breakpoint_percentile}")
        self.embedding_backend = embedding_backend
        self.breakpoint_percentile = breakpoint_percentile

    def __repr__(self) -> str:
        return f"{super().__repr__()[:-1]}, breakpoint_percentile={self.breakpoint_percentile})"

    def pieces(self, doc: Doc) -> Iterator[Piece]:
        sentences = sentence_pieces(doc.text, self.max_chars)
        if not sentences:
            return
        if not DenseGate(self.embedding_backend).readable([doc.text])[0]:
            raise ConfigError(unreadable(self.embedding_backend))
        vectors = self.embedding_backend.embed_texts([doc.text[s:e] for s, e in sentences])
        cut_after = breakpoints(adjacent_similarities(vectors, len(sentences)), self.breakpoint_percentile)
        first = 0  # the current chunk's first sentence
        for j in range(1, len(sentences)):
            if cut_after[j - 1] or sentences[j][1] - sentences[first][0] > self.max_chars:
                yield sentences[first][0], sentences[j - 1][1], {}
                first = j
        yield sentences[first][0], sentences[-1][1], {}


def adjacent_similarities(vectors: Sequence[Sequence[float]] | np.ndarray, expected: int) -> np.ndarray:
    """``cos(v_j, v_j+1)`` for each adjacent pair (1 where a vector is zero)."""
    matrix = np.asarray(vectors, dtype=np.float64)
    if matrix.ndim != 2 or matrix.shape[0] != expected:
        raise BackendError(f"the embedding backend returned {matrix.shape[0] if matrix.ndim else 0} vectors for {expected} sentences")
    norms = np.linalg.norm(matrix, axis=1)
    dots = np.einsum("ij,ij->i", matrix[:-1], matrix[1:])
    scale = norms[:-1] * norms[1:]
    return np.where(scale > 0, dots / np.where(scale > 0, scale, 1.0), 1.0)


def breakpoints(similarities: np.ndarray, percentile: float) -> list[bool]:
    """Whether a boundary follows each sentence (see the module docstring)."""
    if similarities.size == 0:
        return []
    distances = 1.0 - similarities
    threshold = float(np.percentile(distances, percentile))
    return [bool(d) for d in (distances >= threshold) & (distances > distances.min())]
