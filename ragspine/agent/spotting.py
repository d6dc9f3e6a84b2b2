"""Glossary terms and periods found inside a whole question (pure; no I/O, no model).

:class:`TermSpotter` finds the metric, entity and channel forms of a controlled
:class:`~ragspine.structured.glossary.Glossary` in free text, by the glossary's own folding
(:func:`~ragspine.structured.periods.fold`: NFKC, case, whitespace). A form whose end is a
letter or digit of an alphabetic script must end a word there (``Kestrel`` matches
``Kestrel's`` but not ``Kestrels``); a CJK form matches anywhere (``营收`` in ``中国区营收为什么``).
Overlapping hits keep the longest form (``Kestrel China`` over ``Kestrel``, ``service revenue``
over ``revenue``); the earliest hit of a section is the one the question asks about.

:func:`find_period` finds the first period mention: any form the period grammar reads
(:func:`~ragspine.structured.periods.read_period`: ``Q3 2024``, ``2024年第三季度``, ``FY24``,
``last quarter`` ...) or a *bare quarter* (``Q3``, ``third quarter``, ``三季度``, ``第3四半期``).
A bare quarter, like a relative period, has a key only against an explicit as-of date: the
latest such calendar quarter that has ended on that date (asked on 2024-10-30, ``Q3`` is
``2024Q3``; on 2024-09-15 it is ``2023Q3``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from functools import lru_cache

from ragspine.structured import calendar as cal
from ragspine.structured.glossary import Glossary
from ragspine.structured.periods import fold, read_period

SECTIONS = ("metrics", "entities", "channels")
MAX_PERIOD_CHARS = 32
_CJK = r"\u2e80-\u2fff\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef"
_WORD = rf"[^\W_{_CJK}]"
_CJK_CHAR = re.compile(rf"[{_CJK}]")
_MONTHS = "jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec"
#: Where a period mention may start: a digit, Q/FY/CY/fiscal/calendar, an ordinal, a month, a
#: relative word (this/last/current/previous/prior/the), or a CJK relative or ordinal character.
_PERIOD_START = re.compile(
    rf"(?<!{_WORD})(?:[0-9]|q|fy|cy|fiscal|calendar|the |first|second|third|fourth|this |last |current |previous |prior |year "
    rf"|{_MONTHS})|[今本去上昨一前当這这先第]"
)
_BARE_QUARTER = (
    re.compile(rf"(?<!{_WORD})q ?(?P<n>[1-4])(?!{_WORD})"),
    re.compile(rf"(?<!{_WORD})(?:the )?(?P<o>first|second|third|fourth|1st|2nd|3rd|4th)[- ]quarter(?!{_WORD})"),
    re.compile(r"第?(?P<n>[1-4一二三四])(?:季度|四半期)"),
)
_ORDINAL = {"first": 1, "second": 2, "third": 3, "fourth": 4, "1st": 1, "2nd": 2, "3rd": 3, "4th": 4,
            "一": 1, "二": 2, "三": 3, "四": 4}


@dataclass(frozen=True)
class Hit:
    """A glossary form found at ``[start, end)`` of the folded question: its section and key."""

    section: str
    key: str
    start: int
    end: int
    form: str


@dataclass(frozen=True)
class PeriodMention:
    """A period found in the folded question: its ``text``, its canonical ``key`` (``None`` when
    it needs an as-of date: a relative period or a bare quarter), and where it is."""

    text: str
    key: str | None
    start: int
    end: int


class TermSpotter:
    """Finds ``glossary``'s metric, entity and channel forms in a text (see the module docstring)."""

    def __init__(self, glossary: Glossary) -> None:
        self.glossary = glossary
        forms: list[tuple[int, str, str, str]] = []
        for section in SECTIONS:
            for key, term in glossary.terms[section].items():
                for form in dict.fromkeys(fold(f) for f in term.forms):
                    if form:
                        forms.append((len(form), section, key, form))
        forms.sort(key=lambda f: (-f[0], SECTIONS.index(f[1]), f[2], f[3]))
        self._patterns = [(section, key, form, _pattern(form)) for _, section, key, form in forms]

    def hits(self, folded: str) -> list[Hit]:
        """Every non-overlapping hit in ``folded`` (already :func:`fold`-ed), longest form first
        where two overlap, in text order."""
        taken: list[Hit] = []
        for section, key, form, pattern in self._patterns:
            for match in pattern.finditer(folded):
                start, end = match.span()
                if not any(start < h.end and h.start < end for h in taken):
                    taken.append(Hit(section, key, start, end, form))
        return sorted(taken, key=lambda h: h.start)


@lru_cache(maxsize=4)
def load_fact_glossary(path: str | None = None) -> Glossary:
    """``RAGSPINE_FACT_GLOSSARY``'s glossary, else the shipped demo glossary (read once per path)."""
    return Glossary.load(path) if path else Glossary.default()


def _pattern(form: str) -> re.Pattern[str]:
    body = re.escape(form)
    if re.fullmatch(_WORD, form[0]):
        body = rf"(?<!{_WORD})" + body
    if re.fullmatch(_WORD, form[-1]):
        body += rf"(?!{_WORD})"
    return re.compile(body)


def find_period(folded: str, glossary: Glossary, entity: str = "", *, as_of: date | None = None,
                skip: tuple[tuple[int, int], ...] = ()) -> PeriodMention | None:
    """The first period mention of ``folded`` outside the ``skip`` spans (see the module
    docstring); ``entity`` (a canonical key) chooses the fiscal calendar."""
    calendar = glossary.calendar(entity)
    aliases = glossary.period_aliases
    mentions: list[PeriodMention] = []
    end_of_last = -1
    for start_match in _PERIOD_START.finditer(folded):
        start = start_match.start()
        if start < end_of_last or _inside(start, skip):
            continue
        for end in range(min(len(folded), start + MAX_PERIOD_CHARS), start, -1):
            if not _boundary(folded, end) or _inside(end - 1, skip):
                continue
            text = folded[start:end].strip()
            reading = read_period(text, calendar, as_of=as_of, aliases=aliases)
            if reading.key is not None or reading.relative:
                mentions.append(PeriodMention(text, reading.key, start, end))
                end_of_last = end
                break
        if mentions:
            break
    bare = _bare_quarter(folded, as_of, skip)
    found = [m for m in (*mentions[:1], bare) if m is not None]
    return min(found, key=lambda m: (m.start, -m.end)) if found else None


def _bare_quarter(folded: str, as_of: date | None, skip: tuple[tuple[int, int], ...]) -> PeriodMention | None:
    best: PeriodMention | None = None
    for pattern in _BARE_QUARTER:
        for match in pattern.finditer(folded):
            if _inside(match.start(), skip):
                continue
            raw = match.groupdict().get("n") or match.groupdict().get("o") or ""
            quarter = int(raw) if raw.isdigit() else _ORDINAL[raw]
            key = latest_ended_quarter(quarter, as_of) if as_of is not None else None
            mention = PeriodMention(match.group(0).strip(), key, match.start(), match.end())
            if best is None or mention.start < best.start:
                best = mention
            break
    return best


def latest_ended_quarter(quarter: int, as_of: date) -> str | None:
    """The key of the latest calendar quarter ``quarter`` that has ended on ``as_of``; ``None``
    when that quarter's year is outside the calendar's range (an as-of date such as 0001-01-01):
    the period is then not resolved, as without an as-of date."""
    ended = (as_of.month, as_of.day) >= _QUARTER_END[quarter] if quarter < 4 else False
    try:
        return cal.quarter_key(as_of.year if ended else as_of.year - 1, quarter)
    except ValueError:
        return None


#: (month, day) on which each calendar quarter's last day has passed (Q4 ends with the year).
_QUARTER_END = {1: (4, 1), 2: (7, 1), 3: (10, 1)}


def _boundary(text: str, end: int) -> bool:
    if end >= len(text):
        return True
    before, after = text[end - 1], text[end]
    if _CJK_CHAR.match(before) or _CJK_CHAR.match(after):
        return True
    return not (re.match(_WORD, before) and re.match(_WORD, after))


def _inside(position: int, spans: tuple[tuple[int, int], ...]) -> bool:
    return any(start <= position < end for start, end in spans)
