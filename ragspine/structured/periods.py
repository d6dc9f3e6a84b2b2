"""Period text in Chinese, Japanese and English → a canonical period key (pure; no I/O).

Absolute forms (full-width digits and letters read as ASCII)::

    2024Q3  2024-Q3  Q3 2024  3Q24  2024年第三季度  2024年Q3  2024年第3四半期  third quarter of 2024
    FY2024  FY24  fiscal 2024  2024年度  2024财年          (fiscal year of the entity)
    FY2024Q3  Q3 FY24  2024年度第3四半期  2024财年第三季度     (fiscal quarter of the entity)
    2024  2024年  CY2024                                  (calendar year)
    2024-07  2024/7  2024年7月  2024年七月  July 2024       (calendar month)

Relative forms (去年三季度, 上季度, 前年度, 前期, 今期, last quarter, last fiscal year, 先月, ...)
resolve **only** against an explicit as-of date: without one the period is unrecognized
(:attr:`PeriodReading.relative` says why). Forms whose meaning differs between the languages
(前年: "the year before last" in Chinese, "the previous year" in Japanese) are not read at all.
The entity's :class:`~ragspine.structured.calendar.FiscalCalendar` decides the key of a fiscal
period and of "this/last fiscal year".
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from datetime import date, datetime
from typing import Callable, Mapping

from ragspine.structured import calendar as cal
from ragspine.structured.calendar import CALENDAR_YEAR, FiscalCalendar

_CN_DIGITS = {"一": 1, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10, "十一": 11, "十二": 12}
_ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "1st": 1, "2nd": 2, "3rd": 3, "4th": 4}
_MONTHS = {name: i for i, names in enumerate((
    ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",), ("june", "jun"),
    ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"), ("october", "oct"), ("november", "nov"),
    ("december", "dec"),
), 1) for name in names}

#: The longest period text :func:`read_period` reads (the agent looks for mentions up to this long).
MAX_PERIOD_TEXT = 100

Y = r"(?P<y>[0-9]{4})"
YY = r"'?(?P<y>[0-9]{4}|[0-9]{2})"  # fiscal years: FY24 is FY2024
Q = r"(?P<q>[1-4一二三四])"
ORD = r"(?P<o>first|second|third|fourth|1st|2nd|3rd|4th)"
FISCAL = r"(?:年度|财年|財年|会计年度|会計年度|财政年度|財政年度)"
QUARTER = r"(?:季度|季|四半期)"
MONTH = r"(?P<m>[0-9]{1,2}|十[一二]?|[一二三四五六七八九])"
MONTH_NAME = r"(?P<mn>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
FY = rf"fy ?-? ?{YY}"
QN = rf"q ?{Q}"
SEP = r" ?[-/,]? ?"

#: (pattern, kind) — kind: year | quarter | month | fy | fyq. Spaces next to CJK are folded away.
_ABSOLUTE: tuple[tuple[str, str], ...] = (
    (Y, "year"), (rf"{Y}年", "year"), (rf"cy ?{Y}", "year"), (rf"calendar(?: year)? {Y}", "year"), (rf"{Y}年(?:全年|通年)", "year"),
    (rf"{Y}{SEP}{QN}", "quarter"), (rf"{QN}{SEP}{Y}", "quarter"), (rf"{QN} ?'(?P<y>[0-9]{{2}})", "quarter"), (rf"{QN},? (?:of|in) {Y}", "quarter"),
    (rf"{Q} ?q{SEP}(?P<y>[0-9]{{4}}|[0-9]{{2}})", "quarter"), (rf"{Y}年の?第?{Q}{QUARTER}", "quarter"), (rf"{Y}年{QN}", "quarter"),
    (rf"(?:the )?{ORD}[- ]quarter(?: of)?,? {Y}", "quarter"), (rf"{Y},? {ORD}[- ]quarter", "quarter"),
    (FY, "fy"), (rf"fiscal(?: year)? {Y}", "fy"), (rf"{Y}{FISCAL}", "fy"),
    (rf"{FY}{SEP}{QN}", "fyq"), (rf"{QN}{SEP}{FY}", "fyq"), (rf"{Y}{FISCAL}の?第?{Q}{QUARTER}", "fyq"), (rf"{Y}{FISCAL}{QN}", "fyq"),
    (rf"(?:the )?{ORD}[- ]quarter of fiscal(?: year)? {Y}", "fyq"), (rf"fiscal(?: year)? {Y},? {QN}", "fyq"),
    (rf"{Y} ?[-/.] ?{MONTH}", "month"), (rf"{Y}年{MONTH}月份?", "month"), (rf"{MONTH_NAME},? {Y}", "month"), (rf"{Y} {MONTH_NAME}", "month"),
)

_REL_YEAR = {"今年": 0, "本年": 0, "this year": 0, "current year": 0,
             "去年": -1, "上年": -1, "上一年": -1, "昨年": -1, "last year": -1, "previous year": -1, "prior year": -1,
             "一昨年": -2, "the year before last": -2, "year before last": -2}
_REL_FY = {"今年度": 0, "本年度": 0, "当年度": 0, "今期": 0, "当期": 0, "本财年": 0, "今财年": 0, "本財年": 0,
           "this fiscal year": 0, "current fiscal year": 0,
           "前年度": -1, "昨年度": -1, "上年度": -1, "前期": -1, "上财年": -1, "上一财年": -1, "上个财年": -1, "上一個財年": -1,
           "last fiscal year": -1, "previous fiscal year": -1, "prior fiscal year": -1,
           "前々年度": -2, "前前年度": -2, "前々期": -2, "前前期": -2}
_REL_QUARTER = {"本季度": 0, "这个季度": 0, "本季": 0, "当季": 0, "今四半期": 0, "当四半期": 0, "this quarter": 0, "current quarter": 0,
                "上季度": -1, "上个季度": -1, "上一季度": -1, "上一个季度": -1, "上季": -1, "前四半期": -1, "前の四半期": -1,
                "last quarter": -1, "previous quarter": -1, "prior quarter": -1}
_REL_MONTH = {"本月": 0, "这个月": 0, "今月": 0, "当月": 0, "this month": 0, "current month": 0,
              "上月": -1, "上个月": -1, "上一个月": -1, "先月": -1, "前月": -1, "last month": -1, "previous month": -1}


def _alternatives(words: Mapping[str, int]) -> str:
    return "(?P<p>" + "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True)) + ")"


#: (pattern, kind, offsets) — relative forms with a quarter: 去年三季度, 前年度第3四半期, Q3 last year
_RELATIVE_QUARTER: tuple[tuple[str, str, Mapping[str, int]], ...] = (
    (rf"{_alternatives(_REL_YEAR)}[の的]?第?{Q}{QUARTER}", "year", _REL_YEAR),
    (rf"{_alternatives(_REL_YEAR)}[の的]?{QN}", "year", _REL_YEAR),
    (rf"{QN},? (?:of )?{_alternatives(_REL_YEAR)}", "year", _REL_YEAR),
    (rf"(?:the )?{ORD}[- ]quarter (?:of )?{_alternatives(_REL_YEAR)}", "year", _REL_YEAR),
    (rf"{_alternatives(_REL_YEAR)}'s (?:{QN}|{ORD}[- ]quarter)", "year", _REL_YEAR),
    (rf"{_alternatives(_REL_FY)}[の的]?第?{Q}{QUARTER}", "fy", _REL_FY),
    (rf"{_alternatives(_REL_FY)}[の的]?{QN}", "fy", _REL_FY),
    (rf"{QN},? (?:of )?{_alternatives(_REL_FY)}", "fy", _REL_FY),
)

_COMPILED = tuple((re.compile(rf"^(?:{p})$"), kind) for p, kind in _ABSOLUTE)
_COMPILED_RELATIVE = tuple((re.compile(rf"^(?:{p})$"), kind, words) for p, kind, words in _RELATIVE_QUARTER)


@dataclass(frozen=True)
class PeriodReading:
    """What a period text reads as: its canonical ``key`` (``None``: unrecognized) and whether
    it is a relative form (``relative`` with no key: it needed an as-of date)."""

    key: str | None
    relative: bool = False


def fold(text: str, *, casefold: bool = True) -> str:
    """NFKC (full-width → ASCII), case-folded (unless ``casefold=False``: the same text with its
    letters' case kept), whitespace collapsed and removed next to CJK."""
    text = unicodedata.normalize("NFKC", text)
    text = text.casefold() if casefold else text
    text = re.sub(r"[\u2010-\u2015\u2212]", "-", text).replace("\u2019", "'")
    text = " ".join(text.split())
    return re.sub(r" ?([\u3000-\u9fff\uff00-\uffef]) ?", r"\1", text)


def parse_as_of(value: object) -> date:
    """An as-of date: a ``date``/``datetime`` or an ISO ``YYYY-MM-DD`` text (``ValueError`` else)."""
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    if isinstance(value, str):
        text = unicodedata.normalize("NFKC", value).strip()
        if re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", text):
            return date.fromisoformat(text)
    raise ValueError("the as-of date must be an ISO date (YYYY-MM-DD)")


def read_period(
    text: object, calendar: FiscalCalendar = CALENDAR_YEAR, *, as_of: date | None = None, aliases: Mapping[str, str] | None = None,
) -> PeriodReading:
    """The canonical key of ``text`` for an entity with ``calendar`` (see the module docstring).
    ``aliases`` maps folded glossary aliases to keys (e.g. ``"h2 fy24 close"`` → ``"FY2024"``)."""
    if not isinstance(text, str) or len(text) > MAX_PERIOD_TEXT:
        return PeriodReading(None)
    folded = fold(text)
    if aliases and folded in aliases:
        folded = fold(aliases[folded])
    try:
        key = _absolute(folded, calendar, as_of)
        if key is not None:
            return PeriodReading(key)
        resolve = _relative(folded)
        if resolve is None:
            return PeriodReading(None)
        return PeriodReading(resolve(as_of, calendar) if as_of is not None else None, relative=True)
    except ValueError:  # a year outside the range, month 13, ...
        return PeriodReading(None)


def _absolute(folded: str, calendar: FiscalCalendar, as_of: date | None = None) -> str | None:
    for pattern, kind in _COMPILED:
        match = pattern.match(folded)
        if match:
            return _key(kind, match, calendar, as_of)
    return None


def _number(match: re.Match[str], group: str) -> int | None:
    raw = match.groupdict().get(group)
    if raw is None:
        return None
    return _CN_DIGITS[raw] if raw in _CN_DIGITS else int(raw)


def _quarter(match: re.Match[str]) -> int:
    number = _number(match, "q")
    if number is not None:
        return number
    return _ORDINALS[match["o"]]


def two_digit_year(yy: int, as_of: date | None = None) -> int:
    """The year a two-digit year names: the one ending in ``yy`` within the 100-year window
    from 80 years before to 19 years after the as-of date's year (today's without one) —
    ``FY24`` is 2024 and ``FY50`` is 1950 when asked in 2026."""
    pivot = (as_of or date.today()).year + 19
    year = pivot - (pivot - yy) % 100
    return year


def _key(kind: str, match: re.Match[str], calendar: FiscalCalendar, as_of: date | None = None) -> str:
    year = _number(match, "y")
    assert year is not None
    if year < 100:
        year = two_digit_year(year, as_of)
    if kind == "year":
        return cal.year_key(year)
    if kind == "quarter":
        return cal.quarter_key(year, _quarter(match))
    if kind == "fy":
        return cal.fiscal_year_key(year, calendar)
    if kind == "fyq":
        return cal.fiscal_quarter_key(year, _quarter(match), calendar)
    month = _number(match, "m")
    return cal.month_key(year, month if month is not None else _MONTHS[match["mn"]])


Resolver = Callable[[date, FiscalCalendar], str]


def _relative(folded: str) -> Resolver | None:
    if folded in _REL_YEAR:
        by = _REL_YEAR[folded]
        return lambda day, c: cal.year_key(day.year + by)
    if folded in _REL_FY:
        by = _REL_FY[folded]
        return lambda day, c: cal.fiscal_year_key(c.fiscal_year_of(day) + by, c)
    if folded in _REL_QUARTER:
        return _quarter_resolver(_REL_QUARTER[folded])
    if folded in _REL_MONTH:
        by = _REL_MONTH[folded]
        return lambda day, c: cal.month_key(*cal.shift_month(day.year, day.month, by))
    for pattern, kind, words in _COMPILED_RELATIVE:
        match = pattern.match(folded)
        if match:
            by, quarter = words[match["p"]], _quarter(match)
            if kind == "year":
                return lambda day, c: cal.quarter_key(day.year + by, quarter)
            return lambda day, c: cal.fiscal_quarter_key(c.fiscal_year_of(day) + by, quarter, c)
    return None


def _quarter_resolver(by: int) -> Resolver:
    def resolve(day: date, c: FiscalCalendar) -> str:
        if c.quarter_aligned:  # the entity's quarters are calendar quarters
            return cal.quarter_key(*cal.shift_quarter(day.year, (day.month - 1) // 3 + 1, by))
        label, quarter = c.fiscal_quarter_of(day)
        return cal.fiscal_quarter_key(*cal.shift_quarter(label, quarter, by), c)

    return resolve
