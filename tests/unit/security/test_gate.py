"""The security gate: deterministic deny-list matching (case, NFKC, CJK, word boundaries) and
its deny-list file in the structured channel's glossary format."""

from __future__ import annotations

import pytest

from ragspine.errors import ConfigError
from ragspine.security import SecurityGate, TermMatcher, load_denylist, make_security_gate, normalize

DENIED = {"ACME": ["Acme", "Acme Corp", "艾克米", "アクメ", "ACM"], "GLOBEX": ["Globex", "ケストレル・ロボティクス", "红隼 机器人"]}


@pytest.fixture
def gate() -> SecurityGate:
    return SecurityGate(DENIED)


@pytest.mark.parametrize("text", [
    "What is Acme revenue?", "ACME sales", "acme's plan", "ＡＣＭＥ　sales",  # case, possessive, full-width letters and space
    "Acme的营收", "艾克米公司的利润", "ｱｸﾒ社の売上", "アクメの売上",  # CJK without boundaries, half-width kana
    "Ac\u200bme pricing", "Acme-Corp deal", "acme_corp", "ACM-led consortium",  # zero-width space, separators, a code
    "ケストレルロボティクス", "红隼机器人的营收", "GLOBEX",  # the middle dot and the space inside a CJK form do not matter
])
def test_a_text_naming_a_denied_entity_is_refused(gate, text):
    decision = gate.check(text)
    assert not decision.allowed and decision.entity in DENIED


@pytest.mark.parametrize("text", [
    "Acmeville town council", "academy awards", "acme2 release", "revenue of Kestrel", "", "   ", "ACMEs",
])
def test_a_word_only_containing_a_form_is_not_refused(gate, text):
    assert gate.check(text).allowed


def test_the_longest_form_is_reported_and_the_gate_is_deterministic(gate):
    first = gate.check("the Acme Corp merger")
    assert (first.entity, first.form) == ("ACME", "Acme Corp")
    assert all(gate.check("the Acme Corp merger") == first for _ in range(3))


def test_normalize_folds_width_case_separators_and_cjk_spacing():
    assert normalize("ＡＣＭＥ  -  Corp") == "acme corp"
    assert normalize("红隼 机器人") == "红隼机器人"
    assert normalize("ケストレル・ロボティクス") == "ケストレルロボティクス"


def test_term_matcher_lists_every_named_key():
    matcher = TermMatcher({"A": ["Alpha"], "B": ["Beta", "贝塔"], "C": ["Gamma"]})
    assert matcher.keys_in("Alpha vs 贝塔 revenue") == ["A", "B"]


def test_a_deny_list_in_glossary_format_refuses_every_entity_unless_deny_names_some(tmp_path):
    path = tmp_path / "deny.yaml"
    path.write_text("entities:\n  ACME:\n    en: [Acme]\n    zh: [艾克米]\n  GLOBEX:\n    en: [Globex]\n", encoding="utf-8")
    assert set(load_denylist(path)) == {"ACME", "GLOBEX"}
    path.write_text("deny: [GLOBEX]\nentities:\n  ACME:\n    en: [Acme]\n  GLOBEX:\n    en: [Globex]\n", encoding="utf-8")
    gate = make_security_gate(str(path))
    assert gate is not None and gate.check("Acme").allowed and not gate.check("globex").allowed


def test_a_deny_list_may_name_entities_of_another_glossary(tmp_path):
    (tmp_path / "glossary.yaml").write_text(
        "entities:\n  ACME:\n    en: [Acme]\n    ja: [アクメ]\n  OURS:\n    en: [Kestrel]\n", encoding="utf-8")
    (tmp_path / "deny.yaml").write_text("glossary: glossary.yaml\ndeny: [ACME]\n", encoding="utf-8")
    gate = make_security_gate(str(tmp_path / "deny.yaml"))
    assert gate is not None and not gate.check("アクメの売上").allowed and gate.check("Kestrel revenue").allowed


@pytest.mark.parametrize("text, message", [
    ("[1, 2]", "mapping"),
    ("deny: ACME\nentities:\n  ACME: {en: [Acme]}\n", "deny must be a list"),
    ("deny: [NOPE]\nentities:\n  ACME: {en: [Acme]}\n", "'NOPE'"),
    ("glossary: g.yaml\n", "list the refused entities"),
    ("entities: {}\n", "names no entity"),
    ("entities:\n  ACME: {fr: [Acmé]}\n", "unknown field"),
])
def test_a_bad_deny_list_is_one_config_error_naming_the_fix(tmp_path, text, message):
    path = tmp_path / "deny.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=message) as info:
        make_security_gate(str(path))
    assert "\n" not in str(info.value)


def test_no_deny_list_is_no_gate(tmp_path):
    assert make_security_gate(None) is None and make_security_gate("none") is None
    with pytest.raises(ConfigError, match="cannot read"):
        make_security_gate(str(tmp_path / "missing.yaml"))
