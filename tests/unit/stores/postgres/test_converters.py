"""Row <-> StoredChunk conversion, without a server."""

from __future__ import annotations

import json
import sys
from datetime import datetime, timedelta, timezone

import pytest

from ragspine.retrieval.chunking.chunk_store import StoredChunk
from ragspine.retrieval.chunking.chunking import Chunk
from ragspine.stores.postgres.converters import (
    CHUNK_COLUMNS,
    chunk_to_row,
    metadata_from_db,
    metadata_json,
    row_to_stored,
    timestamp_text,
)

CHUNK = Chunk(
    chunk_id="d#0", doc_id="d", text="营收下滑 in Q3", title="Q3", source_locator="d.md#char=1,9",
    ordinal=3, char_start=1, char_end=9, metadata={"topic": "sales", "year": 2024, "ok": True, "n": None},
    sensitivity="RESTRICTED", parent_id="d#p0", heading="H", window_text="w", parent_locator="d.md#char=0,20",
)


def test_chunk_to_row_has_every_insert_column() -> None:
    row = chunk_to_row(CHUNK, library_id="lib", version=4, valid_as_of="2024-09-30")
    assert set(row) == (set(CHUNK_COLUMNS) - {"metadata", "ingested_at"}) | {"metadata_json"}
    assert (row["library_id"], row["version"], row["active"], row["valid_as_of"]) == ("lib", 4, True, "2024-09-30")
    assert json.loads(row["metadata_json"]) == dict(CHUNK.metadata)
    for name in ("chunk_id", "doc_id", "text", "title", "source_locator", "ordinal", "char_start",
                 "char_end", "sensitivity", "parent_id", "heading", "window_text", "parent_locator"):
        assert row[name] == getattr(CHUNK, name), name


def test_row_to_stored_from_a_sequence_and_a_mapping() -> None:
    when = datetime(2024, 10, 1, 14, 30, 5, 123, tzinfo=timezone(timedelta(hours=2)))
    row = chunk_to_row(CHUNK, library_id="lib", version=2, valid_as_of="v")
    values = {**row, "metadata": json.loads(row.pop("metadata_json")), "ingested_at": when}
    as_tuple = tuple(values[c] for c in CHUNK_COLUMNS)
    for form in (as_tuple, {c: values[c] for c in CHUNK_COLUMNS}):
        got = row_to_stored(form)
        assert isinstance(got, StoredChunk)
        assert got == StoredChunk(**{**CHUNK.__dict__, "metadata": dict(CHUNK.metadata)}, valid_as_of="v",
                                  ingested_at="2024-10-01T12:30:05.000123+00:00", version=2, active=True,
                                  library_id="lib")


@pytest.mark.parametrize(
    "value",
    ["text", "", "营收", 0, -7, 2**70, 0.5, -2.25, 1.0, 1e16, -1.5e20, sys.float_info.max, 1e-7, 5e-324, True, False, None],
)
def test_metadata_json_keeps_the_python_type(value) -> None:
    text = metadata_json({"k": value})
    back = json.loads(text)["k"]
    assert back == value and type(back) is type(value)
    # what jsonb prints for a number drops an exponent; a float must still print a fraction
    if isinstance(value, float):
        assert "e" not in text or abs(value) < 1, text
        assert "." in text or "e-" in text


def test_metadata_json_is_sorted_and_keeps_unicode_and_dotted_keys() -> None:
    assert metadata_json({"b": 1, "a.b": "x", "é": "ü"}) == '{"a.b": "x", "b": 1, "é": "ü"}'
    assert metadata_json({}) == "{}"


def test_metadata_from_db_accepts_driver_forms() -> None:
    assert metadata_from_db({"a": 1}) == {"a": 1}
    assert metadata_from_db('{"a": 1.0}') == {"a": 1.0}
    assert metadata_from_db(b'{"a": true}') == {"a": True}
    assert metadata_from_db(None) == {}
    with pytest.raises(ValueError):
        metadata_from_db("[1, 2]")


def test_timestamp_text() -> None:
    assert timestamp_text(None) == ""
    assert timestamp_text(datetime(2024, 1, 2, 3, 4, 5)) == "2024-01-02T03:04:05.000000+00:00"
    assert timestamp_text("2024-01-02") == "2024-01-02"
