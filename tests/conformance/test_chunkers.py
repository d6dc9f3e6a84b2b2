"""The Chunker conformance pack (``ragspine.testing.chunker``) over every registered chunker."""

from __future__ import annotations

import dataclasses

import pytest

from ragspine.registries import CHUNKERS
from ragspine.retrieval.chunking.base import make_chunker
from ragspine.retrieval.chunking.chunking import ParagraphChunker
from ragspine.retrieval.vector.embedding_backends import DeterministicEmbeddingBackend
from ragspine.testing.chunker import ChunkerConformance, check_chunks, check_coverage, mixed_corpus


def factory_for(name: str):
    name, _, packing = name.partition(":")  # "layout:unit": RAGSPINE_CHUNK_PACKING=unit
    options: dict = {"embedding_backend": DeterministicEmbeddingBackend(dim=64)} if name == "semantic" else {}
    if packing:
        options["packing"] = packing
    return lambda max_chars, overlap_chars: make_chunker(name, max_chars=max_chars, overlap_chars=overlap_chars, **options)


#: The chunkers that take ``packing`` (RAGSPINE_CHUNK_PACKING), with every unit its own chunk.
UNIT_PACKED = ["default:unit", "layout:unit", "parent_child:unit", "laws:unit", "qa:unit", "book:unit"]


class TestRegisteredChunkers(ChunkerConformance):
    @pytest.fixture(params=CHUNKERS.names() + UNIT_PACKED)
    def chunker_factory(self, request):
        return factory_for(request.param)


def test_every_name_and_alias_builds_a_chunker() -> None:
    assert {"default", "layout", "parent_child", "sentence_window", "semantic", "laws", "qa", "book"} <= set(CHUNKERS.names())
    assert CHUNKERS.canonical("small_to_big") == "parent_child"
    for name in CHUNKERS:
        assert hasattr(factory_for(name)(120, 30), "chunk"), name


class BrokenChunker(ParagraphChunker):
    """Shifts every span by one character: the pack must notice."""

    def chunk(self, text, doc_id, **kwargs):
        return [dataclasses.replace(c, char_start=c.char_start + 1) for c in super().chunk(text, doc_id, **kwargs)]


class LossyChunker(ParagraphChunker):
    """Drops the last chunk."""

    def chunk(self, text, doc_id, **kwargs):
        return super().chunk(text, doc_id, **kwargs)[:-1]


def test_the_checks_can_fail() -> None:
    text = mixed_corpus()["english"]
    with pytest.raises(AssertionError, match="text is not document"):
        check_chunks(BrokenChunker(max_chars=120, overlap_chars=0).chunk(text, "e"), text, "e", max_chars=120)
    with pytest.raises(AssertionError, match="max_chars"):
        check_chunks(ParagraphChunker(max_chars=480, overlap_chars=0).chunk(text, "e"), text, "e", max_chars=100)
    good = make_chunker("parent_child", max_chars=120, overlap_chars=0).chunk(text, "e")
    wrong_window = [dataclasses.replace(c, window_text=c.window_text + "x") for c in good]
    with pytest.raises(AssertionError, match="window_text"):
        check_chunks(wrong_window, text, "e", max_chars=120)
    with pytest.raises(AssertionError, match="parent_chars 100"):
        check_chunks(good, text, "e", max_chars=120, max_parent_chars=100)
    with pytest.raises(AssertionError, match="in no chunk"):
        check_coverage(LossyChunker(max_chars=120, overlap_chars=0).chunk(text, "e"), text)
