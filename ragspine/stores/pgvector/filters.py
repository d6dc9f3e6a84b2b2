"""Pure translation of a :class:`MetadataFilter` into a SQL boolean over a JSONB column.

No I/O: :func:`filter_clause` returns an SQLAlchemy Core expression that the caller puts in a
``WHERE``. Field names and operands are **always bound parameters** (``metadata -> :f``,
``metadata ? :f``, ``metadata @> CAST(:obj AS jsonb)``); nothing from a filter is ever
interpolated into SQL text. There is no fixed list of fields in RAGSpine's metadata model
(any non-empty key up to 256 chars is allowed), so "unknown field" cannot be detected here:
field names are validated by :class:`FilterCondition`'s rules (malformed → ``FilterError`` at
construction, before any I/O) and a field no row carries simply matches nothing.

The semantics are ``SPEC.md`` "Metadata filter semantics", exactly as
:meth:`MetadataFilter.matches` computes them:

* ``eq v`` / ``in`` use JSONB containment (``metadata @> '{"f": v}'``): the key must be
  present and the values of one JSON type and equal — numbers compare numerically
  (``1 = 1.0``), ``true`` is not ``1``, ``"10"`` is not ``10``. Containment can use a GIN
  ``jsonb_path_ops`` index.
* ``eq null`` is ``jsonb_typeof(metadata -> f) = 'null'``; ``ne``/``nin`` require the key
  present and not null.
* ordered operators compare only values of the operand's kind, inside ``CASE WHEN
  jsonb_typeof(...) = kind`` so that a cast can never fail on the data: numbers as
  ``numeric`` (operands are bound as their JSON text, never through float8), strings with
  ``COLLATE "C"`` (UTF-8 byte order = Unicode code-point order).
* PostgreSQL cannot store NUL or lone surrogates in text/JSONB, so no stored value or key
  contains one (the store rejects them at upsert). A filter may still mention one: equality
  with such a value is constant FALSE, and an ordered bound is rewritten to an equivalent
  storable bound (:func:`storable_bound`), so a well-formed filter never raises on the server.

Every expression is NULL-free (TRUE or FALSE, also for rows missing the key).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB

from ragspine.retrieval.filtering.filters import FilterCondition, MetadataFilter

__all__ = ["HANDLERS", "condition_clause", "filter_clause", "pg_storable", "storable_bound"]

Clause = sa.ColumnElement[bool]


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


# -- expression helpers (every literal is a bound parameter) ---------------------------------
def _param(value: str) -> sa.BindParameter[str]:
    return sa.bindparam(None, value, type_=sa.Text)


def _get(column: Any, field: str) -> sa.ColumnElement[Any]:
    return column.op("->", return_type=JSONB)(_param(field))


def _get_text(column: Any, field: str) -> sa.ColumnElement[str]:
    return column.op("->>", return_type=sa.Text)(_param(field))


def _typeof(column: Any, field: str) -> sa.ColumnElement[str]:
    return sa.func.jsonb_typeof(_get(column, field), type_=sa.Text)


def _contains(column: Any, field: str, value: Any) -> Clause:
    """``column @> {"field": value}`` — present, same JSON type, equal."""
    obj = json.dumps({field: value}, ensure_ascii=False, allow_nan=False)
    return column.op("@>", return_type=sa.Boolean)(sa.cast(_param(obj), JSONB))


def _present_non_null(column: Any, field: str) -> Clause:
    has_key = column.op("?", return_type=sa.Boolean)(_param(field))
    return sa.and_(has_key, _typeof(column, field) != _param("null"))


def _equal_any(column: Any, field: str, values: tuple[Any, ...]) -> Clause:
    """OR of containments over the operands that can equal a present, non-null value."""
    usable = [v for v in values if v is not None and pg_storable(v)]
    if not usable:
        return sa.false()
    return sa.or_(*(_contains(column, field, v) for v in usable))


# -- one handler per operator ------------------------------------------------------------------
def _eq(column: Any, c: FilterCondition) -> Clause:
    if c.value is None:
        return sa.func.coalesce(_typeof(column, c.field) == _param("null"), sa.false())
    if not pg_storable(c.value):
        return sa.false()
    return _contains(column, c.field, c.value)


def _ne(column: Any, c: FilterCondition) -> Clause:
    present = _present_non_null(column, c.field)
    if c.value is None or not pg_storable(c.value):
        return present
    return sa.and_(present, sa.not_(_contains(column, c.field, c.value)))


def _in(column: Any, c: FilterCondition) -> Clause:
    return _equal_any(column, c.field, c.value)


def _nin(column: Any, c: FilterCondition) -> Clause:
    return sa.and_(_present_non_null(column, c.field), sa.not_(_equal_any(column, c.field, c.value)))


_SQL_COMPARE: dict[str, Callable[[Any, Any], Clause]] = {
    "gt": lambda a, b: a > b,
    "gte": lambda a, b: a >= b,
    "lt": lambda a, b: a < b,
    "lte": lambda a, b: a <= b,
}


def _bounds(c: FilterCondition) -> list[tuple[str, Any]]:
    if c.op == "between":
        lo, hi = c.value
        return [("gte", lo), ("lte", hi)]
    return [(c.op, c.value)]


def _ordered(column: Any, c: FilterCondition) -> Clause:
    """``CASE WHEN jsonb_typeof(m -> f) = kind THEN <comparisons> ELSE FALSE END``."""
    kind = c.operand_kind  # "number" or "string" (FilterCondition guarantees it)
    comparisons = []
    if kind == "number":
        stored = sa.cast(_get_text(column, c.field), sa.Numeric)
        for op, operand in _bounds(c):
            bound = sa.cast(_param(json.dumps(operand, allow_nan=False)), sa.Numeric)
            comparisons.append(_SQL_COMPARE[op](stored, bound))
    else:
        stored_text = sa.collate(_get_text(column, c.field), "C")
        for op, operand in _bounds(c):
            op, operand = storable_bound(op, operand)
            comparisons.append(_SQL_COMPARE[op](stored_text, _param(operand)))
    return sa.case((_typeof(column, c.field) == _param(kind), sa.and_(*comparisons)), else_=sa.false())


#: operator → handler(column, condition) → SQL boolean (Haystack style dispatch).
HANDLERS: dict[str, Callable[[Any, FilterCondition], Clause]] = {
    "eq": _eq,
    "ne": _ne,
    "in": _in,
    "nin": _nin,
    "gt": _ordered,
    "gte": _ordered,
    "lt": _ordered,
    "lte": _ordered,
    "between": _ordered,
}


def condition_clause(column: Any, condition: FilterCondition) -> Clause:
    """One condition as SQL; a field name PostgreSQL cannot store is never present."""
    if not pg_storable(condition.field):
        return sa.false()
    return HANDLERS[condition.op](column, condition)


def filter_clause(column: Any, where: MetadataFilter | None) -> Clause:
    """The AND of ``where``'s conditions over the JSONB ``column`` (TRUE when no filter)."""
    if not where:
        return sa.true()
    return sa.and_(*(condition_clause(column, c) for c in where.conditions))
