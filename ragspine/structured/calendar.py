"""Canonical period keys and the fiscal calendar of an entity (pure; no I/O).

A canonical key names one span of time, so one span has one key per entity:

    ``2024``      calendar year          ``2024Q3``    calendar quarter
    ``2024-07``   calendar month         ``FY2024``    fiscal year      ``FY2024Q3``  fiscal quarter

An entity's :class:`FiscalCalendar` says when its fiscal year starts (``fiscal_year_start_month``)
and whether ``FY2024`` is named by the calendar year it starts in (``start``, the Japanese 年度
convention) or ends in (``end``). Fiscal periods that coincide with calendar ones take the
calendar key: for an entity whose fiscal year starts in January, ``FY2024`` *is* ``2024``; for
one starting in April (quarter-aligned), ``FY2024Q1`` named by its start is ``2024Q2``. Only
fiscal periods that match no calendar period keep the ``FY`` form.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

from ragspine.errors import ConfigError

MIN_YEAR, MAX_YEAR = 1900, 2199

_KEY = re.compile(r"^(?:(?P<fy>FY)?(?P<y>\d{4})(?:Q(?P<q>[1-4]))?|(?P<my>\d{4})-(?P<m>0[1-9]|1[0-2]))$")


@dataclass(frozen=True)
class FiscalCalendar:
    """When an entity's fiscal year starts, and which calendar year names it."""

    start_month: int = 1
    named_by: str = "start"  # "start" | "end"

    def __post_init__(self) -> None:
        if not isinstance(self.start_month, int) or isinstance(self.start_month, bool) or not 1 <= self.start_month <= 12:
            raise ConfigError(f"fiscal_year_start_month must be a month number within 1..12, got {self.start_month!r}")
        if self.named_by not in ("start", "end"):
            raise ConfigError(f"fiscal_year_named_by must be start or end, got {self.named_by!r}")

    @property
    def is_calendar(self) -> bool:
        return self.start_month == 1

    @property
    def quarter_aligned(self) -> bool:
        return (self.start_month - 1) % 3 == 0

    def first_month(self, fiscal_year: int) -> tuple[int, int]:
        """``(year, month)`` the fiscal year labelled ``fiscal_year`` starts in."""
        if self.is_calendar:
            return fiscal_year, 1
        year = fiscal_year if self.named_by == "start" else fiscal_year - 1
        return year, self.start_month

    def fiscal_year_of(self, day: date) -> int:
        """The label of the fiscal year that contains ``day``."""
        if self.is_calendar:
            return day.year
        start_year = day.year if day.month >= self.start_month else day.year - 1
        return start_year if self.named_by == "start" else start_year + 1

    def fiscal_quarter_of(self, day: date) -> tuple[int, int]:
        """``(fiscal year, quarter)`` containing ``day``."""
        label = self.fiscal_year_of(day)
        year, month = self.first_month(label)
        offset = (day.year - year) * 12 + day.month - month
        return label, offset // 3 + 1


CALENDAR_YEAR = FiscalCalendar()


def year_key(year: int) -> str:
    return f"{_year(year)}"


def quarter_key(year: int, quarter: int) -> str:
    return f"{_year(year)}Q{quarter}"


def month_key(year: int, month: int) -> str:
    if not 1 <= month <= 12:
        raise ValueError(f"month {month} is not within 1..12")
    return f"{_year(year)}-{month:02d}"


def fiscal_year_key(label: int, calendar: FiscalCalendar) -> str:
    return year_key(label) if calendar.is_calendar else f"FY{_year(label)}"


def fiscal_quarter_key(label: int, quarter: int, calendar: FiscalCalendar) -> str:
    """The calendar quarter it coincides with, else ``FY<label>Q<n>``."""
    if not calendar.quarter_aligned:
        return f"FY{_year(label)}Q{quarter}"
    year, month = calendar.first_month(label)
    index = year * 12 + (month - 1) + 3 * (quarter - 1)
    return quarter_key(index // 12, (index % 12) // 3 + 1)


def shift_quarter(year: int, quarter: int, by: int) -> tuple[int, int]:
    index = year * 4 + quarter - 1 + by
    return index // 4, index % 4 + 1


def shift_month(year: int, month: int, by: int) -> tuple[int, int]:
    index = year * 12 + month - 1 + by
    return index // 12, index % 12 + 1


def parse_key(key: str) -> tuple[str, int, int] | None:
    """``("year"|"quarter"|"month"|"fy"|"fyq", year, n)`` of a canonical key (``n`` 0 when
    unused), or ``None`` when ``key`` is not canonical."""
    match = _KEY.match(key)
    if not match:
        return None
    if match["my"]:
        return "month", int(match["my"]), int(match["m"])
    kind = ("fyq" if match["q"] else "fy") if match["fy"] else ("quarter" if match["q"] else "year")
    return kind, int(match["y"]), int(match["q"] or 0)


def _year(year: int) -> int:
    if not MIN_YEAR <= year <= MAX_YEAR:
        raise ValueError(f"year {year} is outside {MIN_YEAR}..{MAX_YEAR}")
    return year
