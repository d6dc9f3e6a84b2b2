"""Metadata filter semantics, row by row from ``docs/concepts.md`` "Metadata filters"."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragspine.errors import FilterError
from ragspine.retrieval.filtering import (
    OPERATORS,
    FilterCondition,
    MetadataFilter,
    metadata_of,
    parse_filter,
)
from tests.helpers import make_chunk

META: dict[str, Any] = {
    "s": "apple",
    "n": 10,
    "f": 2.5,
    "t": True,
    "b": False,
    "z": None,
    "one": 1,
    "date": "2024-09-30",
    "a.b": "dotted",
}


def m(field: str, op: str, value: Any, meta: dict[str, Any] | None = None) -> bool:
    return FilterCondition(field, op, value).matches(META if meta is None else meta)


def test_the_nine_operators() -> None:
    assert OPERATORS == ("eq", "ne", "in", "nin", "gt", "gte", "lt", "lte", "between")


@pytest.mark.parametrize("op, value", [
    ("eq", "x"), ("eq", None), ("ne", "x"), ("ne", None), ("in", ["x", None]), ("nin", ["x"]),
    ("nin", []), ("gt", 0), ("gte", ""), ("lt", "zzz"), ("lte", 10**9), ("between", [-1e9, 1e9]),
])
def test_a_missing_field_never_matches(op: str, value: Any) -> None:
    assert not m("absent", op, value)
    assert not m("absent", op, value, {})


@pytest.mark.parametrize("field, value, expected", [
    ("s", "apple", True), ("s", "Apple", False), ("s", "apple ", False),
    ("n", 10, True), ("n", 10.0, True), ("n", "10", False), ("n", 11, False),
    ("one", True, False),  # bool is its own kind: True is not 1
    ("t", 1, False), ("t", True, True), ("t", False, False), ("b", 0, False), ("b", False, True),
    ("z", None, True), ("s", None, False), ("n", None, False), ("b", None, False),
    ("f", 2.5, True), ("a.b", "dotted", True),
])
def test_eq(field: str, value: Any, expected: bool) -> None:
    assert m(field, "eq", value) is expected


@pytest.mark.parametrize("field, value, expected", [
    ("s", "pear", True), ("s", "apple", False),
    ("n", "10", True),  # a different kind is "not equal"
    ("n", 10.0, False), ("n", 11, True),
    ("one", True, True), ("t", 1, True), ("t", True, False),
    ("z", "x", False),  # ne v: the field must be non-null
    ("z", None, False),  # ne null: present and not null
    ("s", None, True), ("b", None, True), ("n", None, True),
])
def test_ne(field: str, value: Any, expected: bool) -> None:
    assert m(field, "ne", value) is expected


@pytest.mark.parametrize("field, values, expected", [
    ("s", ["pear", "apple"], True), ("s", ["pear"], False), ("s", [], False),
    ("n", [1, 10.0], True), ("n", ["10"], False), ("one", [True], False), ("t", [1], False),
    ("t", [True, "x"], True), ("z", [None], False), ("z", [None, "x"], False),
])
def test_in(field: str, values: list, expected: bool) -> None:
    assert m(field, "in", values) is expected
    assert m(field, "in", tuple(values)) is expected


@pytest.mark.parametrize("field, values, expected", [
    ("s", ["pear"], True), ("s", ["pear", "apple"], False), ("s", [], True),
    ("n", ["10"], True), ("n", [10.0], False), ("one", [True], True), ("t", [1], True),
    ("z", [], False), ("z", ["x"], False), ("z", [None], False),  # null never matches nin
    ("b", [], True), ("f", [], True),
])
def test_nin(field: str, values: list, expected: bool) -> None:
    assert m(field, "nin", values) is expected


@pytest.mark.parametrize("field, op, value, expected", [
    ("n", "gt", 9, True), ("n", "gt", 10, False), ("n", "gte", 10, True), ("n", "gte", 10.0, True),
    ("n", "lt", 10.5, True), ("n", "lt", 10, False), ("n", "lte", 10, True), ("f", "lt", 3, True),
    ("s", "gt", "apple", False), ("s", "gte", "apple", True), ("s", "gt", "Zebra", True),  # "Z" < "a"
    ("s", "lt", "b", True), ("s", "lt", "B", False),
    ("date", "gte", "2024-09-01", True), ("date", "lt", "2024-10-01", True), ("date", "gt", "2024-9-30", False),
    # wrong-kind fields never match an ordered condition
    ("s", "gt", 0, False), ("s", "lt", 10**9, False), ("n", "gt", "0", False), ("n", "lt", "zzz", False),
    ("t", "gt", 0, False), ("t", "gte", 1, False), ("b", "lt", 1, False), ("b", "lte", 0, False),
    ("z", "gt", 0, False), ("z", "lt", "z", False),
])
def test_ordered_operators(field: str, op: str, value: Any, expected: bool) -> None:
    assert m(field, op, value) is expected


def test_strings_compare_by_code_point() -> None:
    meta = {"w": "é"}  # U+00E9 sorts after "z" by code point (a locale would put it near "e")
    assert m("w", "gt", "z", meta)
    assert not m("w", "lt", "f", meta)
    assert m("w", "between", ["z", "ö"], meta)
    assert m("w", "lt", "中", meta)
    assert m("u", "gt", "Z", {"u": "a"})  # "Z" (U+005A) < "a" (U+0061)
    assert m("u", "lt", "a", {"u": "Z"})
    assert m("u", "gt", "abc", {"u": "abd"}) and m("u", "gt", "ab", {"u": "abc"})


@pytest.mark.parametrize("field, bounds, expected", [
    ("n", [10, 10], True), ("n", [1, 10], True), ("n", [10, 20], True), ("n", [10.5, 20], False),
    ("n", [1.5, 10.0], True), ("n", [20, 1], False),  # an empty range
    ("f", [2, 3], True), ("s", ["apple", "apple"], True), ("s", ["a", "b"], True), ("s", ["b", "c"], False),
    ("s", [0, 100], False), ("n", ["0", "9"], False), ("t", [0, 1], False), ("z", [0, 1], False),
    ("date", ["2024-01-01", "2024-12-31"], True),
])
def test_between_is_inclusive_and_kind_checked(field: str, bounds: list, expected: bool) -> None:
    assert m(field, "between", bounds) is expected
    assert m(field, "between", tuple(bounds)) is expected


def test_conditions_are_anded() -> None:
    f = MetadataFilter((FilterCondition("s", "eq", "apple"), FilterCondition("n", "gte", 5)))
    assert f.matches(META)
    assert not f.matches({**META, "n": 4})
    assert not f.matches({"n": 10})
    assert MetadataFilter().matches({}) and not MetadataFilter()
    assert len(f) == 2 and f.fields == ("s", "n")
    combined = f.and_(MetadataFilter((FilterCondition("t", "eq", True),)))
    assert len(combined) == 3 and not combined.matches({**META, "t": False})
    assert f.and_(None) is f and f.and_(MetadataFilter()) is f


def test_operator_names_are_case_insensitive_and_normalized() -> None:
    cond = FilterCondition("n", "GTE", 5)
    assert cond.op == "gte" and cond.matches(META)


@pytest.mark.parametrize("field, op, value", [
    ("n", "like", "x"), ("n", "==", 1), ("n", None, 1), ("n", "", 1),  # unknown operators
    ("n", "in", "abc"), ("n", "in", 5), ("n", "nin", None), ("n", "in", {"a"}), ("n", "nin", b"ab"),
    ("n", "in", [[1]]), ("n", "in", [{"a": 1}]),  # elements must be scalars
    ("n", "between", [1]), ("n", "between", [1, 2, 3]), ("n", "between", 5), ("n", "between", "ab"),
    ("n", "between", [1, "2"]), ("n", "between", [None, 2]), ("n", "between", [True, False]),
    ("n", "between", [1, None]),
    ("n", "gt", True), ("n", "gte", None), ("n", "lt", [1]), ("n", "lte", {"a": 1}), ("n", "gt", False),
    ("n", "gt", float("nan")), ("n", "eq", float("inf")),
    ("n", "eq", [1]), ("n", "ne", {"a": 1}),
    ("", "eq", 1), ("x" * 257, "eq", 1), (None, "eq", 1), (5, "eq", 1),
])
def test_malformed_conditions_raise_filter_error(field: Any, op: Any, value: Any) -> None:
    with pytest.raises(FilterError):
        FilterCondition(field, op, value)


def test_field_names_up_to_256_chars_are_literal_keys() -> None:
    name = "k" * 256
    assert FilterCondition(name, "eq", 1).matches({name: 1})
    assert FilterCondition("a.b", "eq", "dotted").matches(META)
    assert not FilterCondition("a.b", "eq", "dotted").matches({"a": {"b": "dotted"}})
    assert FilterCondition("x'; DROP TABLE t; --", "eq", 1).matches({"x'; DROP TABLE t; --": 1})


def test_filter_error_is_a_value_error() -> None:
    assert issubclass(FilterError, ValueError)


def test_metadata_filter_rejects_non_conditions() -> None:
    with pytest.raises(FilterError):
        MetadataFilter(({"field": "n", "op": "eq", "value": 1},))  # type: ignore[arg-type]


# -- parse_filter -----------------------------------------------------------------------------
def test_parse_filter_empty_forms() -> None:
    assert parse_filter(None) is None
    assert parse_filter({}) is None
    assert parse_filter([]) is None
    assert parse_filter(MetadataFilter()) is None
    f = MetadataFilter((FilterCondition("n", "eq", 1),))
    assert parse_filter(f) is f
    assert parse_filter(f) is f


def test_parse_filter_dict_form() -> None:
    f = parse_filter({"entity": "ACME", "year": {"gte": 2020, "lte": 2023}, "z": None, "tag": {"in": ["a", "b"]}})
    assert f is not None
    assert f.to_list() == [
        {"field": "entity", "op": "eq", "value": "ACME"},
        {"field": "year", "op": "gte", "value": 2020},
        {"field": "year", "op": "lte", "value": 2023},
        {"field": "z", "op": "eq", "value": None},
        {"field": "tag", "op": "in", "value": ["a", "b"]},
    ]
    assert f.matches({"entity": "ACME", "year": 2021, "z": None, "tag": "b"})
    assert not f.matches({"entity": "ACME", "year": 2024, "z": None, "tag": "b"})


def test_parse_filter_list_forms() -> None:
    dicts = parse_filter([{"field": "year", "op": "gte", "value": 2020}, {"field": "z", "op": "eq"}])
    tuples = parse_filter([("year", "gte", 2020), ("z", "eq", None)])
    mixed = parse_filter([FilterCondition("year", "gte", 2020), ["z", "eq", None]])
    assert dicts == tuples == mixed
    assert dicts is not None and dicts.to_list()[1] == {"field": "z", "op": "eq", "value": None}
    # to_list round-trips
    assert parse_filter(dicts.to_list()) == dicts


@pytest.mark.parametrize("spec", [
    {"year": {}},  # no operator
    {"year": [2020, 2021]},  # a bare list is ambiguous
    {"year": {"approx": 2020}},
    {"": 1},
    [{"field": "year", "op": "gte", "value": 1, "extra": 1}],
    [{"op": "eq", "value": 1}],
    [{"field": "year", "value": 1}],
    [("year", "eq")],
    ["year"],
    [42],
    "year = 2020",
    42,
])
def test_parse_filter_rejects_malformed_specs(spec: Any) -> None:
    with pytest.raises(FilterError):
        parse_filter(spec)


# -- apply ---------------------------------------------------------------------------------------
@dataclass
class _Result:
    chunk: Any
    score: float = 0.0


@dataclass
class _WithMeta:
    metadata: dict = field(default_factory=dict)


def test_apply_is_an_order_preserving_subsequence_over_many_item_kinds() -> None:
    f = MetadataFilter((FilterCondition("year", "gte", 2022),))
    chunks = [make_chunk(f"d{i}", 0, "t", metadata={"year": 2019 + i}) for i in range(6)]
    assert [c.doc_id for c in f.apply(chunks)] == ["d3", "d4", "d5"]
    results = [_Result(c) for c in reversed(chunks)]
    assert [r.chunk.doc_id for r in f.apply(results)] == ["d5", "d4", "d3"]
    dicts = [{"year": 2023}, {"year": 2020}, {}, {"year": 2022}]
    assert f.apply(dicts) == [{"year": 2023}, {"year": 2022}]
    assert f.apply([_WithMeta({"year": 2030}), _WithMeta()])[0].metadata == {"year": 2030}
    assert f.apply(iter(dicts)) == [{"year": 2023}, {"year": 2022}]  # any iterable
    assert f.apply([("a", 2023), ("b", 2000)], key=lambda t: {"year": t[1]}) == [("a", 2023)]
    assert MetadataFilter().apply(dicts) == dicts
    with pytest.raises(FilterError):
        metadata_of(42)


# -- property: well-formed filters never raise because of the data ------------------------------
_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 5), st.floats(-5, 5, allow_nan=False), st.sampled_from(["", "a", "B", "é", "10", "2024-09-30"])
)
_FIELDS = ["a", "b", "c", "a.b"]
_metadata = st.dictionaries(st.sampled_from(_FIELDS), _scalars, max_size=4)
_ordered = st.one_of(st.integers(-5, 5), st.floats(-5, 5, allow_nan=False), st.sampled_from(["", "a", "B", "é"]))


@st.composite
def _conditions(draw: st.DrawFn) -> FilterCondition:
    fname = draw(st.sampled_from(_FIELDS))
    op = draw(st.sampled_from(OPERATORS))
    if op in ("eq", "ne"):
        value: Any = draw(_scalars)
    elif op in ("in", "nin"):
        value = draw(st.lists(_scalars, max_size=4))
    elif op == "between":
        lo = draw(_ordered)
        hi = draw(st.integers(-5, 5) if isinstance(lo, (int, float)) else st.sampled_from(["", "a", "z", "é"]))
        value = [lo, hi]
    else:
        value = draw(_ordered)
    return FilterCondition(fname, op, value)


def _oracle(cond: FilterCondition, meta: dict[str, Any]) -> bool:
    """An independent reading of the documented semantics."""
    if cond.field not in meta:
        return False
    v = meta[cond.field]

    def kind(x: Any) -> str:
        return "null" if x is None else "bool" if isinstance(x, bool) else "number" if isinstance(x, (int, float)) else "string"

    def eq(x: Any, y: Any) -> bool:
        return kind(x) == kind(y) and x == y

    if cond.op == "eq":
        return eq(v, cond.value)
    if v is None:
        return False
    if cond.op == "ne":
        return cond.value is None or not eq(v, cond.value)
    if cond.op == "in":
        return any(eq(v, x) for x in cond.value)
    if cond.op == "nin":
        return not any(eq(v, x) for x in cond.value)
    operand = cond.value[0] if cond.op == "between" else cond.value
    if kind(v) != kind(operand):
        return False
    if cond.op == "between":
        return cond.value[0] <= v <= cond.value[1]
    return {"gt": v > operand, "gte": v >= operand, "lt": v < operand, "lte": v <= operand}[cond.op]


@settings(max_examples=150, deadline=None)
@given(st.lists(_metadata, max_size=12), st.lists(_conditions(), max_size=3))
def test_well_formed_filters_never_raise_and_apply_is_a_subsequence(items: list[dict], conds: list[FilterCondition]) -> None:
    f = MetadataFilter(tuple(conds))
    kept = f.apply(items)
    it = iter(range(len(items)))
    positions = []
    for k in kept:  # a subsequence, in order, by identity
        positions.append(next(i for i in it if items[i] is k))
    assert positions == sorted(positions)
    assert len(kept) == sum(all(_oracle(c, meta) for c in conds) for meta in items)
    for meta in items:
        assert f.matches(meta) == all(_oracle(c, meta) for c in conds)
    assert parse_filter(f.to_list()) == (f or None)
