"""The metadata value model shared by every backend.

Values are scalars: ``str``, number (``int`` and ``float`` are one type), ``bool`` (its own
type: ``True`` is not ``1``) or ``None``. Lists, objects, NaN and infinities are rejected at
ingest so that every store can compare values the same way.
"""

from __future__ import annotations

import math
from typing import Mapping, Union

from ragspine.errors import IngestError

Scalar = Union[str, int, float, bool, None]

MAX_FIELD_NAME_CHARS = 256
#: The seed's first-class metadata fields (``iter_chunks`` keywords).
STANDARD_FIELDS = ("topic", "entity", "geography", "period", "language")


def value_kind(value: object) -> str:
    """``"null" | "bool" | "number" | "string"``; raises TypeError for anything else."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    raise TypeError(f"unsupported metadata value type {type(value).__name__}")


def check_field_name(name: object) -> str:
    """Validate a metadata field name; returns it unchanged."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"metadata field name must be a non-empty string, got {name!r}")
    if len(name) > MAX_FIELD_NAME_CHARS:
        raise ValueError(
            f"metadata field name is {len(name)} chars; the limit is {MAX_FIELD_NAME_CHARS}"
        )
    return name


def validate_metadata(metadata: Mapping[str, object] | None) -> dict[str, Scalar]:
    """Return a plain dict copy of ``metadata`` or raise :class:`IngestError`."""
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise IngestError(f"metadata must be a mapping of field -> scalar, got {type(metadata).__name__}")
    out: dict[str, Scalar] = {}
    for key, value in metadata.items():
        try:
            check_field_name(key)
        except ValueError as exc:
            raise IngestError(str(exc)) from None
        try:
            value_kind(value)
        except TypeError:
            raise IngestError(
                f"metadata field {key!r} has a {type(value).__name__} value; "
                "only strings, numbers, booleans and null are allowed (flatten lists/objects)"
            ) from None
        if isinstance(value, float) and not math.isfinite(value):
            raise IngestError(f"metadata field {key!r} is {value}; use a finite number or null")
        out[key] = value  # type: ignore[assignment]  # value_kind() accepted it: a Scalar
    return out
