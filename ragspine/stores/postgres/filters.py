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

The semantics are ``docs/concepts.md`` "Metadata filters", exactly as
:meth:`MetadataFilter.matches` computes them:

* ``eq v`` / ``in`` use JSONB containment (``metadata @> '{"f": v}'``; ``in``:
  ``metadata @> ANY(ARRAY(SELECT jsonb_array_elements(:objs)))``, one bound JSON array of such
  objects): the key must be
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
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB

from ragspine.deadline import check as check_deadline
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
    """``column @> ANY(ARRAY(SELECT jsonb_array_elements(CAST(:objs AS jsonb))))``: the
    containment of ``eq`` for each operand that can equal a present, non-null value, the
    operands bound as one JSON array (an uncorrelated sub-select: read once per statement).
    Its size does not grow with the operands: an OR of one containment per operand made an
    ``in`` of 1,000 values 1,000 operators, built and compiled for each library a request
    searched (~0.5 s each)."""
    usable = [{field: v} for v in values if v is not None and pg_storable(v)]
    if not usable:
        return sa.false()
    objs = sa.select(sa.func.jsonb_array_elements(sa.cast(_param(json.dumps(usable, ensure_ascii=False, allow_nan=False)), JSONB)))
    contained: Clause = column.op("@>", return_type=sa.Boolean)(sa.any_(sa.func.array(objs.scalar_subquery())))
    return contained


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


def condition_clause(column: sa.ColumnElement[Any], condition: FilterCondition) -> Clause:
    """One condition as SQL; a field name PostgreSQL cannot store is never present."""
    if not pg_storable(condition.field):
        return sa.false()
    return HANDLERS[condition.op](column, condition)


def filter_clause(column: sa.ColumnElement[Any], where: MetadataFilter | None) -> Clause:
    """The AND of ``where``'s conditions over the JSONB ``column`` (TRUE when no filter).

    Built once per filter and column *as SQL names it* (:data:`_BUILT`): the expression refers
    to the column by its rendered name (``"<table>".metadata``), so the stores of the libraries
    a request searches — one table per vector space, each store with its own ``Table`` object —
    share one expression instead of building it for each library."""
    if not where:
        return sa.true()
    name = _rendered(column)
    key = (name, filter_key(where))
    clause: Clause | None = _BUILT.get(key)
    if clause is None:
        check_deadline("building the filter")
        ref = sa.literal_column(name, JSONB)
        clause = sa.and_(*(condition_clause(ref, c) for c in where.conditions))
        _BUILT.put(key, clause)
    return clause


def _rendered(column: Any) -> str:
    """How PostgreSQL names ``column`` (``"Table".metadata``, ``schema.t.metadata``, ``metadata``)."""
    from sqlalchemy.dialects import postgresql

    return str(column.compile(dialect=postgresql.dialect()))  # type: ignore[no-untyped-call]


_PLACEHOLDER = re.compile(r"%\((\w+)\)s")


def compile_filter(metadata_filter: MetadataFilter | None, *, column: str = "metadata") -> tuple[str | None, dict[str, Any]]:
    """``(SQL, params)`` of a filter over the JSONB ``column`` with psycopg placeholders
    (``%(f_...)s``, every operand a bound parameter), for statements written as driver SQL;
    ``(None, {})`` without a filter. Pure, and linear in the filter's size (the placeholders
    are renamed in one pass); compiled once per filter (:data:`_COMPILED`: the libraries of a
    request share it), the params a fresh dict each call (callers add their own)."""
    if not metadata_filter:
        return None, {}
    key = (column, filter_key(metadata_filter))
    hit = _COMPILED.get(key)
    if hit is None:
        from sqlalchemy.dialects.postgresql.psycopg import dialect

        clause = filter_clause(sa.column(column, JSONB), metadata_filter)
        compiled = clause.compile(dialect=dialect(), compile_kwargs={"render_postcompile": True})  # type: ignore[no-untyped-call]
        sql = _PLACEHOLDER.sub(lambda m: f"%(f_{m.group(1)})s", str(compiled))
        hit = (sql, {f"f_{name}": value for name, value in compiled.params.items()})
        _COMPILED.put(key, hit)
    return hit[0], dict(hit[1])


def filter_key(where: MetadataFilter) -> str:
    """The filter as exact text: two filters with one key select the same rows. ``true``, ``1``
    and ``1.0`` stay apart (a tuple of Python values would not: ``True == 1 == 1.0``)."""
    return json.dumps([[c.field, c.op, list(c.value) if isinstance(c.value, tuple) else c.value] for c in where.conditions],
                      ensure_ascii=True, allow_nan=False)


class _Recent:
    """A small least-recently-used map shared by the threads of a process."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[Any, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Any) -> Any:
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def put(self, key: Any, value: Any) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)


#: built filter expressions, by (the column's SQL name, :func:`filter_key`)
_BUILT = _Recent(64)
#: compiled driver SQL and params, by (column name, :func:`filter_key`)
_COMPILED = _Recent(64)
