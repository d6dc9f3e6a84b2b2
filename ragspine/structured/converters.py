"""Pure conversions between :class:`Fact` and fact table rows, shared by the SQLite and
PostgreSQL adapters (no I/O, no driver import)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Sequence

from ragspine.structured.base import Fact, StoredFact

#: The columns a fact row is read with, in this order (both backends).
FACT_COLUMNS: tuple[str, ...] = (
    "library_id", "source_doc_id", "version", "ordinal", "active", "metric", "entity", "period", "channel",
    "value", "unit", "source_locator", "valid_as_of", "sensitivity",
)
#: The columns a replace writes (``active`` and ``ingested_at`` take their defaults).
INSERT_COLUMNS: tuple[str, ...] = tuple(c for c in FACT_COLUMNS if c != "active")


def value_text(value: Decimal) -> str:
    """A decimal in positional notation with its scale (``Decimal('1.5E+3')`` → ``'1500'``,
    ``Decimal('-0.0')`` → ``'0.0'``): what both backends store and give back."""
    return format(abs(value) if value == 0 else value, "f")


def fact_row(library_id: str, version: int, ordinal: int, fact: Fact, *, value_as_text: bool) -> tuple[Any, ...]:
    """The :data:`INSERT_COLUMNS` values of ``fact``; the value as text (SQLite) or as a
    ``Decimal`` (PostgreSQL ``numeric``)."""
    text = value_text(fact.value)
    value: Any = text if value_as_text else Decimal(text)
    return (library_id, fact.source_doc_id, version, ordinal, fact.metric, fact.entity, fact.period, fact.channel,
            value, fact.unit, fact.source_locator, fact.valid_as_of, fact.sensitivity)


def row_to_fact(row: Sequence[Any]) -> StoredFact:
    """A :data:`FACT_COLUMNS` row as a :class:`StoredFact` (the value read back exactly)."""
    (library_id, source_doc_id, version, ordinal, active, metric, entity, period, channel,
     value, unit, locator, valid_as_of, sensitivity) = row
    return StoredFact(
        metric=metric, entity=entity, period=period, value=Decimal(str(value)), source_doc_id=source_doc_id,
        source_locator=locator, valid_as_of=valid_as_of, unit=unit, channel=channel, sensitivity=sensitivity,
        library_id=library_id, version=int(version), ordinal=int(ordinal), active=bool(active),
    )
