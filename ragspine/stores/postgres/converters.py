"""Pure conversions between :class:`Chunk` / :class:`StoredChunk` and ``ragspine_chunk`` rows.

No I/O and no driver import: unit-tested without a server.

Metadata lives in the JSONB column ``metadata``. It is written as JSON text (cast to
``jsonb`` in SQL) so that its types survive the round trip exactly as they do in SQLite:
``jsonb`` keeps numbers as ``numeric`` and prints an integral value such as ``1e16`` without
a fraction, which would come back as an ``int``; :func:`metadata_json` therefore writes such
floats in positional form with a ``.0`` (``10000000000000000.0``), which ``numeric`` keeps.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from datetime import datetime, timezone
from typing import Any, Iterable, Mapping, Sequence

from ragspine.retrieval.chunking.chunk_store import StoredChunk
from ragspine.retrieval.chunking.chunking import Chunk

#: The columns a chunk row is read with, in this order (``ingested_at`` is set by the server).
CHUNK_COLUMNS: tuple[str, ...] = (
    "library_id",
    "chunk_id",
    "doc_id",
    "version",
    "active",
    "ordinal",
    "text",
    "title",
    "source_locator",
    "char_start",
    "char_end",
    "metadata",
    "sensitivity",
    "parent_id",
    "heading",
    "window_text",
    "parent_locator",
    "valid_as_of",
    "ingested_at",
    "boxes",
)

def _needs_fraction(value: Any) -> bool:
    """A float that ``json`` writes with an exponent and ``jsonb`` would print as an int."""
    return isinstance(value, float) and math.isfinite(value) and value.is_integer() and "e" in repr(value)


def _json_scalar(value: Any) -> str:
    return f"{int(value)}.0" if _needs_fraction(value) else json.dumps(value, ensure_ascii=False)


def metadata_json(metadata: Mapping[str, Any]) -> str:
    """Flat scalar metadata (already validated) → JSON text that ``jsonb`` round-trips."""
    if not any(_needs_fraction(v) for v in metadata.values()):
        return json.dumps(dict(metadata), ensure_ascii=False, sort_keys=True)
    items = sorted(metadata.items())  # 1e+16 -> 10000000000000000.0
    return "{" + ", ".join(f"{json.dumps(k, ensure_ascii=False)}: {_json_scalar(v)}" for k, v in items) + "}"


def metadata_from_db(value: Any) -> dict[str, Any]:
    """The ``metadata`` column as read (a dict from the driver, or JSON text) → dict."""
    if value is None:
        return {}
    if isinstance(value, (bytes, bytearray, memoryview)):
        value = bytes(value).decode("utf-8")
    if isinstance(value, str):
        value = json.loads(value)
    if not isinstance(value, dict):
        raise ValueError(f"chunk metadata must be a JSON object, got {type(value).__name__}")
    return dict(value)


def chunk_to_row(chunk: Chunk, *, library_id: str, version: int, valid_as_of: str) -> dict[str, Any]:
    """The insert parameters of one new (active) row; ``metadata_json`` is JSON text."""
    return {
        "library_id": library_id,
        "chunk_id": chunk.chunk_id,
        "doc_id": chunk.doc_id,
        "version": version,
        "active": True,
        "ordinal": chunk.ordinal,
        "text": chunk.text,
        "title": chunk.title,
        "source_locator": chunk.source_locator,
        "char_start": chunk.char_start,
        "char_end": chunk.char_end,
        "metadata_json": metadata_json(chunk.metadata),
        "sensitivity": chunk.sensitivity,
        "parent_id": chunk.parent_id,
        "heading": chunk.heading,
        "window_text": chunk.window_text,
        "parent_locator": chunk.parent_locator,
        "valid_as_of": valid_as_of,
        "boxes": chunk.boxes,
    }


#: The columns a replace writes (COPY), in this order; ``ingested_at`` is the server's now().
COPY_COLUMNS: tuple[str, ...] = (
    "library_id", "chunk_id", "doc_id", "version", "active", "ordinal", "text", "title",
    "source_locator", "char_start", "char_end", "metadata", "sensitivity", "parent_id",
    "heading", "window_text", "parent_locator", "valid_as_of", "n_tokens", "boxes",
)


def chunk_copy_row(chunk: Chunk, *, library_id: str, version: int, valid_as_of: str, n_tokens: int | None) -> tuple[Any, ...]:
    """One new (active) row in :data:`COPY_COLUMNS` order (metadata as JSON text)."""
    row = chunk_to_row(chunk, library_id=library_id, version=version, valid_as_of=valid_as_of)
    row["metadata"] = row.pop("metadata_json")
    row["n_tokens"] = n_tokens
    return tuple(row[c] for c in COPY_COLUMNS)


#: Tokens longer than this (UTF-8 bytes) are stored as a prefix plus a digest, so a posting
#: always fits a btree entry (~2,700 bytes); ``#`` never occurs in a token, so the stored
#: form cannot equal a real token, and distinct tokens keep distinct stored forms.
MAX_TOKEN_BYTES = 256


def stored_token(token: str) -> str:
    """The form ``token`` takes in ``ragspine_lex_posting.token`` (and in queries)."""
    data = token.encode("utf-8", "surrogatepass")
    if len(data) <= MAX_TOKEN_BYTES:
        return token
    return token[:64] + "#" + hashlib.sha256(data).hexdigest()


def term_counts(tokens: Iterable[str]) -> tuple[int, Counter[str]]:
    """``(length, {stored token: frequency})`` of one chunk's tokens."""
    tokens = list(tokens)
    return len(tokens), Counter(stored_token(t) for t in tokens)


def timestamp_text(value: Any) -> str:
    """A ``timestamptz`` as SQLite's stores write it (UTC ISO-8601, microseconds); ``""``
    for NULL."""
    if value is None:
        return ""
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=timezone.utc)
        stamp: str = value.astimezone(timezone.utc).isoformat(timespec="microseconds")
        return stamp
    return str(value)


def row_to_stored(row: Mapping[str, Any] | Sequence[Any]) -> StoredChunk:
    """A row selected with :data:`CHUNK_COLUMNS` (a mapping or a sequence) → StoredChunk."""
    v = dict(row) if isinstance(row, Mapping) else dict(zip(CHUNK_COLUMNS, row, strict=False))
    return StoredChunk.from_row(v, metadata=metadata_from_db(v["metadata"]), ingested_at=timestamp_text(v["ingested_at"]))


# -- what PostgreSQL text can hold ------------------------------------------------------------
def _unstorable_at(text: str) -> int:
    """Index of the first character PostgreSQL text cannot hold (NUL, lone surrogate), or -1."""
    for i, ch in enumerate(text):
        if ch == "\x00" or "\ud800" <= ch <= "\udfff":
            return i
    return -1


def pg_storable(value: object) -> bool:
    """Whether a metadata key or value can be stored in PostgreSQL text/JSONB."""
    return not isinstance(value, str) or _unstorable_at(value) < 0


def storable_bound(op: str, operand: str) -> tuple[str, str]:
    """An equivalent ``(op, operand)`` for comparing *storable* strings with ``operand``.

    Let ``p`` be ``operand`` up to its first unstorable character ``c`` and ``n`` the
    smallest storable character above ``c``. For every storable ``s``: ``s < operand`` ⇔
    ``s < p + n`` (and ``s <= operand`` likewise, since ``s != operand``), ``s > operand`` ⇔
    ``s >= p + n`` (and ``s >= operand`` likewise).
    """
    i = _unstorable_at(operand)
    if i < 0:
        return op, operand
    after = "\x01" if operand[i] == "\x00" else "\ue000"  # the next storable character
    bound = operand[:i] + after
    return ("lt" if op in ("lt", "lte") else "gte"), bound
