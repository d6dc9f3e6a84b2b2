"""Small builders shared by tests."""

from __future__ import annotations

from typing import Any

from ragspine.retrieval.chunking.chunking import Chunk, chunk_id_for


def make_chunk(doc_id: str, ordinal: int = 0, text: str = "text", **fields: Any) -> Chunk:
    return Chunk(chunk_id=fields.pop("chunk_id", chunk_id_for(doc_id, ordinal)), doc_id=doc_id, text=text, ordinal=ordinal, **fields)
