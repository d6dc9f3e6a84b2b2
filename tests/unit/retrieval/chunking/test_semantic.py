"""The semantic chunker: refuses without a model, cuts where similarity drops, keeps the cap."""

from __future__ import annotations

import numpy as np
import pytest

from ragspine.errors import BackendError, ConfigError
from ragspine.retrieval.chunking.base import make_chunker
from ragspine.retrieval.chunking.semantic import SemanticChunker, breakpoints
from ragspine.retrieval.vector.embedding_backends import DeterministicEmbeddingBackend


class TopicBackend:
    """A sentence about cats points one way, about stocks another: one obvious drop."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def embed_texts(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(texts)
        return [[1.0, 0.1, 0.0] if "cat" in t.lower() else [0.0, 0.1, 1.0] if "stock" in t.lower() else [0.0, 0.0, 0.0]
                for t in texts]


TEXT = "Cats purr. Cats nap all day. The cat eats. Stocks fell. Stocks rose again. Stock prices wobble."


def test_refuses_without_an_embedding_model() -> None:
    for build in (lambda: SemanticChunker(), lambda: make_chunker("semantic", max_chars=480, overlap_chars=80)):
        with pytest.raises(ConfigError) as excinfo:
            build()
        message = str(excinfo.value)
        assert "\n" not in message and "RAGSPINE_EMBEDDING=onnx" in message and "[embed-onnx]" in message and "layout" in message
    with pytest.raises(ConfigError):
        SemanticChunker(embedding_backend=object())  # type: ignore[arg-type]


def test_cuts_where_the_similarity_drops() -> None:
    backend = TopicBackend()
    chunks = SemanticChunker(max_chars=480, overlap_chars=0, embedding_backend=backend).chunk(TEXT, "d")
    assert [c.text for c in chunks] == ["Cats purr. Cats nap all day. The cat eats.", "Stocks fell. Stocks rose again. Stock prices wobble."]
    assert len(backend.calls) == 1 and len(backend.calls[0]) == 6  # every sentence, in one call
    for c in chunks:
        assert c.text == TEXT[c.char_start : c.char_end]


def test_a_chunk_never_passes_the_cap_and_ends_at_a_sentence_end() -> None:
    text = "Cats purr. Cats nap. Cats eat. Cats run. Cats sit."  # one topic: no drop
    chunks = SemanticChunker(max_chars=22, overlap_chars=0, embedding_backend=TopicBackend()).chunk(text, "d")
    assert [c.text for c in chunks] == ["Cats purr. Cats nap.", "Cats eat. Cats run.", "Cats sit."]


def test_zero_vectors_say_nothing_and_cut_nothing() -> None:
    text = "One. Two. Three. Four."
    chunks = SemanticChunker(max_chars=480, overlap_chars=0, embedding_backend=TopicBackend()).chunk(text, "d")
    assert [c.text for c in chunks] == [text]


def test_breakpoint_rule() -> None:
    sims = np.array([0.9, 0.2, 0.9, 0.2, 0.9])
    assert breakpoints(sims, 90) == [False, True, False, True, False]  # tied drops both cut
    assert breakpoints(np.array([0.5, 0.5, 0.5]), 90) == [False, False, False]  # all alike: no cut
    assert breakpoints(np.array([0.9, 0.8, 0.1, 0.7]), 50) == [False, False, True, True]  # distances >= their median 0.25
    assert breakpoints(np.array([]), 90) == []


def test_deterministic_with_the_hashing_backend() -> None:
    chunker = SemanticChunker(max_chars=120, overlap_chars=0, embedding_backend=DeterministicEmbeddingBackend(dim=64))
    text = "Gearbox delays grew. Gearbox supply slipped. 营收下滑。营收继续下滑。Weather was fine today."
    first = chunker.chunk(text, "d")
    assert first == chunker.chunk(text, "d") and len(first) >= 2


def test_a_backend_returning_the_wrong_number_of_vectors_is_an_error() -> None:
    class Short:
        def embed_texts(self, texts: list[str]) -> list[list[float]]:
            return [[1.0]]

    with pytest.raises(BackendError, match="1 vectors for 2 sentences"):
        SemanticChunker(embedding_backend=Short()).chunk("One. Two.", "d")


def test_bad_percentile_and_budget() -> None:
    with pytest.raises(ValueError, match="breakpoint_percentile"):
        SemanticChunker(embedding_backend=TopicBackend(), breakpoint_percentile=101)
    with pytest.raises(ValueError, match="max_chars"):
        SemanticChunker(max_chars=0, embedding_backend=TopicBackend())


def test_a_document_the_model_cannot_read_is_refused_not_cut_otherwise() -> None:
    english_only = DeterministicEmbeddingBackend(dim=32)
    english_only.languages = ("en",)
    chunker = SemanticChunker(embedding_backend=english_only, max_chars=120, overlap_chars=0)
    assert chunker.chunk("One sentence. Another one here.", "en")  # English: cut
    with pytest.raises(ConfigError, match="cannot read this document.*RAGSPINE_EMBEDDING=e5"):
        chunker.chunk("数据处理者应当建立数据安全管理制度。第二句话在这里。", "zh")
    multilingual = DeterministicEmbeddingBackend(dim=32)  # declares no languages: reads every script
    assert SemanticChunker(embedding_backend=multilingual, max_chars=120, overlap_chars=0).chunk("数据安全。第二句。", "zh")
