"""The chunker registry: every name builds, options pass through, the default is unchanged."""

from __future__ import annotations

import pytest

from ragspine.errors import ConfigError
from ragspine.registries import CHUNKERS
from ragspine.retrieval.chunking.base import Chunker, make_chunker
from ragspine.retrieval.chunking.chunking import ParagraphChunker, chunk_document
from ragspine.retrieval.chunking.domain_presets import BookChunker, LawsChunker, ParentChildChunker, QAChunker
from ragspine.retrieval.chunking.layout import LayoutAwareChunker
from ragspine.retrieval.chunking.semantic import SemanticChunker
from ragspine.retrieval.chunking.sentence_window import SentenceWindowChunker
from ragspine.retrieval.vector.embedding_backends import DeterministicEmbeddingBackend
from ragspine.testing.chunker import mixed_corpus, random_documents

CLASSES = {
    "default": ParagraphChunker, "layout": LayoutAwareChunker, "parent_child": ParentChildChunker,
    "small_to_big": ParentChildChunker, "sentence_window": SentenceWindowChunker, "semantic": SemanticChunker,
    "laws": LawsChunker, "qa": QAChunker, "book": BookChunker,
}


@pytest.mark.parametrize("name", list(CLASSES))
def test_every_name_builds_its_class_with_the_budget(name: str) -> None:
    extra = {"embedding_backend": DeterministicEmbeddingBackend()} if name == "semantic" else {}
    chunker = make_chunker(name, max_chars=200, overlap_chars=20, **extra)
    assert type(chunker) is CLASSES[name] and isinstance(chunker, Chunker)
    assert (chunker.max_chars, chunker.overlap_chars) == (200, 20)  # type: ignore[attr-defined]
    with pytest.raises(ValueError):
        make_chunker(name, max_chars=20, overlap_chars=20, **extra)
    assert CHUNKERS[CHUNKERS.canonical(name)].help


def test_unknown_names_list_the_choices() -> None:
    with pytest.raises(ConfigError, match="layout, parent_child, sentence_window, semantic, laws, qa, book"):
        make_chunker("nope")


def test_sentence_window_options_pass_through() -> None:
    chunker = make_chunker("sentence_window", max_chars=100, overlap_chars=0, window_chars=300)
    assert isinstance(chunker, SentenceWindowChunker) and chunker.window_chars == 300


def test_the_default_chunker_is_unchanged() -> None:
    texts = list(mixed_corpus().values()) + random_documents(3, 20)
    for max_chars, overlap in ((480, 80), (60, 15), (5, 0)):
        chunker = make_chunker("default", max_chars=max_chars, overlap_chars=overlap)
        for text in texts:
            got = chunker.chunk(text, "d", title="T", metadata={"year": 1}, source="s", source_offset=4)
            want = chunk_document(text, "d", title="T", metadata={"year": 1}, source="s", source_offset=4,
                                  max_chars=max_chars, overlap_chars=overlap)
            assert got == want
    known = chunk_document("Alpha beta.\n\nGamma delta epsilon zeta eta.\n\n" + "营收下滑。" * 4, "k", max_chars=24, overlap_chars=6)
    assert [(c.text, c.char_start, c.char_end) for c in known] == [
        ("Alpha beta.", 0, 11), ("Gamma delta epsilon zeta", 13, 37), ("eta.", 38, 42),
        ("营收下滑。营收下滑。营收下滑。营收下滑。", 44, 64),
    ]
