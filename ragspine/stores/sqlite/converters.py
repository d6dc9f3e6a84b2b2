"""Pure row conversion for the SQLite chunk store: ``Chunk`` → row tuple, row → ``StoredChunk``."""

from __future__ import annotations

import json
from typing import Any, Sequence

from ragspine.retrieval.chunking.chunk_store import StoredChunk
from ragspine.retrieval.chunking.chunking import Chunk
from ragspine.retrieval.metadata import STANDARD_FIELDS
from ragspine.stores.sqlite.schema import COLUMN_NAMES

_STANDARD_AT = tuple(COLUMN_NAMES.index(name) for name in STANDARD_FIELDS)
_META_AT = COLUMN_NAMES.index("metadata_json")


def chunk_row(library_id: str, c: Chunk, version: int, valid_as_of: str, now: str) -> tuple[Any, ...]:
    """The ``narrative_chunk`` row of one chunk, in :data:`COLUMN_NAMES` order."""
    meta = dict(c.metadata)
    values: dict[str, Any] = {
        "library_id": library_id,
        "chunk_id": c.chunk_id,
        "doc_id": c.doc_id,
        "version": version,
        "active": 1,
        "ordinal": c.ordinal,
        "text": c.text,
        "title": c.title,
        "source_locator": c.source_locator,
        "char_start": c.char_start,
        "char_end": c.char_end,
        "metadata_json": json.dumps(meta, ensure_ascii=False, sort_keys=True),
        "sensitivity": c.sensitivity,
        "parent_id": c.parent_id,
        "heading": c.heading,
        "window_text": c.window_text,
        "parent_locator": c.parent_locator,
        "valid_as_of": valid_as_of,
        "ingested_at": now,
        "boxes": c.boxes,
    }
    for name in STANDARD_FIELDS:
        value = meta.get(name)
        values[name] = "" if value is None else str(value)
    return tuple(values[name] for name in COLUMN_NAMES)


def row_to_stored(row: Sequence[Any]) -> StoredChunk:
    """A ``narrative_chunk`` row (in :data:`COLUMN_NAMES` order) as a :class:`StoredChunk`."""
    raw = row[_META_AT]
    meta = json.loads(raw) if raw and raw != "{}" else {}
    for name, at in zip(STANDARD_FIELDS, _STANDARD_AT, strict=True):  # rows of an older schema kept these as columns
        if row[at] and name not in meta:
            meta[name] = row[at]
    (library_id, chunk_id, doc_id, version, active, ordinal, text, title, source_locator, char_start, char_end,
     _topic, _entity, _geography, _period, _language, _meta, sensitivity, parent_id, heading, window_text,
     parent_locator, valid_as_of, ingested_at, boxes) = row
    return StoredChunk.stored({  # INTEGER columns come back as int; every field is set
        "chunk_id": chunk_id, "doc_id": doc_id, "text": text, "title": title, "source_locator": source_locator,
        "ordinal": ordinal, "char_start": char_start, "char_end": char_end, "metadata": meta,
        "sensitivity": sensitivity, "parent_id": parent_id, "heading": heading, "window_text": window_text,
        "parent_locator": parent_locator, "valid_as_of": valid_as_of, "ingested_at": ingested_at,
        "version": version, "active": bool(active), "library_id": library_id, "boxes": boxes,
    })
