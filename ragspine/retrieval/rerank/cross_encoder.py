"""``RAGSPINE_RERANKER=cross_encoder`` (``ce``; ``auto``): a local ONNX cross-encoder.

Each (query, candidate) pair is tokenized as one BERT pair (``[CLS] query [SEP] passage
[SEP]``, segment ids from the tokenizer), batched, and the graph's relevance logit is the
``rerank`` score (:class:`~ragspine.retrieval.rerank.onnx_model.OnnxTextModel`). The model
directory is ``RAGSPINE_CROSS_ENCODER_DIR`` (``model.onnx`` + ``tokenizer.json``, e.g. an
export of ``cross-encoder/ms-marco-MiniLM-L-6-v2``: see ``docs/capabilities/rerankers.md``). No
cross-encoder ships with RAGSpine: ``cross_encoder`` without a directory is refused at
start; ``auto`` is the cross-encoder when a directory is configured, else no reranker.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Sequence

from ragspine.errors import ConfigError
from ragspine.retrieval.rerank.onnx_model import DEFAULT_MAX_TOKENS, OnnxTextModel
from ragspine.retrieval.rerank.scored import ScoreReranker

if TYPE_CHECKING:
    from ragspine.config import Settings

NO_MODEL = (
    "RAGSPINE_RERANKER=cross_encoder needs a model: set RAGSPINE_CROSS_ENCODER_DIR to a directory with model.onnx "
    "and tokenizer.json (docs/capabilities/rerankers.md), or choose RAGSPINE_RERANKER=auto to rerank only when one is configured"
)


class CrossEncoderScorer:
    """A :class:`~ragspine.retrieval.rerank.scored.PairScorer` over an ONNX cross-encoder."""

    def __init__(self, model: OnnxTextModel) -> None:
        self.model = model

    def __repr__(self) -> str:
        return f"CrossEncoderScorer({self.model!r})"

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        scores: list[float] = self.model.pair_logits(query, texts).tolist()
        return scores


def _model_dir(model_dir: str | os.PathLike[str] | None, settings: Settings | None) -> str | None:
    if model_dir is not None:
        return str(model_dir)
    return settings.ranking.cross_encoder_dir if settings is not None else None


def cross_encoder_reranker(
    *, model_dir: str | os.PathLike[str] | None = None, settings: Settings | None = None, max_tokens: int = DEFAULT_MAX_TOKENS,
    batch_size: int = 32, threads: int | None = None,
) -> ScoreReranker:
    """The registry's ``cross_encoder`` factory (see the module docstring); the directory is
    ``model_dir``, else ``settings.ranking.cross_encoder_dir`` (the caller's; none given: no directory,
    refused)."""
    path = _model_dir(model_dir, settings)
    if not path:
        raise ConfigError(NO_MODEL)
    model = OnnxTextModel(path, max_tokens=max_tokens, batch_size=batch_size, threads=threads)
    return ScoreReranker(CrossEncoderScorer(model), name="cross_encoder")


def auto_reranker(
    *, model_dir: str | os.PathLike[str] | None = None, settings: Settings | None = None, max_tokens: int = DEFAULT_MAX_TOKENS,
    batch_size: int = 32, threads: int | None = None,
) -> ScoreReranker | None:
    """``RAGSPINE_RERANKER=auto``: the cross-encoder when a model directory is given (``model_dir``,
    else ``settings.ranking.cross_encoder_dir``), else none."""
    path = _model_dir(model_dir, settings)
    if not path:
        return None
    return cross_encoder_reranker(model_dir=path, max_tokens=max_tokens, batch_size=batch_size, threads=threads)
