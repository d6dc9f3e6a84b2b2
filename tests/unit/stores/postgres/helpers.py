"""Builders shared by the PostgreSQL store tests."""

from __future__ import annotations

from ragspine.retrieval.chunking.chunking import Chunk
from tests.helpers import make_chunk


def doc(doc_id: str, *texts: str, **fields) -> list[Chunk]:
    return [make_chunk(doc_id, i, t, **fields) for i, t in enumerate(texts)]


def active(store, doc_id: str | None = None) -> list[tuple[str, str, int]]:
    return [(c.chunk_id, c.text, c.version) for c in store.iter_chunks(doc_id=doc_id)]
