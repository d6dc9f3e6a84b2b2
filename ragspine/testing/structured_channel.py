"""The structured channel's invariants as plain functions raising ``AssertionError``.

Run them on every result a channel gives (the agent's tests, a fuzzer, your own channel):

* :func:`assert_no_numeral` — a result that is not ``found`` carries no digit (``\\d``, full-width
  ``０-９``, any Unicode numeral) anywhere, and never echoes an input holding one;
* :func:`assert_provenance` — a ``found`` answer is the one active, non-RESTRICTED stored fact
  of its keys, and every number in its prose is one that fact (or the glossary's labels) holds;
* :func:`assert_restricted_isolated` — a key held only by a RESTRICTED fact answers exactly
  what an absent key answers, in every language.

RAGSpine's pack (``tests/conformance/test_structured_channel.py``) proves each can fail by
running it on a deliberately leaky implementation.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Sequence

from ragspine.retrieval.sensitivity import is_restricted
from ragspine.structured.glossary import Glossary
from ragspine.structured.prose import period_label
from ragspine.structured.result import FOUND, LANGUAGES, NOT_FOUND, STATUSES, MetricResult, has_numeral

if TYPE_CHECKING:
    from ragspine.structured.base import FactStore

ASCII_OR_FULL_WIDTH_DIGIT = (re.compile(r"\d"), re.compile(r"[０-９]"))
_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?")


def strings(value: Any) -> list[str]:
    """Every string in a nested dict/list/tuple (keys included)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in strings(k) + strings(v)]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in strings(v)]
    return []


def assert_no_numeral(result: MetricResult, *inputs: object) -> None:
    """A result that is not ``found`` carries no numeral in any field of ``to_dict()``, and does
    not echo an input that holds one."""
    assert result.status in STATUSES, result.status
    if result.status == FOUND:
        return
    for text in strings(result.to_dict()):
        for pattern in ASCII_OR_FULL_WIDTH_DIGIT:
            assert not pattern.search(text), f"{result.status} carries a digit: {text!r}"
        assert not has_numeral(text), f"{result.status} carries a numeral: {text!r}"
    for value in inputs:
        if isinstance(value, str) and has_numeral(value):
            assert value.strip() not in result.text, f"{result.status} echoes the input {value!r}"


def assert_provenance(result: MetricResult, store: FactStore, glossary: Glossary) -> None:
    """A ``found`` answer resolves to exactly one stored fact (any sensitivity, to catch a
    RESTRICTED one), which is not RESTRICTED, whose value, unit and provenance it repeats, and
    whose prose states no number the fact and the glossary's labels of it do not hold."""
    if result.status != FOUND:
        return
    key = (result.metric, result.entity, result.period, result.channel)
    matches = [f for f in store.iter_facts(include_restricted=True) if (f.metric, f.entity, f.period, f.channel) == key]
    assert len(matches) == 1, f"found {result.metric}/{result.period} resolves to {len(matches)} stored facts"
    fact = matches[0]
    assert not is_restricted(fact.sensitivity), "a found answer is a RESTRICTED fact"
    stored = (format(fact.value, "f"), fact.unit, fact.source_doc_id, fact.source_locator, fact.valid_as_of)
    given = (result.value, result.unit, result.source_doc_id, result.source_locator, result.valid_as_of)
    assert given == stored, f"the found answer {given} is not the stored fact {stored}"
    for part in (result.value, result.source_doc_id, result.source_locator, result.valid_as_of):
        assert part in result.text, f"the prose lacks {part!r}: {result.text!r}"
    lang = result.language
    labels = [glossary.label(s, k, lang) for s, k in (("metrics", fact.metric), ("entities", fact.entity),
                                                       ("units", fact.unit), ("channels", fact.channel))]
    held = " ".join([*stored, period_label(fact.period, lang), *labels])
    for number in _NUMBER.findall(result.text):
        assert number in held, f"the prose states {number!r}, which the stored fact does not hold: {result.text!r}"


def assert_restricted_isolated(channel: Any, keys: Sequence[tuple[str, str, str]], absent_period: str = "1999Q1") -> None:
    """Each ``(metric, entity, period)`` in ``keys`` — held only by RESTRICTED facts — answers
    exactly (every field) what the same metric and entity answer for a period with no fact."""
    for metric, entity, period in keys:
        for language in LANGUAGES:
            got = channel.query_metric(metric, entity, period, language=language)
            absent = channel.query_metric(metric, entity, absent_period, language=language)
            assert absent.status == NOT_FOUND, f"{absent_period} is not an absent period here"
            assert got.to_dict() == absent.to_dict(), f"{metric}/{period}: a RESTRICTED fact shows ({got.status})"
