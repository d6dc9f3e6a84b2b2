"""The glossary's relation fields: an entity's ``parent``, a metric's ``derived_from``."""

from __future__ import annotations

import pytest

from ragspine.errors import ConfigError
from ragspine.structured.glossary import Glossary


def glossary(entities: dict, metrics: dict | None = None) -> Glossary:
    return Glossary.from_mapping({"entities": entities, "metrics": metrics or {}}, "g.yaml")


def test_the_default_glossary_declares_the_groups_subsidiaries_and_a_derived_metric() -> None:
    g = Glossary.default()
    assert {k: t.parent for k, t in g.terms["entities"].items()} == {"KESTREL": "", "KESTREL_CN": "KESTREL", "KESTREL_JP": "KESTREL"}
    assert g.terms["metrics"]["operating_margin"].inputs == ("operating_profit", "revenue")
    assert g.metric("营业利润率").key == "operating_margin"  # type: ignore[union-attr]


def test_relations_are_optional_and_keys_only() -> None:
    g = glossary({"A": {"en": ["Alpha"]}, "B": {"en": ["Beta"], "parent": "A"}}, {"m": {"en": ["m"]}, "r": {"derived_from": ["m"]}})
    assert g.terms["entities"]["B"].parent == "A" and g.terms["entities"]["A"].parent == ""
    assert g.terms["metrics"]["r"].inputs == ("m",) and g.terms["metrics"]["m"].inputs == ()
    with pytest.raises(ConfigError, match=r"entities.B.parent names 'Alpha', which is no key of entities"):
        glossary({"A": {"en": ["Alpha"]}, "B": {"parent": "Alpha"}})  # a form is not a key


@pytest.mark.parametrize(
    ("entities", "metrics", "message"),
    [
        ({"A": {"parent": "A"}}, {}, r"entities.A.parent names itself"),
        ({"A": {"parent": "Z"}}, {}, r"entities.A.parent names 'Z', which is no key of entities"),
        ({"A": {"parent": "B"}, "B": {"parent": "C"}, "C": {"parent": "A"}}, {}, r"entities parent closes a cycle: A -> B -> C -> A"),
        ({"A": {"parent": ["B"]}}, {}, r"parent must be the key of an entity"),
        ({}, {"m": {"derived_from": ["m"]}}, r"metrics.m.derived_from names itself"),
        ({}, {"m": {"derived_from": ["x"]}}, r"metrics.m.derived_from names 'x', which is no key of metrics"),
        ({}, {"m": {"derived_from": ["n"]}, "n": {"derived_from": ["o", "m"]}, "o": {}}, r"metrics derived_from closes a cycle: m -> n -> m"),
        ({}, {"m": {"derived_from": ["n", "n"]}, "n": {}}, r"derived_from names a metric twice"),
        ({}, {"m": {"parent": "n"}, "n": {}}, r"unknown field 'parent'"),
        ({"A": {"derived_from": ["B"]}, "B": {}}, {}, r"unknown field 'derived_from'"),
    ],
)
def test_bad_relations_are_config_errors_naming_the_file(entities: dict, metrics: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        glossary(entities, metrics)
    assert str(info.value).startswith("g.yaml")


def test_a_diamond_is_no_cycle() -> None:
    g = glossary({}, {"a": {"derived_from": ["b", "c"]}, "b": {"derived_from": ["d"]}, "c": {"derived_from": ["d"]}, "d": {}})
    assert g.terms["metrics"]["a"].inputs == ("b", "c")
