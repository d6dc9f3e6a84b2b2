"""Facts from CSV, JSON and JSON Lines: canonical keys, exact values, and all or nothing."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from ragspine.errors import IngestError
from ragspine.stores.sqlite.fact_store import SQLiteFactStore
from ragspine.structured import FactFileError, ingest_facts

HEADER = "metric,entity,period,channel,value,unit,source_doc_id,source_locator,valid_as_of,sensitivity\n"
GOOD = HEADER + (
    "revenue,Kestrel,Q3 2024,,182,million euros,q3,para 2,2024-10-30,PUBLIC\n"
    "营收,红隼机器人中国区,2024年第三季度,直销,3.10,亿元,cn,第一段,２０２４-１０-１５,\n"
    "売上高,ケストレル・ジャパン,2024年度,,45.25,EUR_M,jp,p. 3,2025-05-12,restricted\n"
)


@pytest.fixture
def store(tmp_path):
    s = SQLiteFactStore(tmp_path / "facts.db", library_id="lib")
    yield s
    s.close()


def facts(store) -> list[tuple[str, ...]]:
    return [(f.metric, f.entity, f.period, f.channel, format(f.value, "f"), f.unit, f.source_doc_id, f.valid_as_of, f.sensitivity,
             str(f.version)) for f in store.iter_facts(include_restricted=True)]


def test_a_csv_file_is_normalized_through_the_glossary(store, tmp_path) -> None:
    path = tmp_path / "facts.csv"
    path.write_text(GOOD, encoding="utf-8")
    report = ingest_facts(store, path)
    assert (report.facts, report.sources, report.restricted) == (3, ("q3", "cn", "jp"), 1)
    assert facts(store) == [
        ("revenue", "KESTREL_CN", "2024Q3", "direct", "3.10", "CNY_100M", "cn", "2024-10-15", "INTERNAL", "1"),
        ("revenue", "KESTREL_JP", "FY2024", "total", "45.25", "EUR_M", "jp", "2025-05-12", "RESTRICTED", "1"),
        ("revenue", "KESTREL", "2024Q3", "total", "182", "EUR_M", "q3", "2024-10-30", "PUBLIC", "1"),
    ]


def test_json_and_jsonl_keep_exact_decimals(store, tmp_path) -> None:
    rows = [{"metric": "gross margin", "entity": "KSTR", "period": "2024Q3", "value": 41.10, "unit": "%", "source_doc_id": "q3",
             "source_locator": "para 6", "valid_as_of": "2024-10-30"}]
    (tmp_path / "f.json").write_text(json.dumps({"facts": rows}).replace("41.1", "41.10"), encoding="utf-8")
    ingest_facts(store, tmp_path / "f.json")
    assert [format(f.value, "f") for f in store.iter_facts()] == ["41.10"]
    rows[0]["value"] = 0.1 + 0.2  # a float written by json: its digits as written, never re-rounded
    (tmp_path / "f.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n\n", encoding="utf-8")
    ingest_facts(store, tmp_path / "f.jsonl")
    assert [(format(f.value, "f"), f.version) for f in store.iter_facts()] == [("0.30000000000000004", 2)]
    assert ingest_facts(store, [{**rows[0], "value": Decimal("7")}]).facts == 1


def test_reingesting_a_source_replaces_it_and_leaves_the_others(store) -> None:
    base = {"entity": "Kestrel", "unit": "EUR_M", "source_locator": "p", "valid_as_of": "2024-10-30"}
    ingest_facts(store, [{**base, "metric": "revenue", "period": "2024Q3", "value": "182", "source_doc_id": "a"},
                         {**base, "metric": "revenue", "period": "2024Q2", "value": "190", "source_doc_id": "b"}])
    ingest_facts(store, [{**base, "metric": "gross margin", "period": "2024Q3", "value": "41", "source_doc_id": "a"}])
    assert [(f.source_doc_id, f.metric, f.version) for f in store.iter_facts()] == [("a", "gross_margin", 2), ("b", "revenue", 1)]


BAD_ROWS = [  # (row, field, words)
    ({"metric": "revenu"}, "metric", ["'revenu' is not in the glossary's metrics", "revenue", "add it to the glossary"]),
    ({"entity": "Kestrl"}, "entity", ["not in the glossary's entities", "KESTREL"]),
    ({"channel": "shop"}, "channel", ["not in the glossary's channels"]),
    ({"period": "last quarter"}, "period", ["is relative", "absolute period such as 2024Q3"]),
    ({"period": "2024Q5"}, "period", ["not a period", "2024年第三季度"]),
    ({"period": 2024}, "period", ["must be text", "quote it"]),
    ({"value": "1,234"}, "value", ["thousands separators", "write 1234"]),
    ({"value": "41%"}, "value", ["percent sign", "set unit to percent"]),
    ({"value": "NaN"}, "value", ["not a number"]),
    ({"value": "1e99"}, "value", ["more than 40 digits"]),
    ({"value": True}, "value", ["must be a number"]),
    ({"value": ""}, "value", ["is missing", "every row needs"]),
    ({"valid_as_of": "30/10/2024"}, "valid_as_of", ["not a date", "2024-10-30"]),
    ({"sensitivity": ["RESTRICTED"]}, "sensitivity", ["must be text"]),
    ({"source_locator": "p\x00"}, "source_locator", ["no control characters"]),
    ({"colour": "red"}, "colour", ["unknown field", "source_locator"]),
]


@pytest.mark.parametrize(("change", "field", "words"), BAD_ROWS)
def test_a_bad_row_names_its_row_field_and_fix_and_nothing_is_written(store, change, field, words) -> None:
    good = {"metric": "revenue", "entity": "Kestrel", "period": "2024Q3", "value": "182", "source_doc_id": "a",
            "source_locator": "p", "valid_as_of": "2024-10-30"}
    ingest_facts(store, [good])
    before = facts(store)
    rows = [{**good, "period": "2024Q2"}, {**good, "period": "2024Q4", **change}]
    with pytest.raises(FactFileError) as info:
        ingest_facts(store, rows)
    message = str(info.value)
    assert f"row 2, field {field}:" in message and "nothing was written" in message and "\n" not in message
    for word in words:
        assert word in message, (word, message)
    assert [(e.row, e.field) for e in info.value.errors] == [(2, field)]
    assert facts(store) == before


def test_every_problem_of_a_csv_is_reported_with_its_line(store, tmp_path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(HEADER + "revenu,Kestrel,Q3 2024,,182,,s,p,2024-10-30,\n\n"
                    "revenue,Kestrel,\"Q3\n2024\",,1%,,s,p,2024-10-30,\nrevenue,Kestrel\n", encoding="utf-8")
    with pytest.raises(FactFileError) as info:
        ingest_facts(store, path)
    assert [str(e).split(":")[0] for e in info.value.errors] == [
        "row 1 (line 2), field metric", "row 2 (line 5), field period", "row 2 (line 5), field value", "row 3 (line 6)"]
    assert store.count(include_inactive=True) == 0


def test_duplicates_and_clashes_name_their_rows(store) -> None:
    row = {"metric": "revenue", "entity": "Kestrel", "period": "2024Q3", "value": "182", "source_doc_id": "a",
           "source_locator": "p", "valid_as_of": "2024-10-30"}
    with pytest.raises(FactFileError, match="row 2, field metric/entity/period/channel: the same fact as row 1"):
        ingest_facts(store, [row, {**row, "metric": "REV", "value": "183"}])
    ingest_facts(store, [row])
    with pytest.raises(FactFileError, match="row 2, field metric/entity/period/channel: another source document already holds") as info:
        ingest_facts(store, [{**row, "period": "2024Q2", "source_doc_id": "b"}, {**row, "source_doc_id": "b"}])
    assert "'a'" not in str(info.value)  # the holder is never named (issue 25: it may be RESTRICTED)
    assert store.source_ids() == ["a"]


@pytest.mark.parametrize(("name", "content", "words"), [
    ("f.csv", "metric,entity,colour\n", ["field colour: unknown column", "field period: missing column"]),
    ("f.csv", HEADER.replace("unit", "value"), ["appears twice"]),
    ("f.csv", HEADER, ["no fact rows"]),
    ("f.json", "{not json", ["not valid JSON"]),
    ("f.json", '{"rows": []}', ['{"facts": [...]}']),
    ("f.json", "[1, null]", ["row 1: is a int", "row 2: is a NoneType"]),
    ("f.csv", b"\xff\xfe", ["not UTF-8"]),
])
def test_file_level_problems(store, tmp_path, name, content, words) -> None:
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    with pytest.raises(FactFileError) as info:
        ingest_facts(store, path)
    for word in words:
        assert word in str(info.value), (word, str(info.value))


def test_unsupported_or_missing_files(store, tmp_path) -> None:
    (tmp_path / "f.xlsx").write_text("x", encoding="utf-8")
    with pytest.raises(IngestError, match=".csv, .json or .jsonl"):
        ingest_facts(store, tmp_path / "f.xlsx")
    with pytest.raises(IngestError, match="cannot read"):
        ingest_facts(store, tmp_path / "missing.csv")
