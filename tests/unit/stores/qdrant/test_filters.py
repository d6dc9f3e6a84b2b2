"""The pure MetadataFilter → Qdrant filter translation (no client, no I/O)."""

from __future__ import annotations

import pytest

from tests.helpers import needs

needs("qdrant_client")

from qdrant_client.http import models  # noqa: E402

from ragspine.retrieval.filtering.filters import (  # noqa: E402
    OPERATORS,
    FilterCondition,
    MetadataFilter,
)
from ragspine.stores.qdrant import filters as qf  # noqa: E402

WEIRD_NAMES = [
    "a.b",
    "x[0]",
    "x[]",
    'q"uote',
    "it's",
    "--",
    "m.f00",
    "library_id",
    " spaced key ",
    "ü日本😀",
    "$.path",
    "z" * 256,
    "é" * 256,
]


def f(*conds: tuple) -> MetadataFilter:
    return MetadataFilter(tuple(FilterCondition(*c) for c in conds))


def only(translated: qf.QdrantFilter):
    assert not translated.never and not translated.python and len(translated.native) == 1
    return translated.native[0]


@pytest.mark.parametrize("name", WEIRD_NAMES)
def test_field_names_encode_to_literal_keys_and_round_trip(name):
    key = qf.encode_field(name)
    assert key[0] == "f" and set(key[1:]) <= set("0123456789abcdef")
    assert qf.decode_field(key) == name
    assert qf.field_key(name) == "m." + key
    meta = {name: 1, "plain": None}
    assert qf.decode_metadata(qf.encode_metadata(meta)) == meta


def test_distinct_names_never_share_a_key():
    names = WEIRD_NAMES + ["a", "A", "a.b.", "ab", "a\u0301", "á"]
    assert len({qf.encode_field(n) for n in names}) == len(names)


def test_no_filter_is_no_condition():
    assert qf.translate(None) == qf.QdrantFilter()
    assert qf.translate(MetadataFilter()) == qf.QdrantFilter()
    flt = qf.translate(None).to_filter(qf.library_condition("lib"))
    assert flt.must == [qf.library_condition("lib")]


def test_every_operator_has_a_handler():
    assert set(qf._HANDLERS) == set(OPERATORS)


def test_eq_is_type_aware():
    key = qf.field_key("k")
    assert only(qf.translate(f(("k", "eq", "10")))) == models.FieldCondition(
        key=key, match=models.MatchValue(value="10")
    )
    assert only(qf.translate(f(("k", "eq", True)))) == models.FieldCondition(
        key=key, match=models.MatchValue(value=True)
    )
    # numbers: a Range, so int 1 and float 1.0 are one kind (MatchValue never matches floats)
    assert only(qf.translate(f(("k", "eq", 1)))) == models.FieldCondition(key=key, range=models.Range(gte=1, lte=1))
    assert only(qf.translate(f(("k", "eq", 2.5)))) == models.FieldCondition(
        key=key, range=models.Range(gte=2.5, lte=2.5)
    )
    assert only(qf.translate(f(("k", "eq", None)))) == models.IsNullCondition(is_null=models.PayloadField(key=key))


def test_ne_requires_presence():
    key = qf.field_key("k")
    present = models.IsEmptyCondition(is_empty=models.PayloadField(key=key))
    assert only(qf.translate(f(("k", "ne", None)))) == models.Filter(must_not=[present])
    assert only(qf.translate(f(("k", "ne", "x")))) == models.Filter(
        must_not=[present, models.FieldCondition(key=key, match=models.MatchValue(value="x"))]
    )


def test_in_and_nin():
    key = qf.field_key("k")
    present = models.IsEmptyCondition(is_empty=models.PayloadField(key=key))
    assert qf.translate(f(("k", "in", []))).never
    assert qf.translate(f(("k", "in", [None]))).never
    assert qf.translate(f(("k", "eq", 1), ("k", "in", []))).never
    mixed = only(qf.translate(f(("k", "in", ["a", 1, True, None, "b", 1.0]))))
    assert mixed == models.Filter(
        should=[
            models.FieldCondition(key=key, match=models.MatchAny(any=["a", "b"])),
            models.FieldCondition(key=key, range=models.Range(gte=1, lte=1)),
            models.FieldCondition(key=key, match=models.MatchValue(value=True)),
        ]
    )
    assert only(qf.translate(f(("k", "in", ["a"])))) == models.FieldCondition(
        key=key, match=models.MatchAny(any=["a"])
    )
    assert only(qf.translate(f(("k", "nin", [])))) == models.Filter(must_not=[present])
    assert only(qf.translate(f(("k", "nin", [None, False])))) == models.Filter(
        must_not=[present, models.FieldCondition(key=key, match=models.MatchValue(value=False))]
    )


def test_ordered_numbers_are_ranges():
    key = qf.field_key("k")
    for op in ("gt", "gte", "lt", "lte"):
        assert only(qf.translate(f(("k", op, 3)))) == models.FieldCondition(key=key, range=models.Range(**{op: 3}))
    assert only(qf.translate(f(("k", "between", [1, 2.5])))) == models.FieldCondition(
        key=key, range=models.Range(gte=1, lte=2.5)
    )
    assert qf.translate(f(("k", "between", [3, 1]))).never


def test_string_ranges_and_huge_numbers_go_to_the_python_phase():
    where = f(
        ("s", "gte", "b"), ("n", "eq", 2**53), ("x", "in", [1, -(2**60)]), ("t", "eq", "b"),
        ("s", "between", ["a", "c"]),
    )
    translated = qf.translate(where)
    assert [c.field for c in translated.python] == ["s", "n", "x", "s"]
    assert len(translated.native) == 1
    enc = qf.encode_metadata
    assert translated.matches_python(enc({"s": "bb", "n": 2**53, "x": -(2**60)}))
    assert not translated.matches_python(enc({"s": "bb", "n": 2**53 + 1, "x": -(2**60)}))
    assert not translated.matches_python(enc({"s": 5, "n": 2**53, "x": 1}))
    assert not translated.matches_python(enc({"n": 2**53, "x": 1}))  # missing never matches
    assert not translated.matches_python(None)
    assert qf.translate(f(("n", "lt", 2**53 - 1))).python == ()


def test_conditions_are_anded_after_the_library():
    where = f(("a", "eq", "x"), ("b", "gt", 1))
    flt = qf.translate(where).to_filter(qf.library_condition("lib"))
    assert flt.must[0] == qf.library_condition("lib") and len(flt.must) == 3
    assert flt.should is None and flt.must_not is None


def test_never_filter_is_a_contradiction():
    flt = qf.QdrantFilter(never=True).to_filter(qf.library_condition("lib"))
    assert flt.must[-1] in flt.must_not


@pytest.mark.parametrize("name", WEIRD_NAMES)
def test_keys_never_contain_the_raw_field_name(name):
    translated = qf.translate(f((name, "eq", "v"), (name, "ne", 1), (name, "in", ["a", 2]), (name, "gte", 0)))
    text = repr(translated.native)
    assert name not in text
    assert qf.field_key(name) in text
