"""The result type that flows through the narrative pipeline."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ragspine.retrieval.chunking.chunk_store import StoredChunk


@dataclass(frozen=True)
class RetrievalResult:
    """A retrieved chunk with its scores (``{"bm25", "vector", "fused"}``, ``rerank`` after a
    model reranker) and library. ``prompt_text``: set only by a postprocessor (extractive
    compression) — what the prompt carries instead of the chunk's expansion; never evidence."""

    chunk: StoredChunk
    scores: dict[str, float] = field(default_factory=dict)
    library_id: str = ""
    prompt_text: str | None = None

    @property
    def chunk_id(self) -> str:
        return self.chunk.chunk_id

    @property
    def fused_score(self) -> float:
        return self.scores.get("fused", 0.0)

    def with_scores(self, **scores: float) -> "RetrievalResult":
        return replace(self, scores={**self.scores, **scores})
