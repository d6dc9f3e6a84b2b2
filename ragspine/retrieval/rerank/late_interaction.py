"""``RAGSPINE_RERANKER=colbert``: late-interaction reranking, MaxSim over token vectors.

The query and each candidate are encoded to per-token vectors (the ``last_hidden_state`` of an
ONNX encoder, special tokens dropped, L2-normalized); the ``rerank`` score is
:func:`~ragspine.retrieval.rerank.maxsim.maxsim`. No trained ColBERT model can be had
offline, so the default encoder is the packaged all-MiniLM-L6-v2 (its token states, not a
ColBERT-trained projection); ``RAGSPINE_COLBERT_DIR`` names a real ColBERT ONNX export
(``model.onnx`` whose first output is the token vectors, + ``tokenizer.json``). A candidate's
token vectors are kept in a bounded per-process cache by its text, so a repeated candidate is
encoded once (kept as float16, up to 400 MB by default) — and, given a ``cache`` (the stack's
embedding cache: its SQLite table, Redis or memory; the registry line says ``needs=("cache",)``),
stored there by the text's content hash under the model's fingerprint, so a candidate reranked
once is not encoded again by any later process: a CLI query over a library that was queried
before reads its candidates' states instead of running the model over them (and a query asked
before, its own: then the model is not even loaded). They are stored as
they are first computed (at query time) — a library's cost is what its queries reach — or, with
``RAGSPINE_COLBERT_AT_INGEST=true``, as every chunk is written (ingest pays the encoding, like
SPLADE's expansions, and a new query then encodes only itself). Stored size: ``8 + 2 × tokens × dim`` bytes a candidate — about 100 KB for a 130-token
passage of a 384-dimension model, so about 100 GB if every chunk of a million were reranked;
a deleted library's states are deleted with it. With the packaged (English) MiniLM, a query
the dense gate would not embed — mostly CJK, or mostly unknown word pieces — keeps its fused
order.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Sequence

import numpy as np

from ragspine.retrieval.rerank.maxsim import maxsim_many
from ragspine.retrieval.rerank.onnx_model import DEFAULT_MAX_TOKENS, OnnxTextModel
from ragspine.retrieval.rerank.scored import IndexingScoreReranker, StoringScoreReranker
from ragspine.retrieval.rerank.text_cache import Codec, TextCache, model_fingerprint

if TYPE_CHECKING:
    from ragspine.config import Settings
    from ragspine.retrieval.vector.embedding_cache import EmbeddingCache

#: Bytes of candidates' token vectors kept per process. They are kept as float16 (a 256-token
#: candidate of a 384-dim model is ≈ 0.2 MB), so 400 MB hold about 2,000 such candidates — and
#: about 4,000 of ~130 tokens (nq-open's 100-word passages). Scores are computed in float32.
DEFAULT_CACHE_BYTES = 400 * 1024 * 1024


def _half(states: list[np.ndarray]) -> list[np.ndarray]:
    return [s.astype(np.float16) for s in states]


def _nbytes(states: np.ndarray) -> int:
    return int(states.nbytes)


def _encode_states(states: np.ndarray) -> np.ndarray:
    """``(tokens, dim)`` float16 as one float32 array: ``[tokens, dim]`` then the float16 values
    two to a float32 word (padded to an even count): exact, and half the size of float32."""
    half = np.ascontiguousarray(states, dtype=np.float16).ravel()
    if half.size % 2:
        half = np.concatenate([half, np.zeros(1, dtype=np.float16)])
    return np.concatenate([np.asarray(states.shape, dtype=np.float32), half.view(np.float32)])


def _decode_states(raw: np.ndarray) -> np.ndarray:
    tokens, dim = int(raw[0]), int(raw[1])
    return np.ascontiguousarray(raw[2:], dtype=np.float32).view(np.float16)[: tokens * dim].reshape(tokens, dim)


STATES_CODEC: Codec[np.ndarray] = Codec(_encode_states, _decode_states)


class MaxSimScorer:
    """A :class:`~ragspine.retrieval.rerank.scored.PairScorer`: MaxSim of token states."""

    def __init__(self, model: OnnxTextModel, *, cache_bytes: int = DEFAULT_CACHE_BYTES, languages: tuple[str, ...] | None = None,
                 store: EmbeddingCache | None = None) -> None:
        self.model = model
        self.languages = languages  # ("en",) for the packaged MiniLM; None: a model that reads any
        namespace = f"colbert:{model_fingerprint(model.model_dir, ('model.onnx', 'tokenizer.json'), model.max_tokens)}" if store is not None else ""
        self._cache: TextCache[np.ndarray] = TextCache(cache_bytes, weight=_nbytes, store=store, namespace=namespace,
                                                       codec=STATES_CODEC if store is not None else None)

    def forget(self, texts: Sequence[str]) -> None:
        """Drop the stored token states of ``texts`` (a deleted library's)."""
        self._cache.forget(texts)

    def __repr__(self) -> str:
        return f"MaxSimScorer({self.model!r})"

    def unknown_token_share(self, texts: Sequence[str]) -> list[float]:
        return self.model.unknown_token_share(texts)

    def reads(self, query: str) -> bool:
        """The dense gate's rule for this encoder: a query it cannot read keeps the fused order."""
        from ragspine.retrieval.vector.gate import DenseGate

        return DenseGate(self).query_readable(query)

    def _compute(self, texts: list[str]) -> list[np.ndarray]:
        return _half(self.model.token_states(texts))

    def index(self, texts: Sequence[str]) -> int:
        """Encode the texts the store lacks, and store their token states (index time, with
        ``RAGSPINE_COLBERT_AT_INGEST``); how many were encoded."""
        return self._cache.fill(texts, self._compute)

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        (q,) = self._cache.get_many([query], self._compute)  # the same encoder reads queries and candidates
        docs = self._cache.get_many(texts, self._compute)
        return maxsim_many(q.astype(np.float32), [d.astype(np.float32) for d in docs])


def colbert_reranker(
    *, model_dir: str | os.PathLike[str] | None = None, settings: Settings | None = None, max_tokens: int = DEFAULT_MAX_TOKENS,
    batch_size: int = 32, threads: int | None = None, cache_bytes: int = DEFAULT_CACHE_BYTES, cache: EmbeddingCache | None = None,
    at_ingest: bool | None = None,
) -> StoringScoreReranker:
    """The registry's ``colbert`` factory (see the module docstring); the encoder is
    ``model_dir``, else ``settings.ranking.colbert_dir`` (the caller's), else the packaged MiniLM
    (assembled under ``settings.cache_dir``; no settings: the default cache dir) — English,
    gated like the dense leg. ``cache``: where candidates' token states are stored by content hash
    (none: this process only). ``at_ingest`` (else ``settings.ranking.colbert_at_ingest``; needs a
    ``cache``): an :class:`~ragspine.retrieval.rerank.base.IndexingReranker`, which the pipeline
    hands every chunk it writes, so their states are stored before any query reaches them."""
    languages: tuple[str, ...] | None = None
    if model_dir is None:
        model_dir = settings.ranking.colbert_dir if settings is not None else None
        if not model_dir:
            from ragspine.retrieval.vector.onnx_backend import packaged_model_dir

            model_dir, languages = packaged_model_dir(settings.cache_dir if settings is not None else None), ("en",)
    model = OnnxTextModel(model_dir, max_tokens=max_tokens, batch_size=batch_size, threads=threads)
    scorer = MaxSimScorer(model, cache_bytes=cache_bytes, languages=languages, store=cache)
    if at_ingest is None:
        at_ingest = settings.ranking.colbert_at_ingest if settings is not None else False
    if at_ingest and cache is not None:  # without a store, states computed at ingest would not outlive the process
        return IndexingScoreReranker(scorer, name="colbert")
    return StoringScoreReranker(scorer, name="colbert")
