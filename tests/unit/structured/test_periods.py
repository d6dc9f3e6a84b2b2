"""Period text in three languages → canonical keys; fiscal calendars; relative periods."""

from __future__ import annotations

from datetime import date, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragspine.errors import ConfigError
from ragspine.structured.calendar import FiscalCalendar, fiscal_quarter_key, parse_key
from ragspine.structured.periods import fold, parse_as_of, read_period

APRIL = FiscalCalendar(4, "start")  # 2024年度 = April 2024 – March 2025
JULY_END = FiscalCalendar(7, "end")  # FY2024 = July 2023 – June 2024
FEBRUARY = FiscalCalendar(2, "start")  # quarters match no calendar quarter


@pytest.mark.parametrize(("text", "key"), [
    ("2024Q3", "2024Q3"), ("2024-Q3", "2024Q3"), ("2024 q3", "2024Q3"), ("Q3 2024", "2024Q3"), ("q3-2024", "2024Q3"),
    ("3Q24", "2024Q3"), ("3Q 2024", "2024Q3"), ("Q3 '24", "2024Q3"), ("third quarter of 2024", "2024Q3"),
    ("the third quarter of 2024", "2024Q3"), ("third-quarter 2024", "2024Q3"), ("2024, third quarter", "2024Q3"),
    ("2024年第三季度", "2024Q3"), ("2024年三季度", "2024Q3"), ("2024年第3季度", "2024Q3"), ("2024年Q3", "2024Q3"),
    ("2024年第3四半期", "2024Q3"), ("2024年の第3四半期", "2024Q3"), ("２０２４年第３四半期", "2024Q3"), ("２０２４Ｑ３", "2024Q3"),
    ("2024 年 第 3 季度", "2024Q3"),
    ("FY2024", "2024"), ("FY24", "2024"), ("fy 2024", "2024"), ("FY-24", "2024"), ("fiscal 2024", "2024"),
    ("fiscal year 2024", "2024"), ("2024年度", "2024"), ("2024财年", "2024"), ("2024会計年度", "2024"),
    ("FY2024Q3", "2024Q3"), ("Q3 FY24", "2024Q3"), ("2024年度第3四半期", "2024Q3"), ("2024财年第三季度", "2024Q3"),
    ("2024", "2024"), ("2024年", "2024"), ("CY2024", "2024"), ("calendar year 2024", "2024"), ("2024年全年", "2024"),
    ("2024-07", "2024-07"), ("2024/7", "2024-07"), ("2024.07", "2024-07"), ("2024年7月", "2024-07"), ("2024年七月份", "2024-07"),
    ("2024年十二月", "2024-12"), ("July 2024", "2024-07"), ("Jul. 2024", "2024-07"), ("2024 july", "2024-07"), ("SEPT 2024", "2024-09"),
])
def test_absolute_forms_of_a_calendar_year_entity(text: str, key: str) -> None:
    assert read_period(text).key == key


@pytest.mark.parametrize("text", [
    "2024Q5", "Q0 2024", "2024-13", "2024-00", "2024年13月", "1899", "2200Q1", "FY", "Q3", "quarter", "", "   ", "2024 Q3 2025",
    "前年", "next quarter", "2024Q3; DROP TABLE", "二〇二四年", "2024H1",
])
def test_what_does_not_read_is_unrecognized(text: str) -> None:
    reading = read_period(text, as_of=date(2025, 1, 1))
    assert reading.key is None and not reading.relative


def test_non_text_is_unrecognized() -> None:
    for value in (None, 2024, 2024.3, ["2024Q3"], "2" * 101):
        assert read_period(value).key is None


@pytest.mark.parametrize(("text", "key"), [
    ("FY2024", "FY2024"), ("2024年度", "FY2024"), ("FY24", "FY2024"),
    ("FY2024Q1", "2024Q2"), ("2024年度第1四半期", "2024Q2"), ("2024年度第4四半期", "2025Q1"),  # quarter-aligned: calendar keys
    ("2024", "2024"), ("2024Q3", "2024Q3"),  # calendar periods stay calendar periods
])
def test_a_fiscal_year_starting_in_april(text: str, key: str) -> None:
    assert read_period(text, APRIL).key == key


def test_fiscal_years_named_by_their_end_and_misaligned_quarters() -> None:
    assert JULY_END.first_month(2024) == (2023, 7)
    assert read_period("FY2024Q1", JULY_END).key == "2023Q3"
    assert read_period("FY2024Q3", FEBRUARY).key == "FY2024Q3"
    assert fiscal_quarter_key(2024, 4, FEBRUARY) == "FY2024Q4"
    assert FEBRUARY.fiscal_quarter_of(date(2025, 1, 31)) == (2024, 4)
    with pytest.raises(ConfigError):
        FiscalCalendar(13)
    with pytest.raises(ConfigError):
        FiscalCalendar(4, "middle")


RELATIVE = [  # (text, calendar, as_of, key)
    ("去年三季度", None, date(2025, 3, 1), "2024Q3"), ("去年第三季度", None, date(2025, 3, 1), "2024Q3"),
    ("去年的第三季度", None, date(2025, 3, 1), "2024Q3"), ("昨年の第3四半期", None, date(2025, 3, 1), "2024Q3"),
    ("Q3 last year", None, date(2025, 3, 1), "2024Q3"), ("the third quarter of last year", None, date(2025, 3, 1), "2024Q3"),
    ("last year's Q3", None, date(2025, 3, 1), "2024Q3"), ("今年Q1", None, date(2025, 3, 1), "2025Q1"),
    ("last quarter", None, date(2025, 1, 5), "2024Q4"), ("上季度", None, date(2024, 11, 2), "2024Q3"),
    ("上个季度", None, date(2024, 7, 1), "2024Q2"), ("前四半期", None, date(2024, 1, 1), "2023Q4"),
    ("this quarter", None, date(2024, 8, 9), "2024Q3"), ("本季度", None, date(2024, 8, 9), "2024Q3"),
    ("last year", None, date(2025, 1, 1), "2024"), ("去年", None, date(2025, 1, 1), "2024"), ("昨年", None, date(2025, 1, 1), "2024"),
    ("一昨年", None, date(2025, 1, 1), "2023"), ("last month", None, date(2025, 1, 15), "2024-12"), ("先月", None, date(2024, 8, 1), "2024-07"),
    ("上个月", None, date(2024, 8, 1), "2024-07"),
    ("前年度", APRIL, date(2025, 2, 10), "FY2023"), ("前期", APRIL, date(2025, 4, 1), "FY2024"), ("今期", APRIL, date(2025, 3, 31), "FY2024"),
    ("前々期", APRIL, date(2025, 5, 1), "FY2023"), ("last fiscal year", None, date(2025, 2, 10), "2024"),
    ("前年度第3四半期", APRIL, date(2025, 5, 1), "2024Q4"), ("上财年", None, date(2025, 5, 1), "2024"),
    ("last quarter", FEBRUARY, date(2024, 5, 15), "FY2024Q1"),
]


@pytest.mark.parametrize(("text", "calendar", "as_of", "key"), RELATIVE)
def test_relative_periods_resolve_only_against_an_as_of_date(text, calendar, as_of, key) -> None:
    c = calendar or FiscalCalendar()
    assert read_period(text, c, as_of=as_of).key == key
    without = read_period(text, c)
    assert without.key is None and without.relative  # unrecognized, and why


def test_glossary_aliases_name_canonical_periods() -> None:
    aliases = {fold("the autumn quarter"): "FY2024Q2"}
    assert read_period("The Autumn  Quarter", APRIL, aliases=aliases).key == "2024Q3"
    assert read_period("the autumn quarter").key is None


def test_as_of_dates() -> None:
    assert parse_as_of("2024-11-15") == date(2024, 11, 15) == parse_as_of("２０２４-１１-１５")
    assert parse_as_of(datetime(2024, 11, 15, 9)) == date(2024, 11, 15) == parse_as_of(date(2024, 11, 15))
    for bad in ("2024-13-01", "2024-02-30", "15/11/2024", "yesterday", "", 20241115, None):
        with pytest.raises(ValueError):
            parse_as_of(bad)


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=30), st.sampled_from([FiscalCalendar(), APRIL, JULY_END, FEBRUARY]), st.one_of(st.none(), st.dates()))
def test_any_text_reads_as_a_canonical_key_or_nothing(text: str, calendar: FiscalCalendar, as_of: date | None) -> None:
    reading = read_period(text, calendar, as_of=as_of)
    assert reading.key is None or parse_key(reading.key) is not None
    if reading.key is not None and as_of is None:
        assert not reading.relative


@pytest.mark.parametrize(("text", "as_of", "key"), [
    ("FY50", date(2026, 12, 5), "1950"),  # was 2050: two-digit years always meant 20xx
    ("FY24", date(2026, 12, 5), "2024"),
    ("FY45", date(2026, 12, 5), "2045"),  # the window runs 19 years past the as-of year
    ("FY46", date(2026, 12, 5), "1946"),
    ("Q3 '99", date(2024, 1, 1), "1999Q3"),
    ("3Q05", date(1980, 6, 1), "1905Q3"),
    ("3Q05", date(2024, 6, 1), "2005Q3"),
])
def test_a_two_digit_year_follows_the_as_of_dates_century_window(text, as_of, key) -> None:
    assert read_period(text, as_of=as_of).key == key


def test_a_two_digit_year_without_an_as_of_date_follows_todays_window() -> None:
    from ragspine.structured.periods import two_digit_year

    this_year = date.today().year
    assert two_digit_year(this_year % 100) == this_year
    assert two_digit_year((this_year + 19) % 100) == this_year + 19
    assert two_digit_year((this_year + 20) % 100) == this_year - 80
