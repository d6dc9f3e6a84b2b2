"""Reading a question: glossary slots in a whole question (en/zh/ja), periods with and without an
as-of date, bare quarters, the shape cues, the language."""

from __future__ import annotations

from datetime import date

import pytest

from ragspine.agent.reading import narrative_query, read_question
from ragspine.agent.spotting import TermSpotter, latest_ended_quarter
from ragspine.structured import Glossary

SPOTTER = TermSpotter(Glossary.default())
AS_OF = date(2024, 11, 15)

SLOTS = [
    ("What was Kestrel's revenue in Q3 2024?", None, ("revenue", "KESTREL", "2024Q3", None)),
    ("why did Kestrel's Q3 revenue fall, and by how much?", AS_OF, ("revenue", "KESTREL", "2024Q3", None)),
    ("why did Kestrel's Q3 revenue fall, and by how much?", None, ("revenue", "KESTREL", "q3", None)),
    ("What was Kestrel's service revenue in the third quarter of 2024?", None, ("service_revenue", "KESTREL", "2024Q3", None)),
    ("Kestrel China revenue last quarter via direct sales", AS_OF, ("revenue", "KESTREL_CN", "2024Q3", "direct")),
    ("Kestrel China revenue last quarter via direct sales", None, ("revenue", "KESTREL_CN", "last quarter", "direct")),
    ("红隼机器人2024年第三季度的营收是多少？", None, ("revenue", "KESTREL", "2024Q3", None)),
    ("中国区营收为什么下滑？", None, ("revenue", "KESTREL_CN", None, None)),
    ("ケストレルの２０２４年第３四半期の売上高はいくらですか", None, ("revenue", "KESTREL", "2024Q3", None)),
    ("ケストレル・ジャパンの前年度の売上高は？", AS_OF, ("revenue", "KESTREL_JP", "FY2023", None)),
    ("How long is the warranty on gearboxes?", None, (None, None, None, None)),
    ("Kestrels and revenues of 1400 units", None, (None, None, None, None)),
]


@pytest.mark.parametrize(("question", "as_of", "slots"), SLOTS)
def test_slots(question, as_of, slots) -> None:
    reading = read_question(question, SPOTTER, as_of=as_of)
    assert tuple(reading.slots.values()) == slots


@pytest.mark.parametrize(("question", "explains", "asks_number", "language"), [
    ("Why did revenue fall?", True, False, "en"),
    ("How did Kestrel do?", True, False, "en"),
    ("How much revenue did Kestrel book?", False, True, "en"),
    ("How long is the warranty?", False, False, "en"),
    ("why did Kestrel's Q3 revenue fall, and by how much?", True, True, "en"),
    ("营收为什么下滑，下降了多少？", True, True, "zh"),
    ("売上高はなぜ減ったのか、いくら減ったのか", True, True, "ja"),
    ("第3四半期の売上高", False, False, "ja"),
    ("Show the revenue", False, False, "en"),
])
def test_shape_and_language(question, explains, asks_number, language) -> None:
    reading = read_question(question, SPOTTER)
    assert (reading.explains, reading.asks_number, reading.language) == (explains, asks_number, language)


def test_an_unknown_metric_leaves_its_words_as_the_residue() -> None:
    reading = read_question("How much EBITDA did Kestrel make in Q3 2024?", SPOTTER)
    assert reading.metric is None and reading.residue == "ebitda"


@pytest.mark.parametrize(("quarter", "as_of", "key"), [
    (3, date(2024, 10, 1), "2024Q3"), (3, date(2024, 9, 30), "2023Q3"), (1, date(2024, 4, 1), "2024Q1"),
    (4, date(2024, 12, 31), "2023Q4"), (4, date(2025, 1, 1), "2024Q4"), (2, date(2024, 6, 30), "2023Q2"),
])
def test_a_bare_quarter_is_the_latest_that_has_ended(quarter, as_of, key) -> None:
    assert latest_ended_quarter(quarter, as_of) == key


@pytest.mark.parametrize("as_of", [date(1, 1, 1), date(1900, 3, 1), date(9999, 12, 31)])
def test_a_bare_quarter_outside_the_calendar_has_no_key(as_of) -> None:
    assert latest_ended_quarter(3, as_of) is None
    reading = read_question("What was Kestrel's revenue in Q3?", SPOTTER, as_of=as_of)
    assert reading.period is not None and reading.period.key is None


def test_the_longest_form_wins_and_words_end_at_word_boundaries() -> None:
    hits = SPOTTER.hits("kestrel china service revenue, kestrels, revenues, 红隼中国营收")
    assert [(h.section, h.key) for h in hits] == [
        ("entities", "KESTREL_CN"), ("metrics", "service_revenue"), ("entities", "KESTREL_CN"), ("metrics", "revenue"),
    ]


@pytest.mark.parametrize(("question", "sub_query"), [
    ("why did Kestrel's Q3 revenue fall, and by how much?", "why did Kestrel's Q3 revenue fall"),
    ("why did revenue fall and by how much?", "why did revenue fall"),
    ("营收为什么下滑，下降了多少？", "营收为什么下滑"),
    ("売上高はなぜ減ったのか、いくら減ったのか", "売上高はなぜ減ったのか"),
    ("Why did revenue fall?", "Why did revenue fall?"),
    ("How much did revenue fall?", "How much did revenue fall?"),
])
def test_the_narrative_sub_query_leaves_out_the_clauses_asking_for_a_quantity(question, sub_query) -> None:
    assert narrative_query(question) == sub_query
