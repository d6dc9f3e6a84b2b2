"""The ``Chunker`` role: a document in, ``Chunk``s with real locators out.

Every chunker keeps the seed's provenance contract: each chunk's ``text`` is a contiguous
substring of the document, ``text == document[char_start - source_offset : char_end -
source_offset]``, and ``source_locator`` points at exactly that span; ``parent_locator``
(when set) points at the real extent of the parent section or window; chunk ids and parent
ids are derived from the document and the span, so re-ingesting the same text is
idempotent. Chunkers are chosen by name (``RAGSPINE_CHUNKER``, ``make_chunker``); the
default is the seed's paragraph chunker (``chunking.py``).
"""

from __future__ import annotations

from typing import Mapping, Protocol, runtime_checkable

from ragspine.retrieval.chunking.chunking import Chunk
from ragspine.retrieval.sensitivity import DEFAULT_SENSITIVITY


@runtime_checkable
class Chunker(Protocol):
    def chunk(
        self,
        text: str,
        doc_id: str,
        *,
        title: str = "",
        metadata: Mapping[str, object] | None = None,
        sensitivity: str = DEFAULT_SENSITIVITY,
        source: str | None = None,
        source_offset: int = 0,
    ) -> list[Chunk]:
        """The chunks of one document, in document order. ``source`` names the document in
        locators (default ``doc_id``); ``source_offset`` is added to every offset when ``text``
        is a slice of a larger file (e.g. after front matter). Bad metadata raises
        ``IngestError``; an empty document gives no chunks."""
        ...


def make_chunker(spec: str = "default", **options: object) -> Chunker:
    """The chunker named ``spec`` (the caller's ``RAGSPINE_CHUNKER``; default ``default``, the
    seed's paragraph chunker), built with ``options`` (e.g. ``max_chars``, ``overlap_chars``);
    names and errors come from the registry."""
    from ragspine.registries import CHUNKERS

    chunker: Chunker = CHUNKERS.build(spec, **options)
    return chunker


def bounds_parents(spec: str) -> bool:
    """Whether the chunker named ``spec`` takes a parent bound ``parent_chars``
    (``RAGSPINE_PARENT_CHARS``): the parent-child chunkers (``parent_child``, ``laws``, ``qa``,
    ``book`` and any registered subclass)."""
    from ragspine.registries import CHUNKERS
    from ragspine.retrieval.chunking.domain_presets import ParentChildChunker

    factory = CHUNKERS.load(spec)
    return isinstance(factory, type) and issubclass(factory, ParentChildChunker)
