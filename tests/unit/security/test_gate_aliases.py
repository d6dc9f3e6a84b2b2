"""The gate covers every alias and every lookalike: a deny list in any format is expanded through
the fact glossary (key, codes, each language's forms, both ways), and matching folds confusables
and separators between letters — without short forms or ordinary phrases matching inside
unrelated words."""

from __future__ import annotations

import time

import pytest

from ragspine.security import SecurityGate, expand_denylist, make_security_gate, security_gate_for
from ragspine.structured.glossary import Glossary

GLOSSARY = Glossary.default()
#: Every form the shipped glossary knows for KESTREL_JP: key, code, en, zh, ja.
KESTREL_JP = ["KESTREL_JP", "KSTR_JP", "Kestrel Japan", "红隼日本", "ケストレル・ジャパン", "ケストレル日本"]

DENY_LISTS = {
    "inline, key only": "entities:\n  KESTREL_JP:\n    en: [Kestrel Japan]\n",
    "inline, another key": "entities:\n  RIVAL:\n    en: [Kestrel Japan]\n",
    "inline, one Chinese form": "entities:\n  RIVAL:\n    zh: [红隼日本]\n",
    "inline, the code": "entities:\n  RIVAL:\n    codes: [KSTR_JP]\n",
    "glossary + deny": "glossary: glossary.yaml\ndeny: [KESTREL_JP]\n",
}


def _gate(tmp_path, text: str) -> SecurityGate:
    from importlib import resources

    (tmp_path / "glossary.yaml").write_text(
        resources.files("ragspine.structured").joinpath("data/glossary.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "deny.yaml").write_text(text, encoding="utf-8")
    gate = make_security_gate(str(tmp_path / "deny.yaml"), GLOSSARY)
    assert gate is not None
    return gate


@pytest.mark.parametrize("deny", list(DENY_LISTS))
def test_a_deny_list_in_any_format_covers_every_form_the_glossary_knows(tmp_path, deny) -> None:
    gate = _gate(tmp_path, DENY_LISTS[deny])
    for form in KESTREL_JP:
        decision = gate.check(f"What was {form} revenue in Q3 2024?")
        assert not decision.allowed, (deny, form)
    for other in ("Kestrel China", "KSTR_CN", "红隼中国", "Kestrel Robotics", "ケストレル中国"):
        assert gate.check(f"What was {other} revenue in Q3 2024?").allowed, (deny, other)


def test_expansion_keeps_the_deny_lists_key_and_forms_and_adds_the_glossarys() -> None:
    expanded = expand_denylist({"RIVAL": ["kestrel-japan"]}, GLOSSARY)  # compared by compact skeleton
    assert expanded["RIVAL"][0] == "kestrel-japan" and set(KESTREL_JP) <= set(expanded["RIVAL"])
    assert expand_denylist({"OSPREY": ["Osprey"]}, GLOSSARY) == {"OSPREY": ["Osprey"]}  # nothing of the glossary named


def test_the_stacks_gate_is_expanded_through_the_fact_glossary_in_use(tmp_path) -> None:
    from ragspine.config import load_settings

    (tmp_path / "deny.yaml").write_text(DENY_LISTS["inline, key only"], encoding="utf-8")
    (tmp_path / "facts.yaml").write_text("entities:\n  KESTREL_JP:\n    en: [Kestrel Japan]\n    codes: [KJP9]\n", encoding="utf-8")
    own = security_gate_for(load_settings({"RAGSPINE_SECURITY_DENYLIST": str(tmp_path / "deny.yaml"),
                                           "RAGSPINE_FACT_GLOSSARY": str(tmp_path / "facts.yaml")}))
    shipped = security_gate_for(load_settings({"RAGSPINE_SECURITY_DENYLIST": str(tmp_path / "deny.yaml")}))
    assert own is not None and shipped is not None
    assert not own.check("KJP9 revenue").allowed and own.check("KSTR_JP revenue").allowed
    assert not shipped.check("KSTR_JP revenue").allowed and shipped.check("KJP9 revenue").allowed
    assert security_gate_for(load_settings({})) is None


OSPREY = {"OSPREY": ["Osprey Automation", "Osprey", "鱼鹰自动化"], "US": ["US"], "ACME": ["Acme"], "KJ": ["Kestrel Japan", "KSTR_JP"]}


@pytest.mark.parametrize("text", [
    "\u041esprey pricing",  # a Cyrillic О
    "How does \u039fsprey price?",  # a Greek Ο
    "\u041e\u0405\u0420R\u0415Y",  # Cyrillic capitals (О Ѕ Р Е) with Latin R and Y
    "O-s-p-r-e-y pricing", "O s p r e y", "O.s.p.r.e.y.", "O_s_p_r_e_y", "O/s/p/r/e/y", "O*s*p*r*e*y", "(O s p r e y)",
    "Os-prey", "Osp_rey's gearbox", "O-s-p-r-e-y-led",
    "\uff2f\uff33\uff30\uff32\uff25\uff39",  # full-width
    "O\u200bs\u200cp\u200dr\u2060e\ufeffy",  # zero-width characters inside
    "Os\u00adprey",  # a soft hyphen
    "\U0001d40e\U0001d42c\U0001d429\U0001d42b\U0001d41e\U0001d432",  # mathematical bold
    "KestrelJapan", "K-e-s-t-r-e-l Japan", "K S T R J P", "\u041aSTR_JP", "鱼 鹰 自 动 化", "鱼*鹰*自*动*化",
    "A.C.M.E.", "a c m e", "the US market", "a O s p r e y deal",
])
def test_lookalikes_and_spelled_out_forms_are_refused(text) -> None:
    assert not SecurityGate(OSPREY).check(text).allowed


@pytest.mark.parametrize("text", [
    "u-s-e-r", "a user", "u s e r", "U.S.",  # a two-letter form is never found spelled out (list U.S. as a form)
    "a CME contract", "pac-me", "academy", "Ospreyville", "the rose prey", "Os prey", "a-c-m-e-s",  # word boundaries, ordinary phrases
    "Kestrel Ja pan", "Kestrel China",
])
def test_spelled_out_matching_keeps_to_word_boundaries_and_letter_spacing(text) -> None:
    assert SecurityGate(OSPREY).check(text).allowed


def test_the_gate_stays_fast_on_a_long_question() -> None:
    gate = make_gate_with_many_forms()
    question = ("What did the board say about r-e-v-e-n-u-e and the K2 line in 2024? " * 60)[:4000]
    start = time.perf_counter()
    for _ in range(10):
        assert gate.check(question).allowed
    assert (time.perf_counter() - start) / 10 < 0.05


def make_gate_with_many_forms() -> SecurityGate:
    return SecurityGate({f"RIVAL{i}": [f"Rival Company {i}", f"Rivalcorp{i}", f"对手{i}号"] for i in range(100)})
