"""Principal and group names, ACL parsing and who sees what (``ragspine/security/principals.py``)."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragspine.errors import ConfigError
from ragspine.security.principals import ACL, OPEN, Principal, look_alike_key, name_key, parse_entry, sees


@pytest.mark.parametrize(("a", "b"), [("HR", "hr"), ("ＨＲ", "hr"), ("Alice@Example.COM", "alice@example.com"), ("ﬁnance", "finance"),
                                      ("Straße", "strasse"), ("人事部", "人事部"), ("営業チーム", "営業チーム")])
def test_case_and_width_variants_are_one_name(a: str, b: str) -> None:
    assert name_key(a) == name_key(b)


@pytest.mark.parametrize("bad", ["", " hr", "hr ", "h r", "h\u200br", "hr\u202e", "h\tr", "hr,finance", "hr;x", "user:x", "a/b", "a\\b",
                                 "*", "x" * 129, "һr", "hr\x00", "ａ：ｂ", "pаypal"])
def test_bad_names_are_refused_with_the_reason(bad: str) -> None:
    with pytest.raises(ConfigError, match="name"):
        name_key(bad)


def test_look_alikes_share_a_look_alike_key_but_not_a_name() -> None:
    assert name_key("һр") != name_key("hp")  # all Cyrillic vs all Latin: two names ...
    assert look_alike_key("һр") == look_alike_key("hp")  # ... that a registry must not hold together
    assert look_alike_key("ТОМ") == look_alike_key("TOM") and name_key("ТОМ") != name_key("TOM")  # capital Cyrillic


_names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=40)


@settings(max_examples=400, deadline=None)
@given(_names)
def test_an_accepted_name_is_canonical_and_unambiguous(name: str) -> None:
    try:
        key = name_key(name)
    except ConfigError:
        return
    assert name_key(key) == key  # canonical: the key is its own key
    assert not any(ch.isspace() or unicodedata.category(ch) in ("Cc", "Cf") for ch in key)
    assert not set(key) & set(",;:/\\*?\"'<>|=()[]{}")
    assert parse_entry(f"group:{name}") == f"group:{key}"
    assert name_key(name.upper() if name.upper() != name else name.lower()) in (key, name_key(name.upper()))


def test_acl_forms_parse_to_one_canonical_value() -> None:
    a = ACL.parse({"allow": ["group:HR", "user:Bob", "group:hr"], "deny": "user:eve"})
    assert a == ACL(("group:hr", "user:bob"), ("user:eve",))
    assert ACL.parse("group:hr, user:bob") == ACL(("group:hr", "user:bob"))
    assert ACL.parse(["user:bob", "group:hr"]) == ACL(("group:hr", "user:bob"))
    assert ACL.from_json(a.to_json()) == a and ACL.parse(None) is OPEN and ACL.parse({}) == OPEN and OPEN.is_open
    for bad in ({"allow": ["hr"]}, {"alow": ["group:hr"]}, {"allow": 3}, ["role:hr"], [5]):
        with pytest.raises(ConfigError):
            ACL.parse(bad)


def test_who_sees_what() -> None:
    acl = ACL.parse({"allow": ["group:hr", "user:bob"], "deny": ["user:eve"]})
    assert Principal.of("bob").sees(acl)
    assert Principal.of("x", ["ＨＲ"]).sees(acl)
    assert not Principal.of("eve", ["hr"]).sees(acl)  # deny wins
    assert not Principal.of("mallory", ["h r".replace(" ", "")]).sees(ACL.parse("group:board"))
    assert Principal.of("anyone").sees(OPEN) and sees(None, OPEN)
    assert not sees(None, acl)  # a caller who is no principal reads only documents without an ACL
    deny_only = ACL.parse({"deny": ["group:contractors"]})
    assert Principal.of("a").sees(deny_only) and not Principal.of("a", ["contractors"]).sees(deny_only)
    assert not sees(None, deny_only)
