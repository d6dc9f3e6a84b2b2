"""PostgreSQL's translation of a :class:`MetadataFilter` into a SQL boolean over a JSONB column.

Shared by every PostgreSQL store: the chunk store and lexical index (as driver SQL, with
:func:`compile_filter`) and pgvector (as an SQLAlchemy expression, :func:`filter_clause`).

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
import re
from collections.abc import Callable
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB

from ragspine.retrieval.filtering.filters import FilterCondition, MetadataFilter
from ragspine.stores.postgres.converters import pg_storable, storable_bound

__all__ = ["HANDLERS", "compile_filter", "condition_clause", "filter_clause", "pg_storable", "storable_bound"]

Clause = sa.ColumnElement[bool]


# -- expression helpers (every literal is a bound parameter) ---------------------------------
def _param(value: str) -> sa.BindParameter[str]:
    return sa.bindparam(None, value, type_=sa.Text)


def _get(column: sa.ColumnElement[Any], field: str) -> sa.ColumnElement[Any]:
    return column.op("->", return_type=JSONB)(_param(field))


def _get_text(column: sa.ColumnElement[Any], field: str) -> sa.ColumnElement[str]:
    return column.op("->>", return_type=sa.Text)(_param(field))


def _typeof(column: Any, field: str) -> sa.ColumnElement[str]:
    return sa.func.jsonb_typeof(_get(column, field), type_=sa.Text)


def _contains(column: sa.ColumnElement[Any], field: str, value: Any) -> Clause:
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


_PLACEHOLDER = re.compile(r"%\((\w+)\)s")


def compile_filter(metadata_filter: MetadataFilter | None, *, column: str = "metadata") -> tuple[str | None, dict[str, Any]]:
    """``(SQL, params)`` of a filter over the JSONB ``column`` with psycopg placeholders
    (``%(f_...)s``, every operand a bound parameter), for statements written as driver SQL;
    ``(None, {})`` without a filter. Pure, and linear in the filter's size (the placeholders
    are renamed in one pass)."""
    if not metadata_filter:
        return None, {}
    from sqlalchemy.dialects.postgresql.psycopg import dialect

    clause = filter_clause(sa.column(column, JSONB), metadata_filter)
    compiled = clause.compile(dialect=dialect(), compile_kwargs={"render_postcompile": True})  # type: ignore[no-untyped-call]
    sql = _PLACEHOLDER.sub(lambda m: f"%(f_{m.group(1)})s", str(compiled))
    return sql, {f"f_{name}": value for name, value in compiled.params.items()}
