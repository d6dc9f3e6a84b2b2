"""Metadata filters: nine operators, AND-ed, narrowing only, the same answer on every backend.

Semantics (``docs/concepts.md`` "Metadata filters"):

* values are scalars: string, number (int and float are one kind), bool (its own kind), null;
* a missing field matches no condition, whatever the operator (``ne`` and ``nin`` too);
* ``eq v``: present, same kind, equal; ``eq null``: present and null;
* ``ne v``: present, not null, not ``eq v``; ``ne null``: present and not null;
* ``in``/``nin``: present, not null, equal to some/no element; ``in []`` matches nothing,
  ``nin []`` every present non-null value;
* ``gt gte lt lte`` and ``between [lo, hi]`` (inclusive): the operand is a number or a string
  (``between``: both ends of one kind); the field must be present and of that kind. Strings
  compare by Unicode code point; no date parsing;
* a malformed filter raises :class:`FilterError` at construction, before any I/O; a
  well-formed filter never raises because of the data.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Protocol, TypeAlias, TypeVar, Union, runtime_checkable

from ragspine.errors import FilterError
from ragspine.retrieval.metadata import check_field_name, value_kind

if TYPE_CHECKING:
    from ragspine.config import Settings

T = TypeVar("T")

OPERATORS = ("eq", "ne", "in", "nin", "gt", "gte", "lt", "lte", "between")
ORDERED_OPERATORS = ("gt", "gte", "lt", "lte")
_MISSING = object()


def _scalar_kind(value: object, what: str) -> str:
    try:
        kind = value_kind(value)
    except TypeError:
        raise FilterError(f"{what} must be a string, number, boolean or null, got {type(value).__name__}") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise FilterError(f"{what} must be a finite number, got {value}")
    return kind


def _ordered_kind(value: object, what: str) -> str:
    kind = _scalar_kind(value, what)
    if kind not in ("number", "string"):
        raise FilterError(f"{what} must be a number or a string, got {kind} {value!r}")
    return kind


@dataclass(frozen=True)
class FilterCondition:
    """``field op value``; validated on construction (raises :class:`FilterError`)."""

    field: str
    op: str
    value: Any = None

    def __post_init__(self) -> None:
        try:
            check_field_name(self.field)
        except ValueError as exc:
            raise FilterError(str(exc)) from None
        op = self.op.lower() if isinstance(self.op, str) else self.op
        if op not in OPERATORS:
            raise FilterError(
                f"unknown filter operator {self.op!r} on field {self.field!r}; "
                f"use one of {', '.join(OPERATORS)}"
            )
        object.__setattr__(self, "op", op)
        where = f"operand of {self.field!r} {op}"
        if op in ("eq", "ne"):
            _scalar_kind(self.value, where)
        elif op in ("in", "nin"):
            if isinstance(self.value, (str, bytes)) or not isinstance(self.value, (list, tuple)):
                raise FilterError(f"{where} must be a list of values, e.g. [\"en\", \"zh\"], got {self.value!r}")
            for item in self.value:
                _scalar_kind(item, f"element of {where}")
            object.__setattr__(self, "value", tuple(self.value))
        elif op in ORDERED_OPERATORS:
            _ordered_kind(self.value, where)
        else:  # between
            if isinstance(self.value, (str, bytes)) or not isinstance(self.value, (list, tuple)) or len(self.value) != 2:
                raise FilterError(f"{where} must be a list of two ends [lo, hi], got {self.value!r}")
            lo, hi = self.value
            if _ordered_kind(lo, where) != _ordered_kind(hi, where):
                raise FilterError(f"{where} must have both ends of one type, got {lo!r} and {hi!r}")
            object.__setattr__(self, "value", (lo, hi))

    @property
    def operand_kind(self) -> str:
        """The kind (``number``/``string``/...) an ordered or ``eq`` condition compares as."""
        value = self.value[0] if self.op == "between" else self.value
        return value_kind(value) if self.op not in ("in", "nin") else "list"

    def matches(self, metadata: Mapping[str, Any]) -> bool:
        value = metadata.get(self.field, _MISSING)
        if value is _MISSING:
            return False
        op = self.op
        if op == "eq":
            return _equal(value, self.value)
        if value is None:
            return False
        if op == "ne":
            return self.value is None or not _equal(value, self.value)
        if op == "in":
            return any(_equal(value, item) for item in self.value)
        if op == "nin":
            return not any(_equal(value, item) for item in self.value)
        kind = self.operand_kind
        if _kind_or_none(value) != kind:
            return False
        if op == "between":
            lo, hi = self.value
            return bool(lo <= value <= hi)
        return _COMPARE[op](value, self.value)

    def to_dict(self) -> dict[str, Any]:
        value = list(self.value) if isinstance(self.value, tuple) else self.value
        return {"field": self.field, "op": self.op, "value": value}


_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "gt": lambda a, b: a > b,
    "gte": lambda a, b: a >= b,
    "lt": lambda a, b: a < b,
    "lte": lambda a, b: a <= b,
}


def _kind_or_none(value: object) -> str | None:
    try:
        return value_kind(value)
    except TypeError:
        return None


def _equal(value: object, operand: object) -> bool:
    kind = _kind_or_none(value)
    if kind is None or kind != _kind_or_none(operand):
        return False
    return value == operand


@dataclass(frozen=True)
class MetadataFilter:
    """An AND of :class:`FilterCondition`; ``apply`` returns an order-preserving subsequence."""

    conditions: tuple[FilterCondition, ...] = ()

    def __post_init__(self) -> None:
        conds = tuple(self.conditions)
        for cond in conds:
            if not isinstance(cond, FilterCondition):
                raise FilterError(f"a MetadataFilter holds FilterConditions, got {cond!r}")
        object.__setattr__(self, "conditions", conds)

    def __bool__(self) -> bool:
        return bool(self.conditions)

    def __len__(self) -> int:
        return len(self.conditions)

    def matches(self, metadata: Mapping[str, Any]) -> bool:
        return all(cond.matches(metadata) for cond in self.conditions)

    def apply(self, items: Iterable[T], key: Callable[[T], Mapping[str, Any]] | None = None) -> list[T]:
        get = key or metadata_of
        return [item for item in items if self.matches(get(item))]

    def and_(self, other: "MetadataFilter | None") -> "MetadataFilter":
        """Both filters at once (a conjunction can only narrow)."""
        if not other:
            return self
        return MetadataFilter(self.conditions + other.conditions)

    def to_list(self) -> list[dict[str, Any]]:
        return [c.to_dict() for c in self.conditions]

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(c.field for c in self.conditions))


@runtime_checkable
class HasMetadata(Protocol):
    """A chunk (or anything with a metadata mapping)."""

    @property
    def metadata(self) -> Mapping[str, Any]: ...


@runtime_checkable
class HasChunk(Protocol):
    """A retrieval result (its chunk has the metadata)."""

    @property
    def chunk(self) -> HasMetadata: ...


def metadata_of(item: Any) -> Mapping[str, Any]:
    """The metadata mapping of a chunk, a result (``.chunk``) or a plain mapping."""
    if isinstance(item, HasChunk):
        return item.chunk.metadata
    if isinstance(item, HasMetadata):
        return item.metadata
    if isinstance(item, Mapping):
        return item
    raise FilterError(f"cannot read metadata from {type(item).__name__}")


@dataclass(frozen=True)
class FilterLimits:
    """How large a filter may be: every backend's work grows with it, so an edge that takes
    filters from the outside bounds them (``RAGSPINE_MAX_FILTER_CONDITIONS`` /
    ``RAGSPINE_MAX_FILTER_VALUES`` in the CLI and the service)."""

    max_conditions: int = 64
    max_values: int = 1024  # operands of all conditions together (an ``in`` list counts each element)

    @classmethod
    def from_settings(cls, settings: Settings) -> FilterLimits:
        """The limits an edge applies to filters from outside (``RAGSPINE_MAX_FILTER_*``)."""
        return cls(settings.max_filter_conditions, settings.max_filter_values)

    def check(self, metadata_filter: MetadataFilter) -> MetadataFilter:
        n = len(metadata_filter.conditions)
        if n > self.max_conditions:
            raise FilterTooLarge(
                f"the filter has {n} conditions; the limit is {self.max_conditions} (RAGSPINE_MAX_FILTER_CONDITIONS)"
            )
        values = sum(len(c.value) if c.op in ("in", "nin", "between") else 1 for c in metadata_filter.conditions)
        if values > self.max_values:
            raise FilterTooLarge(
                f"the filter has {values} operand values; the limit is {self.max_values} (RAGSPINE_MAX_FILTER_VALUES)"
            )
        return metadata_filter


class FilterTooLarge(FilterError):
    """A well-formed filter over the size limits (:class:`FilterLimits`)."""


DEFAULT_FILTER_LIMITS = FilterLimits()

#: A filter in any form :func:`parse_filter` reads: ``None``, a :class:`MetadataFilter`, the dict
#: form or the list form (of condition dicts, ``(field, op, value)`` tuples or conditions).
FilterSpec: TypeAlias = Union[MetadataFilter, Mapping[str, Any], list[Any], tuple[Any, ...], None]


def parse_filter(spec: Any, *, limits: FilterLimits | None = DEFAULT_FILTER_LIMITS) -> MetadataFilter | None:
    """Build a :class:`MetadataFilter` from one of:

    * ``None`` or an empty dict/list → ``None`` (no filter);
    * a ``MetadataFilter`` (returned as is);
    * the dict form ``{"entity": "ACME", "year": {"gte": 2020, "lte": 2023}}`` — a bare
      value means ``eq``, an operator dict adds one condition per operator;
    * the list form ``[{"field": "year", "op": "gte", "value": 2020}, ...]`` or
      ``[("year", "gte", 2020), ...]``.

    A filter over ``limits`` (default :data:`DEFAULT_FILTER_LIMITS`; ``None``: unbounded)
    raises :class:`FilterTooLarge` — counted on the input first, before any condition is built.
    """
    if spec is None:
        return None
    if isinstance(spec, MetadataFilter):
        return (limits.check(spec) if limits is not None else spec) or None
    if limits is not None and isinstance(spec, (Mapping, list, tuple)):
        rough = sum(len(r) if isinstance(r, Mapping) else 1 for r in spec.values()) if isinstance(spec, Mapping) else len(spec)
        if rough > limits.max_conditions:
            raise FilterTooLarge(
                f"the filter has {rough} conditions; the limit is {limits.max_conditions} (RAGSPINE_MAX_FILTER_CONDITIONS)"
            )
        values = _rough_values(spec)  # before each operand is checked: an in-list of 2,000,000 values took 0.4 s
        if values > limits.max_values:
            raise FilterTooLarge(
                f"the filter has {values} operand values; the limit is {limits.max_values} (RAGSPINE_MAX_FILTER_VALUES)"
            )
    conditions: list[FilterCondition] = []
    if isinstance(spec, Mapping):
        for field, rule in spec.items():
            if isinstance(rule, Mapping):
                if not rule:
                    raise FilterError(f"filter on {field!r} has no operator; use e.g. {{'eq': value}}")
                conditions.extend(FilterCondition(field, op, value) for op, value in rule.items())
            elif isinstance(rule, (list, tuple)):
                raise FilterError(
                    f"filter on {field!r} is a list; say {{'in': [...]}} or {{'between': [lo, hi]}}"
                )
            else:
                conditions.append(FilterCondition(field, "eq", rule))
    elif isinstance(spec, (list, tuple)):
        for item in spec:
            if isinstance(item, FilterCondition):
                conditions.append(item)
            elif isinstance(item, Mapping):
                unknown = set(item) - {"field", "op", "value"}
                if unknown or "field" not in item or "op" not in item:
                    raise FilterError(
                        f"a filter condition needs keys field, op, value; got {sorted(item)}"
                    )
                conditions.append(FilterCondition(item["field"], item["op"], item.get("value")))
            elif isinstance(item, (list, tuple)) and len(item) == 3:
                conditions.append(FilterCondition(*item))
            else:
                raise FilterError(f"cannot read filter condition {item!r}; use {{field, op, value}}")
    else:
        raise FilterError(f"a filter is a dict or a list of conditions, got {type(spec).__name__}")
    if not conditions:
        return None
    built = MetadataFilter(tuple(conditions))
    return limits.check(built) if limits is not None else built


def _rough_values(spec: Mapping[str, Any] | list[Any] | tuple[Any, ...]) -> int:
    """The operand values of an unparsed filter, counted as :meth:`FilterLimits.check` counts
    them (a list operand: each element) — without checking any."""
    def count(value: Any) -> int:
        return len(value) if isinstance(value, (list, tuple)) else 1

    if isinstance(spec, Mapping):
        return sum(sum(count(v) for v in rule.values()) if isinstance(rule, Mapping) else 1 for rule in spec.values())
    total = 0
    for item in spec:
        if isinstance(item, Mapping):
            total += count(item.get("value"))
        elif isinstance(item, (list, tuple)) and len(item) == 3:
            total += count(item[2])
        else:
            total += 1
    return total


def combine_filters(metadata_filter: FilterSpec = None, fields: Mapping[str, Any] | None = None) -> MetadataFilter | None:
    """The Python API's edge: the user's filter (any form :func:`parse_filter` reads) AND the
    seed's keyword pre-filters (``topic=``, ``entity=``, ...), parsed once."""
    from ragspine.retrieval.metadata import STANDARD_FIELDS

    filt = parse_filter(metadata_filter)
    extra = {k: v for k, v in (fields or {}).items() if v is not None}
    unknown = set(extra) - set(STANDARD_FIELDS)
    if unknown:
        raise TypeError(f"unexpected keyword(s) {', '.join(sorted(unknown))}; use metadata_filter=")
    more = parse_filter(extra) if extra else None
    if filt and more:
        return filt.and_(more)
    return filt or more
