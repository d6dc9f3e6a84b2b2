"""Facts from CSV or JSON, all or nothing: every row is checked before anything is written.

A file holds rows of the fields ``metric, entity, period, value, source_doc_id, source_locator,
valid_as_of`` (required) and ``channel`` (default ``total``), ``unit`` (default empty),
``sensitivity`` (default ``INTERNAL``) — a CSV with a header line, a JSON list of objects (or
``{"facts": [...]}``), or JSON Lines (``.jsonl``). Metric, entity, channel and unit go through the
glossary to their canonical keys, the period through the period grammar with the entity's fiscal
calendar (a relative period is refused: a stored fact never depends on the day it was read).

Text already in hand (``POST /v1/facts``'s ``csv``) is read by :func:`csv_rows` and written by
:func:`write_facts`, with the same checks.

Every problem of every row is reported as ``row N, field F: what is wrong; the fix`` (rows count
from 1, the first data row; a CSV row also names its line) in one :class:`FactFileError`, and
nothing is written. A header or row has at most :data:`MAX_FACT_COLUMNS` columns (a fact has ten
fields), and an error names at most :data:`MAX_KEYS_NAMED` unknown columns or keys of one
header or row (then their count), so neither the work nor an error grows with a hostile row.
A text cell that starts like a spreadsheet formula (``=``, ``+``, ``-`` or ``@``, also
full-width, and is not a number: ``=HYPERLINK(...)``) is refused: a stored fact's text is echoed
as its ``source_locator`` and would run in the spreadsheet of whoever exports it. A label that
looks like RESTRICTED (``RESTRICTED`` + a zero-width space, full-width or Cyrillic letters) is
stored as ``RESTRICTED``; an explicit ``"sensitivity": null`` is refused.

A row whose key another source document holds is refused with one generic message that names
no source and reads the same whoever holds the key (RESTRICTED or open): :data:`CLASH_MESSAGE`.
A good file is one :meth:`FactStore.replace_facts` transaction: each source
document it names is replaced by the file's rows for it, atomically; other sources are untouched.
"""

from __future__ import annotations

import csv
import io
import json
import re
import unicodedata
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from ragspine.deadline import check as check_deadline
from ragspine.errors import IngestError
from ragspine.retrieval.sensitivity import is_restricted, parse_sensitivity
from ragspine.structured.base import TOTAL_CHANNEL, Fact, FactClashError, FactKey, FactStore, SourceFacts
from ragspine.structured.converters import value_text
from ragspine.structured.glossary import Glossary
from ragspine.structured.periods import parse_as_of, read_period

FIELDS = ("metric", "entity", "period", "channel", "value", "unit", "source_doc_id", "source_locator", "valid_as_of", "sensitivity")
REQUIRED = ("metric", "entity", "period", "value", "source_doc_id", "source_locator", "valid_as_of")
MAX_ERRORS_SHOWN = 20
#: Columns of a CSV header, keys of a JSON row: at most this many (a fact has ten fields).
MAX_FACT_COLUMNS = 64
#: Unknown columns or keys one error names (then "and N more").
MAX_KEYS_NAMED = 5
_MAX_NAME = 64  # characters of an unknown column's name shown
#: What a row whose key another source holds is told — whoever holds it, RESTRICTED or not.
CLASH_MESSAGE = ("another source document already holds an active fact for this metric, entity, period and channel;"
                 " re-ingest the source that holds it without that fact, or ingest both sources in one file")
_FORMULA = tuple("=+-@")
_NUMBER = re.compile(r"[-+]?([0-9]+([.,][0-9]*)?|[.,][0-9]+)([eE][-+]?[0-9]+)?%?")
_MAX_TEXT = 1000
_SECTIONS = {"metric": "metrics", "entity": "entities", "channel": "channels"}


@dataclass(frozen=True)
class RowError:
    row: int  # 1 = the first data row; 0 = the file as a whole (its header, its shape)
    field: str
    message: str  # what is wrong, and the fix
    line: int | None = None

    def __str__(self) -> str:
        where = "file" if self.row == 0 else f"row {self.row}" + (f" (line {self.line})" if self.line else "")
        return f"{where}, field {self.field}: {self.message}" if self.field else f"{where}: {self.message}"


class FactFileError(IngestError):
    """A fact file with bad rows: ``errors`` lists every one; nothing was written."""

    def __init__(self, source: str, errors: Sequence[RowError]) -> None:
        self.source, self.errors = source, list(errors)
        shown = "; ".join(map(str, self.errors[:MAX_ERRORS_SHOWN]))
        more = f"; and {len(self.errors) - MAX_ERRORS_SHOWN} more" if len(self.errors) > MAX_ERRORS_SHOWN else ""
        n = len(self.errors)
        super().__init__(f"{source}: {n} problem{'s' if n > 1 else ''}, nothing was written: {shown}{more}")


@dataclass(frozen=True)
class IngestReport:
    facts: int
    sources: tuple[str, ...]
    restricted: int


def ingest_facts(store: FactStore, path_or_rows: str | Path | Iterable[Mapping[str, Any]], *, glossary: Glossary | None = None) -> IngestReport:
    """Check every row of a CSV/JSON/JSONL file (or of an iterable of mappings), then replace the
    sources it names in one transaction (see the module docstring)."""
    name, rows = read_rows(path_or_rows)
    return write_facts(store, name, rows, glossary=glossary)


def write_facts(store: FactStore, name: str, rows: Sequence[tuple[int | None, Any]], *, glossary: Glossary | None = None) -> IngestReport:
    """Check every row of ``rows`` (``[(line or None, row)]``, as :func:`read_rows` or
    :func:`csv_rows` read them; ``name`` names them in errors), then write them (see
    :func:`ingest_facts`)."""
    glossary = glossary if glossary is not None else Glossary.default()
    facts, errors, where = parse_rows(rows, glossary)
    if errors:
        raise FactFileError(name, errors)
    if not facts:
        raise FactFileError(name, [RowError(0, "", "no fact rows; give a header line and one row per fact")])
    by_source: dict[str, list[Fact]] = {}
    for fact in facts:
        by_source.setdefault(fact.source_doc_id, []).append(fact)
    try:
        written = store.replace_facts([SourceFacts(s, f) for s, f in by_source.items()])
    except FactClashError as exc:  # the same answer whoever holds the key: no source, no sensitivity
        row, line = where[exc.key]
        raise FactFileError(name, [RowError(row, "metric/entity/period/channel", CLASH_MESSAGE, line)]) from None
    return IngestReport(written, tuple(by_source), sum(is_restricted(f.sensitivity) for f in facts))


def read_rows(path_or_rows: str | Path | Iterable[Mapping[str, Any]]) -> tuple[str, list[tuple[int | None, Any]]]:
    """``(name, [(line or None, row)])`` of a file (by its suffix: .csv, .json, .jsonl) or rows."""
    if not isinstance(path_or_rows, (str, Path)):
        return "rows", [(None, row) for row in path_or_rows]
    path = Path(path_or_rows)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise IngestError(f"cannot read {str(path)!r}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise FactFileError(str(path), [RowError(0, "", "not UTF-8 text; save it as UTF-8")]) from None
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return str(path), csv_rows(str(path), text)
    if suffix in (".json", ".jsonl"):
        return str(path), _json_rows(str(path), text, lines=suffix == ".jsonl")
    raise IngestError(f"{str(path)!r}: facts are read from .csv, .json or .jsonl files")


def csv_rows(name: str, text: str) -> list[tuple[int | None, Any]]:
    """``[(line, row)]`` of CSV ``text`` with a header line (blank lines skipped; a row with the
    wrong number of cells is kept as a malformed row, reported by :func:`parse_rows`). A bad
    header or broken CSV raises :class:`FactFileError` (``name`` names the file)."""
    reader = csv.reader(io.StringIO(text.removeprefix("\ufeff"), newline=""), strict=True)
    try:
        header = next(reader, None)
        if header is None:
            return []
        if len(header) > MAX_FACT_COLUMNS:
            raise FactFileError(name, [RowError(0, "", too_many_columns(len(header), "the header", "columns"))])
        header = [h.strip().lower() for h in header]
        problems = [RowError(0, f, m) for f, m in unknown_names([h for h in header if h not in FIELDS], "column")]
        present = set(header)
        problems += [RowError(0, f, "missing column; the header needs " + ", ".join(REQUIRED)) for f in REQUIRED if f not in present]
        seen: set[str] = set()
        for h in header:  # linear: one set, never the header searched per column
            if h in seen and h in FIELDS:
                problems.append(RowError(0, h, "appears twice in the header"))
            seen.add(h)
        if problems:
            raise FactFileError(name, problems)
        rows: list[tuple[int | None, Any]] = []
        for record in reader:
            check_deadline("reading the CSV rows")  # a request's deadline stops the work, not only the answer
            if not any(cell.strip() for cell in record):
                continue  # a blank line
            line = reader.line_num
            rows.append((line, dict(zip(header, record, strict=True)) if len(record) == len(header) else
                         _Malformed(f"has {len(record)} cells, the header has {len(header)}; quote cells that hold commas")))
    except csv.Error as exc:
        raise FactFileError(name, [RowError(0, "", f"not valid CSV near line {reader.line_num}: {exc}")]) from None
    return rows


def _json_rows(name: str, text: str, *, lines: bool) -> list[tuple[int | None, Any]]:
    def load(chunk: str) -> Any:  # exact decimals: a JSON number never passes through float
        return json.loads(chunk, parse_float=Decimal, parse_constant=lambda c: _Malformed(f"{c} is not a number"))

    try:
        if lines:
            return [(n, load(line)) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
        data = load(text)
    except ValueError as exc:
        raise FactFileError(name, [RowError(0, "", f"not valid JSON: {exc}")]) from None
    if isinstance(data, dict) and isinstance(data.get("facts"), list):
        data = data["facts"]
    if not isinstance(data, list):
        raise FactFileError(name, [RowError(0, "", 'give a JSON list of fact objects, or {"facts": [...]}')])
    return [(None, row) for row in data]


def too_many_columns(count: int, what: str, unit: str) -> str:
    """The error of a header or row over :data:`MAX_FACT_COLUMNS` (naming the limit)."""
    return (f"{what} has {count:,} {unit}; a fact has at most {MAX_FACT_COLUMNS} (MAX_FACT_COLUMNS) —"
            f" the fields are {', '.join(FIELDS)}")


def unknown_names(names: Sequence[str], what: str) -> list[tuple[str, str]]:
    """``(field, message)`` of unknown columns or keys: the first :data:`MAX_KEYS_NAMED`, each
    shortened, then one line counting the rest (an error never echoes a hostile row whole)."""
    out = [(_shown(n), f"unknown {what}; the {what}s are {', '.join(FIELDS)}") for n in names[:MAX_KEYS_NAMED]]
    if len(names) > MAX_KEYS_NAMED:
        out.append(("", f"and {len(names) - MAX_KEYS_NAMED:,} more unknown {what}s; the {what}s are {', '.join(FIELDS)}"))
    return out


def _shown(name: str) -> str:
    return name if len(name) <= _MAX_NAME else name[: _MAX_NAME - 1] + "…"


class _Malformed:
    def __init__(self, why: str) -> None:
        self.why = why


def parse_rows(rows: Sequence[tuple[int | None, Any]], glossary: Glossary) -> tuple[list[Fact], list[RowError], dict[FactKey, tuple[int, int | None]]]:
    """The facts of every good row, every error of every bad one, and where each key was read."""
    facts: list[Fact] = []
    errors: list[RowError] = []
    where: dict[FactKey, tuple[int, int | None]] = {}
    for number, (line, row) in enumerate(rows, 1):
        check_deadline("checking the fact rows")
        fact, problems = _parse_row(row, glossary)
        errors.extend(RowError(number, f, m, line) for f, m in problems)
        if fact is None:
            continue
        if fact.key in where:
            first = where[fact.key][0]
            errors.append(RowError(number, "metric/entity/period/channel",
                                   f"the same fact as row {first}; keep one row per metric, entity, period and channel", line))
            continue
        where[fact.key] = (number, line)
        facts.append(fact)
    return facts, errors, where


def _parse_row(row: Any, glossary: Glossary) -> tuple[Fact | None, list[tuple[str, str]]]:
    if isinstance(row, _Malformed):
        return None, [("", row.why)]
    if not isinstance(row, Mapping):
        return None, [("", f"is a {type(row).__name__}; each row is an object of the fields {', '.join(FIELDS)}")]
    if len(row) > MAX_FACT_COLUMNS:
        return None, [("", too_many_columns(len(row), "the row", "keys"))]
    problems: list[tuple[str, str]] = []
    folded: dict[str, Any] = {}
    spelled: dict[str, str] = {}
    for key, value in row.items():
        name = str(key).strip().lower()
        if name in folded:  # "sensitivity" and "Sensitivity": never the last one silently
            problems.append((name, f"is given twice ({spelled[name]!r} and {_shown(str(key))!r}); keep one"))
        folded[name], spelled[name] = value, _shown(str(key))
    row = folded
    problems += unknown_names([n for n in row if n not in FIELDS], "field")
    if "sensitivity" in row and row["sensitivity"] is None:
        problems.append(("sensitivity", "is null; give a label such as INTERNAL or RESTRICTED, or leave the field out"))
    values: dict[str, Any] = {}
    for name in FIELDS:
        raw = row.get(name)
        text = raw.strip() if isinstance(raw, str) else raw
        if text is None or text == "":
            if name in REQUIRED:
                problems.append((name, f"is missing; every row needs {', '.join(REQUIRED)}"))
            continue
        if name == "value":
            values[name], why = _value(text)
        elif not isinstance(text, str):
            why = f"must be text, got {type(raw).__name__} {raw!r}" + ("; quote it" if name == "period" else "")
        elif len(text) > _MAX_TEXT or any(unicodedata.category(ch) == "Cc" for ch in text):
            why = f"must be at most {_MAX_TEXT} printable characters (no control characters)"
        elif _formula(text):
            why = (f"{text[:40]!r} starts with {text[0]!r} like a spreadsheet formula; a fact's text is echoed to"
                   " whoever exports it, so write it without the leading =, +, - or @")
        else:
            values[name], why = _field(name, text, glossary, values)
        if why:
            problems.append((name, why))
    if problems:
        return None, problems
    return Fact(
        metric=values["metric"], entity=values["entity"], period=values["period"], value=values["value"],
        source_doc_id=values["source_doc_id"], source_locator=values["source_locator"], valid_as_of=values["valid_as_of"],
        unit=values.get("unit", ""), channel=values.get("channel", TOTAL_CHANNEL), sensitivity=values.get("sensitivity", "INTERNAL"),
    ), []


def _formula(text: str) -> bool:
    """Whether a text cell would be read as a formula by a spreadsheet (``=HYPERLINK(...)``,
    ``@SUM(...)``, ``+1+1``; full-width ``＝`` too), and is not simply a number (``-3``)."""
    return unicodedata.normalize("NFKC", text[:1]).startswith(_FORMULA) and not _NUMBER.fullmatch(text)


def _field(name: str, text: str, glossary: Glossary, values: Mapping[str, Any]) -> tuple[Any, str | None]:
    if name in _SECTIONS:
        match = glossary.match(_SECTIONS[name], text)
        if match is not None:
            return match.key, None
        return None, (f"{text!r} is not in the glossary's {_SECTIONS[name]}; use one of {', '.join(glossary.keys(_SECTIONS[name]))}"
                      f" (or one of their forms), or add it to the glossary")
    if name == "period":
        reading = read_period(text, glossary.calendar(values.get("entity", "")), aliases=glossary.period_aliases)
        if reading.key is not None:
            return reading.key, None
        if reading.relative:
            return None, f"{text!r} is relative; a stored fact needs an absolute period such as 2024Q3, FY2024, 2024 or 2024-07"
        return None, f"{text!r} is not a period; write e.g. 2024Q3, FY2024, 2024, 2024-07, Q3 2024, 2024年第三季度 or 2024年度"
    if name == "unit":
        match = glossary.unit(text)
        return (match.key if match is not None else text), None
    if name == "valid_as_of":
        try:
            return parse_as_of(text).isoformat(), None
        except ValueError:
            return None, f"{text!r} is not a date; write the ISO date the value is valid as of, e.g. 2024-10-30"
    if name == "sensitivity":
        try:
            return parse_sensitivity(text, "the row"), None
        except IngestError as exc:
            return None, str(exc).removeprefix("the row: ")
    return text, None  # source_doc_id, source_locator


def _value(raw: Any) -> tuple[Decimal | None, str | None]:
    if isinstance(raw, _Malformed):
        return None, f"{raw.why}; write a finite number"
    if isinstance(raw, bool) or not isinstance(raw, (str, int, Decimal)):
        return None, f"must be a number, got {type(raw).__name__} {raw!r}"
    text = unicodedata.normalize("NFKC", str(raw)).strip()
    if re.fullmatch(r"[-+]?[0-9]{1,3}(,[0-9]{3})+(\.[0-9]+)?", text):
        return None, f"{text!r} has thousands separators; write {text.replace(',', '')}"
    if text.endswith("%"):
        return None, f"{text!r} has a percent sign; write {text[:-1].strip()} and set unit to percent"
    if not re.fullmatch(r"[-+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?", text):
        return None, f"{text[:40]!r} is not a number; write digits with an optional sign, decimal point and exponent"
    try:
        value = Decimal(text)
    except (InvalidOperation, ValueError):
        return None, f"{text[:40]!r} is not a number"
    plain = value_text(value) if abs(value.adjusted()) <= 40 else ""
    if not plain or len(plain) > 40:
        return None, f"{text[:40]!r} has more than 40 digits written out; give it in a larger unit"
    return Decimal(plain), None
