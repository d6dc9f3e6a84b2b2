"""Lookalike folding: zero-width characters, full-width letters, Cyrillic and Greek lookalikes and
separators between letters fold to one skeleton; other scripts are left alone."""

from __future__ import annotations

import pytest

from ragspine.security.fold import compact, skeleton


@pytest.mark.parametrize("label", [
    "RESTRICTED", "restricted", "RESTRICTED\u200b", "RE\u200dSTRICTED", "\ufeffRESTRICTED", "ＲＥＳＴＲＩＣＴＥＤ",
    "R\u0415STRICTED", "RESTR\u0406CTED", "\U0001d411\U0001d404\U0001d412\U0001d413\U0001d411\U0001d408\U0001d402\U0001d413\U0001d404\U0001d403",
    "RE\u00adSTRICTED", "RES\u0422RICTED", "R\u0415S\u0422RI\u0421\u0422\u0415D", "RES\u03a4RICTED",
])
def test_lookalikes_of_a_label_share_its_skeleton(label) -> None:
    assert skeleton(label) == "restricted"


@pytest.mark.parametrize(("text", "folded"), [
    ("\u041esprey", "osprey"), ("O-s-p-r-e-y", "osprey"), ("O s p r e y", "osprey"), ("O.s.p.r.e.y", "osprey"),
    ("\u041aSTR_JP", "kstrjp"), ("\u039c\u0391\u039a\u0395", "make"), ("KSTR_JP", "kstrjp"),
    ("红隼 日本", "红隼日本"), ("ケストレル・ジャパン", "ケストレルジャパン"),
])
def test_compact_drops_separators_between_letters(text, folded) -> None:
    assert compact(text) == folded


def test_other_scripts_are_left_alone() -> None:
    assert skeleton("红隼机器人 売上高 매출") == "红隼机器人 売上高 매출"
    assert skeleton("PUBLIC") == "public" and skeleton("INTERNAL") == "internal"
