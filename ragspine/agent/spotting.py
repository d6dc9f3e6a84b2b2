"""Glossary terms and periods found inside a whole question (pure; no I/O, no model).

:class:`TermSpotter` finds the metric, entity and channel forms of a controlled
:class:`~ragspine.structured.glossary.Glossary` in free text, by the glossary's own folding
(:func:`~ragspine.structured.periods.fold`: NFKC, case, whitespace). A form whose end is a
letter or digit of an alphabetic script must end a word there (``Kestrel`` matches
``Kestrel's`` but not ``Kestrels``); a CJK form matches anywhere (``营收`` in ``中国区营收为什么``).
Overlapping hits keep the longest form (``Kestrel China`` over ``Kestrel``, ``service revenue``
over ``revenue``). A form that folds to a function word (:data:`~ragspine.agent.words.FUNCTION_WORDS`:
``us``, ``it``, ``or``) names its term only where the question writes it in capitals (``US``,
never ``tell us``).

:func:`longer_term` says when a metric hit sits inside a longer term the glossary does not know
(``cost of sales``, ``core inflation``, ``inflation expectations``, 劳动人口, 売上原価): the words
joined to it are neither function words, other hits, periods nor words that leave the term alone
(:mod:`ragspine.agent.words`). Such a hit is not that metric.

:func:`find_periods` finds every period mention: any form the period grammar reads
(:func:`~ragspine.structured.periods.read_period`, up to its own length limit, so the agent reads
every phrase ``query_metric`` reads: ``Q3 2024``, ``2024年第三季度``, ``FY24``, ``the second
quarter of fiscal year 2008``, ``last quarter`` ...) or a *bare quarter* (``Q3``, ``third
quarter``, ``三季度``, ``第3四半期``) — but never a year that belongs to a unit or a price basis
(``in 1947 dollars``, ``2005 prices``, ``1954=100``, ``2000年不变价格``, :func:`unit_year_spans`).
A bare quarter, like a relative period, has a key only against an explicit as-of date: the
latest such calendar quarter that has ended on that date (asked on 2024-10-30, ``Q3`` is
``2024Q3``; on 2024-09-15 it is ``2023Q3``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from functools import lru_cache

from ragspine.agent import words
from ragspine.deadline import check as check_deadline
from ragspine.structured import calendar as cal
from ragspine.structured.glossary import Glossary
from ragspine.structured.periods import MAX_PERIOD_TEXT, fold, read_period

SECTIONS = ("metrics", "entities", "channels")
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

    def hits(self, folded: str, cased: str | None = None) -> list[Hit]:
        """Every non-overlapping hit in ``folded`` (already :func:`fold`-ed), longest form first
        where two overlap, in text order. ``cased``: the same question folded with its case kept
        (``fold(question, casefold=False)``); a form that is a function word matches only where
        ``cased`` writes it in capitals (without ``cased``, nowhere)."""
        aligned = cased if cased is not None and len(cased) == len(folded) else None
        taken: list[Hit] = []
        for section, key, form, pattern in self._patterns:
            for match in pattern.finditer(folded):
                check_deadline("reading the question")
                start, end = match.span()
                if form in words.FUNCTION_WORDS and not (aligned is not None and aligned[start:end].isupper()):
                    continue
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
    """The first of :func:`find_periods`, or ``None``."""
    found = find_periods(folded, glossary, entity, as_of=as_of, skip=skip)
    return found[0] if found else None


def find_periods(folded: str, glossary: Glossary, entity: str = "", *, as_of: date | None = None,
                 skip: tuple[tuple[int, int], ...] = ()) -> list[PeriodMention]:
    """Every period mention of ``folded`` outside the ``skip`` spans and outside a unit's year
    (see the module docstring), in text order; where two overlap the longer one is kept.
    ``entity`` (a canonical key) chooses the fiscal calendar."""
    calendar = glossary.calendar(entity)
    aliases = glossary.period_aliases
    skip = (*skip, *unit_year_spans(folded))
    mentions: list[PeriodMention] = []
    end_of_last = -1
    for start_match in _PERIOD_START.finditer(folded):
        check_deadline("reading the question's periods")
        start = start_match.start()
        if start < end_of_last or _inside(start, skip):
            continue
        ends = [e for e in range(start + 1, min(len(folded), start + MAX_PERIOD_TEXT) + 1) if _boundary(folded, e)]
        for end in reversed(ends[:_MAX_PERIOD_BOUNDARIES]):
            if _overlaps(start, end, skip):
                continue
            text = folded[start:end].strip()
            reading = read_period(text, calendar, as_of=as_of, aliases=aliases)
            if reading.key is not None or reading.relative:
                mentions.append(PeriodMention(text, reading.key, start, end))
                end_of_last = end
                break
    mentions += _bare_quarters(folded, as_of, skip)
    kept: list[PeriodMention] = []
    for mention in sorted(mentions, key=lambda m: (-(m.end - m.start), m.start)):
        if not any(mention.start < k.end and k.start < mention.end for k in kept):
            kept.append(mention)
    return sorted(kept, key=lambda m: m.start)


#: The most word (or CJK character) boundaries a period mention spans: ``the second quarter of
#: fiscal year 2008`` has 13, ``2024财年第三季度`` 9.
_MAX_PERIOD_BOUNDARIES = 24

#: A year that is part of a unit or a price basis, not the period asked about.
_UNIT_YEAR = re.compile(
    r"(?<![0-9])(?:(?:constant|chained|real|fixed|current) )?\(?[0-9]{4}\)?[- ]?(?:u\.?s\.? ?)?"
    r"(?:dollars?|usd|\$|euros?|eur|yen|yuan|rmb|renminbi|pounds?|sterling|francs?|marks?|prices?|money|currency|"
    r"dollar terms|price level|base|based|=100|= 100|basis)(?![a-z])"
    r"|(?:dollars?|prices?|euros?|yen|yuan) (?:of|in|at) [0-9]{4}(?![0-9])"
    r"|(?:base|reference|index) (?:year|period)?:? ?[0-9]{4}(?![0-9])"
    r"|以?[0-9]{4}年?(?:为基[期准年数]?|為基[期準年數]?|基準|基准|=100)"
    r"|[0-9]{4}年(?:的)?(?:不变价格?|不變價格?|可比价格?|价格|價格|美元|美金|人民币|日元|欧元|元|ドル|円|ユーロ|価格|不変価格|実質価格|基準)"
)


def unit_year_spans(folded: str) -> tuple[tuple[int, int], ...]:
    """Where ``folded`` names a year as part of a unit or price basis (``1947 dollars``,
    ``prices of 2005``, ``base year 2010``, ``2000年不变价格``, ``2015年基準``)."""
    return tuple(m.span() for m in _UNIT_YEAR.finditer(folded))


def longer_term(folded: str, hit: Hit, occupied: tuple[tuple[int, int], ...]) -> str | None:
    """The longer term ``hit`` sits inside (see the module docstring), as the question's folded
    words, else ``None``. ``occupied``: the spans of the other hits and of the periods."""
    start, end = hit.start, hit.end
    new_start = _extend_left(folded, start, occupied)
    new_end = _extend_right(folded, end, occupied)
    if new_start == start and new_end == end:
        return None
    return folded[new_start:new_end].strip()


_LATIN_BEFORE = re.compile(r"([a-z][a-z'-]*) $")
_LATIN_AFTER = re.compile(r" ([a-z][a-z'-]*)")
_MAX_JOINED_WORDS = 3


def _extend_left(folded: str, start: int, occupied: tuple[tuple[int, int], ...]) -> int:
    if start == 0:
        return start
    if _CJK_CHAR.match(folded[start - 1]):
        return _extend_cjk_left(folded, start, occupied)
    current = scan = start
    past_hit = False  # a hit (an entity, a period) stands between: only ``<head> of`` may join
    for _ in range(_MAX_JOINED_WORDS + 2):
        if folded.endswith(("'s ", "' "), 0, scan) and not past_hit:
            return current
        match = _LATIN_BEFORE.search(folded, 0, scan)
        if match is None:
            return current
        span = next((s for s in occupied if s[0] < match.end(1) and match.start(1) < s[1]), None)
        if span is not None:
            past_hit, scan = True, span[0]
            continue
        word = match.group(1).strip("'-")
        if word in words.EN_JOINERS:
            head = _LATIN_BEFORE.search(folded, 0, match.start(1))
            if head is None or _overlaps(head.start(1), head.end(1), occupied):
                return current
            head_word = head.group(1).strip("'-")
            if head_word in words.EN_HEAD_NEUTRAL or head_word in words.EN_BEFORE:
                return current
            current = scan = head.start(1)
            continue
        if past_hit and word in ("the", "a", "an"):
            scan = match.start(1)
            continue
        if past_hit or word in words.EN_BEFORE:
            return current
        current = scan = match.start(1)
    return current


def _extend_right(folded: str, end: int, occupied: tuple[tuple[int, int], ...]) -> int:
    if end >= len(folded):
        return end
    if _CJK_CHAR.match(folded[end]):
        return _extend_cjk_right(folded, end, occupied)
    current = end
    if folded.startswith("'s", current):
        return end
    for _ in range(_MAX_JOINED_WORDS):
        match = _LATIN_AFTER.match(folded, current)
        if match is None or _overlaps(match.start(1), match.end(1), occupied):
            return current
        word = match.group(1).strip("'-")
        if word in words.EN_AFTER or (word in words.EN_AFTER_VERBS and _auxiliary_before(folded, end)):
            return current
        current = match.end(1)
    return current


def _auxiliary_before(folded: str, position: int) -> bool:
    return any(w in words.EN_AUXILIARIES for w in re.findall(r"[a-z]+", folded[:position]))


_HIRAGANA = re.compile(r"[\u3040-\u309f]")


def _extend_cjk_left(folded: str, start: int, occupied: tuple[tuple[int, int], ...]) -> int:
    current = start
    while current > 0 and _CJK_CHAR.match(folded[current - 1]) and not _HIRAGANA.match(folded[current - 1]):
        if _inside(current - 1, occupied) or folded.endswith(words.CJK_BEFORE, 0, current):
            break
        current -= 1
    return current


def _extend_cjk_right(folded: str, end: int, occupied: tuple[tuple[int, int], ...]) -> int:
    current = end
    if folded.startswith(words.CJK_LINKS, current) and current + 1 < len(folded):
        follows = current + 1
        if (not _CJK_CHAR.match(folded[follows]) or _inside(follows, occupied) or _HIRAGANA.match(folded[follows])
                or folded.startswith(words.CJK_NEUTRAL, follows) or _cjk_boundary_after(folded, follows)):
            return end
        current = follows
    while current < len(folded) and _CJK_CHAR.match(folded[current]) and not _HIRAGANA.match(folded[current]):
        if _inside(current, occupied) or _cjk_boundary_after(folded, current):
            break
        current += 1
    return current


def _cjk_boundary_after(folded: str, position: int) -> bool:
    for morpheme in words.CJK_AFTER:
        if folded.startswith(morpheme, position):
            rest = folded[position + len(morpheme):position + len(morpheme) + 2]
            if not any(ch in words.CJK_NOUN_ENDINGS for ch in rest):
                return True
    return False


def _overlaps(start: int, end: int, spans: tuple[tuple[int, int], ...]) -> bool:
    return any(start < e and s < end for s, e in spans)


def _bare_quarters(folded: str, as_of: date | None, skip: tuple[tuple[int, int], ...]) -> list[PeriodMention]:
    found: list[PeriodMention] = []
    for pattern in _BARE_QUARTER:
        for match in pattern.finditer(folded):
            if _inside(match.start(), skip):
                continue
            raw = match.groupdict().get("n") or match.groupdict().get("o") or ""
            quarter = int(raw) if raw.isdigit() else _ORDINAL[raw]
            key = latest_ended_quarter(quarter, as_of) if as_of is not None else None
            found.append(PeriodMention(match.group(0).strip(), key, match.start(), match.end()))
    return found


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
