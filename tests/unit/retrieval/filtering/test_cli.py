"""``ragspine query --filter FIELD OP VALUE``: VALUE keeps its JSON type (text that is not JSON is
the string as typed, broken JSON is refused), and a malformed filter is refused with the
message ``/v1/retrieve`` answers for the same filter."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ragspine import cli
from ragspine.cli.filtering import read_value
from ragspine.errors import FilterError
from tests.helpers import needs

NUMBER = "---\ndoc_id: number\ncode: 10\nlang: en\n---\nGearbox code sheet, numbered.\n"
TEXT = '---\ndoc_id: text\ncode: "10"\nlang: zh\n---\nGearbox code sheet, lettered.\n'


@pytest.fixture
def db(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RAGSPINE_EMBEDDING", "deterministic")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "number.md").write_text(NUMBER, encoding="utf-8")
    (tmp_path / "docs" / "text.md").write_text(TEXT, encoding="utf-8")
    path = str(tmp_path / "filters.db")
    assert cli.main(["--db", path, "--mode", "economy", "ingest", str(tmp_path / "docs"), "--library", "codes"]) == 0
    capsys.readouterr()
    return path


def query(capsys, db: str, *filt: str, strict: bool = True) -> tuple[int, Any, str]:
    argv = ["--db", db, "--mode", "economy", "query", "gearbox code sheet", "--filter", *filt, "--json"]
    code = cli.main(argv + (["--strict-filters"] if strict else []))
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else out), err


@pytest.mark.parametrize(
    "filt,expected",
    [
        (("code", "eq", "10"), {"number"}),
        (("code", "eq", '"10"'), {"text"}),
        (("code", "in", "[10]"), {"number"}),
        (("code", "in", '["10"]'), {"text"}),
        (("code", "nin", '["10"]'), {"number"}),
        (("code", "in", '[10, "10"]'), {"number", "text"}),
        (("lang", "eq", "en"), {"number"}),  # not JSON: the text as typed
        (("lang", "in", '["en", "zh"]'), {"number", "text"}),
        (("lang", "eq", " en"), set()),  # as typed: never trimmed
    ],
)
def test_values_keep_their_json_type(capsys, db, filt, expected):
    code, snippets, err = query(capsys, db, *filt)
    assert code == 0, err
    assert {s["doc_id"] for s in snippets} == expected


@pytest.mark.parametrize(
    "raw,value",
    [("10", 10), ('"10"', "10"), ("true", True), ("null", None), ("[1, \"a\"]", [1, "a"]), ("2.5", 2.5),
     ("en", "en"), (" en ", " en "), ("2024-Q3", "2024-Q3"), ("en,zh", "en,zh"), ("True", "True"), ("", "")],
)
def test_read_value_is_json_else_the_text_as_typed(raw, value):
    assert read_value("f", "eq", raw) == value


@pytest.mark.parametrize("raw", ["[en,zh]", '["en", zh]', '"unterminated', "{lang: en}", " [1,", '"a" "b"'])
def test_broken_json_is_refused_never_read_as_text(capsys, db, raw):
    with pytest.raises(FilterError, match="not valid JSON"):
        read_value("lang", "in", raw)
    code, _, err = query(capsys, db, "lang", "in", raw, strict=False)  # was: no match, filters dropped, exit 0
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, err
    assert lines[0].startswith("ragspine: error: bad filter: --filter lang in") and "not valid JSON" in lines[0]


#: Every malformed filter the command line can spell: (FIELD, OP, VALUE as typed, the JSON value
#: the same filter has over HTTP).
MALFORMED = {
    "in a JSON string": ("code", "in", '"10"', "10"),
    "in a number": ("code", "in", "10", 10),
    "in a boolean": ("code", "in", "true", True),
    "in null": ("code", "in", "null", None),
    "in an object": ("code", "in", '{"v": 10}', {"v": 10}),
    "in a list of lists": ("code", "in", "[[10]]", [[10]]),
    "in text with commas": ("lang", "in", "en,zh", "en,zh"),
    "nin a scalar": ("code", "nin", "true", True),
    "eq a list": ("code", "eq", "[10]", [10]),
    "ne an object": ("code", "ne", '{"v": 10}', {"v": 10}),
    "gt null": ("code", "gt", "null", None),
    "lte a boolean": ("code", "lte", "false", False),
    "between a scalar": ("code", "between", "10", 10),
    "between a JSON string": ("code", "between", '"1,10"', "1,10"),
    "between three ends": ("code", "between", "[1, 2, 3]", [1, 2, 3]),
    "between ends of two types": ("code", "between", '[1, "9"]', [1, "9"]),
    "an unknown operator": ("code", "like", "10", 10),
}


@pytest.fixture(scope="module")
def http(tmp_path_factory):
    needs("fastapi")
    from fastapi.testclient import TestClient

    from ragspine.service.app import create_app
    from tests.unit.service.conftest import make_settings, new_library, new_tenant

    with TestClient(create_app(make_settings(tmp_path_factory.mktemp("service")))) as client:
        headers = new_tenant(client)
        new_library(client, headers, "codes", embedding_model="none")
        yield client, headers


@pytest.mark.parametrize("shape", list(MALFORMED))
def test_a_malformed_filter_is_refused_as_over_http(capsys, db, http, shape):
    field, op, raw, value = MALFORMED[shape]
    client, headers = http
    r = client.post("/v1/retrieve", json={"query": "gearbox", "filters": [{"field": field, "op": op, "value": value}]}, headers=headers)
    assert r.status_code == 400, r.text
    code, out, err = query(capsys, db, field, op, raw, strict=False)
    assert code == 2 and out == "", out
    assert err == f"ragspine: error: {r.json()['detail']}\n"  # one line, the service's message


def test_the_dropped_filters_note_shows_each_value_as_read(capsys, db):
    code, snippets, err = query(capsys, db, "code", "eq", '"11"', strict=False)
    assert code == 0 and snippets and all(s["filters_dropped"] for s in snippets)
    assert 'no snippet matched the filters (code eq "11")' in err


def test_help_states_the_rule(capsys):
    with pytest.raises(SystemExit):
        cli.main(["query", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "VALUE is JSON and keeps its type" in text and "not JSON is the text as typed" in text
