"""Numbers in text, in any form a reader would take for one (pure; no I/O).

:func:`find_numbers` returns every :class:`Number` in a text: digits of any script (ASCII,
full-width, Arabic-Indic, Devanagari ...) with thousands separators and decimals, CJK numerals
(``三亿``, ``一千二百``, ``九百九十九万``, ``两``, ``〇``), and numbers written in English words
(``nine hundred ninety-nine million``) — each with its multiplier (``182 million``, ``3.5亿``,
``12万``), its unit where one is written next to it (percent, a currency, a few counters) and
its **role**: ``year`` (``in 2008``, ``2008年``), ``period`` (a quarter or month: ``三季度``,
``第3四半期``), ``page`` (``page 12``, ``第12页``) or ``amount``.

What the narrative path checks with it (:mod:`ragspine.agent.narrative`): a generated sentence
may state a number only if its cited snippet states the same value with the same unit in the
same role — a year is not an amount, a page number is not a value. What the reasoning trace
masks with it: every number a model wrote that the user's question does not hold.

A lone ``one`` and a lone CJK ``一`` are words as often as numbers (``one of the reasons``,
``一样``): they count only with a multiplier, a counter or another number word.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

__all__ = ["Number", "find_numbers", "mask_numbers", "normalize_digits"]

ROLES = ("amount", "year", "period", "page")


@dataclass(frozen=True)
class Number:
    """A number found at ``[start, end)``: its ``value`` (the multiplier applied), ``unit``
    (a canonical unit name, or ``""``) and ``role``."""

    value: Decimal
    unit: str
    role: str
    start: int
    end: int


def normalize_digits(text: str) -> str:
    """``text`` with every decimal digit of any script as ASCII and full-width forms folded,
    one character for one (positions are kept)."""
    out = []
    for ch in text:
        digit = unicodedata.decimal(ch, None)
        if digit is not None:
            out.append(str(digit))
            continue
        folded = unicodedata.normalize("NFKC", ch)
        out.append(folded if len(folded) == 1 else ch)
    return "".join(out)


_MULTIPLIERS = {
    "thousand": Decimal(10) ** 3, "k": Decimal(10) ** 3, "million": Decimal(10) ** 6, "mn": Decimal(10) ** 6, "m": Decimal(10) ** 6,
    "mio": Decimal(10) ** 6, "billion": Decimal(10) ** 9, "bn": Decimal(10) ** 9, "b": Decimal(10) ** 9,
    "trillion": Decimal(10) ** 12, "tn": Decimal(10) ** 12,
    "千": Decimal(10) ** 3, "万": Decimal(10) ** 4, "萬": Decimal(10) ** 4, "百万": Decimal(10) ** 6, "百萬": Decimal(10) ** 6,
    "千万": Decimal(10) ** 7, "千萬": Decimal(10) ** 7, "亿": Decimal(10) ** 8, "億": Decimal(10) ** 8, "兆": Decimal(10) ** 12,
}
_UNITS = {
    "percent": ("%", "percent", "per cent", "pct", "percentage points", "パーセント", "個百分點", "个百分点"),
    "euro": ("euros", "euro", "eur", "€", "欧元", "歐元", "ユーロ"),
    "dollar": ("dollars", "dollar", "usd", "$", "美元", "ドル", "美金"),
    "yen": ("yen", "jpy", "円", "日元", "日圓", "¥"),
    "yuan": ("yuan", "rmb", "cny", "元", "人民币", "人民幣"),
    "pound": ("pounds", "pound", "gbp", "£", "英镑"),
    "unit": ("units", "unit", "台", "件", "個", "个"),
    "people": ("people", "persons", "employees", "workers", "人", "名"),
    "times": ("times", "倍"),
}
_UNIT_OF = {form: unit for unit, forms in _UNITS.items() for form in forms}
_UNIT_FORMS = tuple(sorted(_UNIT_OF, key=len, reverse=True))  # longest first: "percentage points" before "percent"
_PREFIX_UNITS = {"$": "dollar", "€": "euro", "£": "pound", "¥": "yen", "us$": "dollar", "rmb": "yuan", "eur": "euro", "usd": "dollar"}

_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
    "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17,
    "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70,
    "eighty": 80, "ninety": 90,
}
_SCALES = {"hundred": 100, "thousand": 1000, "million": 10 ** 6, "billion": 10 ** 9, "trillion": 10 ** 12}
_WORD = "|".join(sorted([*_WORDS, *_SCALES], key=len, reverse=True))
_WORD_RUN = re.compile(rf"(?<![a-z])(?:a |an )?(?:{_WORD})(?:(?:[ -]|-| and )(?:{_WORD}))*(?![a-z])")

_CJK_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "兩": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_CJK_UNITS = {"十": 10, "拾": 10, "百": 100, "佰": 100, "千": 1000, "仟": 1000}
_CJK_BIG = {"万": 10 ** 4, "萬": 10 ** 4, "亿": 10 ** 8, "億": 10 ** 8, "兆": 10 ** 12}
_CJK_RUN = re.compile(r"(?P<pct>百分之)?(?P<run>[零〇一二两兩三四五六七八九十拾百佰千仟万萬亿億兆]+(?:[点點][零〇一二三四五六七八九]+)?)")
#: Counters after a single CJK numeral that make it a number (三个, 两台, 五倍, 一成).
_CJK_COUNTERS = "个個位名家台件人元倍次成项項条條年月日号號季度期"
_CJK_PERIOD_AFTER = ("季度", "季", "四半期", "月", "日", "号", "號", "周", "週", "半期")

_ARABIC = re.compile(
    r"(?P<prefix>us\$|\$|€|£|¥|rmb ?|eur ?|usd ?)?"
    r"(?<![a-z0-9_.])(?P<sign>[-+−])?(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)(?![\d])"
)
_MULTIPLIER_AFTER = re.compile(
    r"\s?(?P<mult>thousand|million|billion|trillion|mio|mn|bn|tn|[kmb](?![a-z])|百万|百萬|千万|千萬|千|万|萬|亿|億|兆)", re.IGNORECASE)
_YEAR_BEFORE = re.compile(
    r"(?:\b(?:in|since|by|from|to|until|till|through|during|of|year|years|fy|fiscal|calendar|early|late|mid|before|after|"
    r"between|and|around|circa|spring|summer|autumn|fall|winter|january|february|march|april|may|june|july|august|"
    r"september|october|november|december|q[1-4]|h[12])\s*[-,]?\s*|'|\(|^)$"
)
_PAGE_BEFORE = re.compile(r"(?:\b(?:page|pages|p|pp|pg|para|paragraph|section|sec|chapter|ch|fig|figure|table|no|line|lines)\.?\s*|§\s*|第)$")
_PAGE_AFTER = ("页", "頁", "ページ", "頁目")


def find_numbers(text: str) -> list[Number]:
    """Every number of ``text`` (see the module docstring), in text order, not overlapping."""
    plain = normalize_digits(text)
    lower = plain.lower()
    found: list[Number] = []
    taken: list[tuple[int, int]] = []

    def add(number: Number) -> None:
        if not any(number.start < e and s < number.end for s, e in taken):
            found.append(number)
            taken.append((number.start, number.end))

    for match in _ARABIC.finditer(lower):
        add(_arabic(lower, match))
    for match in _CJK_RUN.finditer(plain):
        number = _cjk(plain, match)
        if number is not None:
            add(number)
    for match in _WORD_RUN.finditer(lower):
        number = _words(lower, match)
        if number is not None:
            add(number)
    return sorted(found, key=lambda n: n.start)


def mask_numbers(text: str, keep: str = "", mark: str = "#") -> str:
    """``text`` with every number that ``keep`` does not state (same value) replaced by ``mark``."""
    kept = {n.value for n in find_numbers(keep)}
    out, last = [], 0
    for number in find_numbers(text):
        if number.value in kept:
            continue
        out.append(text[last:number.start] + mark)
        last = number.end
    return "".join(out) + text[last:]


def _arabic(lower: str, match: re.Match[str]) -> Number:
    raw = match["num"].replace(",", "")
    value = Decimal(raw)
    if match["sign"] in ("-", "−"):
        value = -value
    start, end = match.start(), match.end()
    multiplier = _MULTIPLIER_AFTER.match(lower, end)
    scaled = False
    if multiplier is not None:
        value *= _MULTIPLIERS[multiplier["mult"].lower()]
        end, scaled = multiplier.end(), True
    unit, end = _unit_after(lower, end)
    if match["prefix"]:
        unit = unit or _PREFIX_UNITS[match["prefix"].strip()]
    role = "amount"
    before = lower[:match.start("num") if match["sign"] is None else match.start("sign")]
    if lower.startswith(_CJK_PERIOD_AFTER, end) and not scaled:
        role = "period"
    elif _PAGE_BEFORE.search(before[-12:]) or lower.startswith(_PAGE_AFTER, end):
        role = "page"
    elif not scaled and not unit and "," not in match["num"] and "." not in match["num"] and 1800 <= value <= 2199 \
            and match["sign"] is None and (_YEAR_BEFORE.search(before[-16:]) or lower.startswith(("年", "'s", "s ", "财年", "財年"), end)):
        role = "year"
    return Number(value, unit, role, start, end)


def _unit_after(lower: str, end: int) -> tuple[str, int]:
    rest = lower[end:end + 24]
    stripped = rest.lstrip(" ")
    offset = len(rest) - len(stripped)
    for form in _UNIT_FORMS:
        if stripped.startswith(form) and (not form[-1].isascii() or not form[-1].isalpha()
                                          or not stripped[len(form):len(form) + 1].isalpha()):
            return _UNIT_OF[form], end + offset + len(form)
    return "", end


def _cjk(plain: str, match: re.Match[str]) -> Number | None:
    run = match["run"]
    if run == "百" and plain.startswith("分之", match.end()):
        return None
    has_scale = any(ch in _CJK_UNITS or ch in _CJK_BIG for ch in run)
    after = plain[match.end():match.end() + 2]
    if len(run) == 1 and not has_scale and not (after[:1] and after[:1] in _CJK_COUNTERS):
        return None
    if len(run) == 1 and run in _CJK_BIG:  # 万 / 亿 alone: a word (万一), not a number
        return None
    value = _cjk_value(run)
    if value is None:
        return None
    start, end = match.start(), match.end()
    unit, end = _unit_after(plain.lower(), end)
    role = "amount"
    if plain.startswith(_CJK_PERIOD_AFTER, match.end()) or plain.startswith("年度", match.end()):
        role = "period"
    elif plain.startswith("年", match.end()) and 1800 <= value <= 2199:
        role = "year"
    elif plain[max(0, start - 1):start] == "第" and plain.startswith(_PAGE_AFTER, match.end()):
        role = "page"
    elif match["pct"]:
        unit = "percent"
    return Number(value, unit, role, start, end)


def _cjk_value(run: str) -> Decimal | None:
    integer, _, fraction = run.replace("點", "点").partition("点")
    if not any(ch in _CJK_UNITS or ch in _CJK_BIG for ch in integer):  # 二〇〇八: digit by digit
        digits = "".join(str(_CJK_DIGITS[ch]) for ch in integer if ch in _CJK_DIGITS)
        if len(digits) != len(integer):
            return None
        value = Decimal(digits or "0")
    else:
        total, section, digit = 0, 0, 0
        for ch in integer:
            if ch in _CJK_DIGITS:
                digit = _CJK_DIGITS[ch]
            elif ch in _CJK_UNITS:
                section += (digit or 1) * _CJK_UNITS[ch]
                digit = 0
            elif ch in _CJK_BIG:
                total = (total + section + digit) * _CJK_BIG[ch] if _CJK_BIG[ch] > total else total + (section + digit) * _CJK_BIG[ch]
                section, digit = 0, 0
        value = Decimal(total + section + digit)
    if fraction:
        try:
            value += Decimal("0." + "".join(str(_CJK_DIGITS[ch]) for ch in fraction))
        except (KeyError, InvalidOperation):
            return None
    return value


def _words(lower: str, match: re.Match[str]) -> Number | None:
    tokens = [t for t in re.split(r"[ -]|\band\b", match.group(0)) if t]
    if tokens and tokens[0] in ("a", "an"):
        tokens[0] = "one"
    meaningful = [t for t in tokens if t in _WORDS or t in _SCALES]
    if not meaningful or (len(meaningful) == 1 and meaningful[0] in ("one", "zero") and len(tokens) == 1):
        return None
    if all(t in _SCALES for t in meaningful) and tokens[0] not in ("one",):
        return None  # "hundreds", "million" alone: no count
    total, current = 0, 0
    for token in meaningful:
        if token in _WORDS:
            current += _WORDS[token]
        elif token == "hundred":
            current = (current or 1) * 100
        else:
            total += (current or 1) * _SCALES[token]
            current = 0
    value = Decimal(total + current)
    unit, end = _unit_after(lower, match.end())
    return Number(value, unit, "amount", match.start(), end)
