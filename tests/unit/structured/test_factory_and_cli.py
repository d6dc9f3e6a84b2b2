"""``make_fact_store`` (the chunk store's database) and the ``facts`` / ``metric`` commands."""

from __future__ import annotations

import json

import pytest

from ragspine import cli
from ragspine.errors import ConfigError
from ragspine.registries import CHUNK_STORES, FACT_STORES
from ragspine.stores.sqlite import SQLiteDatabase
from ragspine.stores.sqlite.fact_store import SQLiteFactStore
from ragspine.structured import make_fact_store
from ragspine.structured.factory import fact_store_kind
from tests.helpers import needs

HEADER = "metric,entity,period,channel,value,unit,source_doc_id,source_locator,valid_as_of,sensitivity\n"
FACTS = HEADER + (
    "revenue,Kestrel,Q3 2024,,182,EUR_M,kestrel/q3-2024-results,para 2,2024-10-30,PUBLIC\n"
    "revenue,Kestrel,Q3 2024,direct,120,EUR_M,kestrel/q3-2024-results,table 1,2024-10-30,\n"
    "order intake,Kestrel,Q3 2024,,9,EUR_M,kestrel/board-memo-q3,para 1,2024-10-20,RESTRICTED\n"
)


def test_every_chunk_store_has_its_fact_store() -> None:
    assert FACT_STORES.names() == CHUNK_STORES.names()


def test_the_fact_store_lives_in_the_chunk_stores_database(tmp_path) -> None:
    from ragspine.config import load_settings

    settings = load_settings({"RAGSPINE_CHUNK_STORE": str(tmp_path / "kb.db")})
    store = make_fact_store("lib", settings=settings)
    assert isinstance(store, SQLiteFactStore) and store.db.path == str(tmp_path / "kb.db") and store.library_id == "lib"
    store.close()
    assert store.db._closed  # opened by the factory, closed with the store
    db = SQLiteDatabase(tmp_path / "shared.db")
    shared = make_fact_store("lib", database=db)
    shared.close()
    assert shared.db is db and not db._closed
    with pytest.raises(ConfigError, match="the fact stores are sqlite, postgresql"):
        fact_store_kind(object())


def test_a_postgres_chunk_store_gets_the_postgres_fact_store_without_io() -> None:
    needs("sqlalchemy")
    from ragspine.stores.postgres import PostgresDatabase
    from ragspine.stores.postgres.fact_store import PostgresFactStore

    db = PostgresDatabase("postgresql://u:secret@127.0.0.1:1/db")  # nothing listens: no I/O happens
    store = make_fact_store("lib", database=db)
    assert isinstance(store, PostgresFactStore) and "secret" not in repr(store)


def run(capsys, *argv: str) -> tuple[int, str, str]:
    try:
        code = cli.main(list(argv))
    except SystemExit as exc:  # a usage error, from argparse
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def db(tmp_path, capsys) -> str:
    path = str(tmp_path / "kb.db")
    (tmp_path / "facts.csv").write_text(FACTS, encoding="utf-8")
    code, out, err = run(capsys, "--db", path, "facts", "ingest", str(tmp_path / "facts.csv"), "--library", "kb")
    assert code == 0 and "ingested 3 fact(s) (1 RESTRICTED" in out, err
    return path


def test_facts_list_never_shows_restricted_facts(capsys, db) -> None:
    code, out, err = run(capsys, "facts", "list", "--library", "kb", "--db", db)
    assert code == 0 and out.count("\n") == 2 and "order_intake" not in out and "1 RESTRICTED" in err
    code, out, _ = run(capsys, "--db", db, "facts", "list", "--library", "kb", "--json")
    assert [r["channel"] for r in json.loads(out)] == ["total", "direct"]
    code, out, _ = run(capsys, "--db", db, "facts", "list", "--library", "other")
    assert code == 0 and "no facts" in out
    code, out, _ = run(capsys, "--db", db, "libraries")
    assert "kb" in out


def test_metric_found_not_found_and_unrecognized(capsys, db) -> None:
    code, out, _ = run(capsys, "--db", db, "metric", "营收", "--entity", "红隼", "--period", "2024年第三季度", "--library", "kb")
    assert code == 0 and "182" in out and "kestrel/q3-2024-results" in out and "营收" in out
    code, out, _ = run(capsys, "--db", db, "metric", "revenue", "--entity", "Kestrel", "--period", "last quarter", "--as-of",
                       "2024-12-01", "--channel", "direct sales", "--library", "kb", "--json")
    result = json.loads(out)
    assert code == 0 and (result["status"], result["value"], result["source_locator"]) == ("found", "120", "table 1")
    for period in ("2023Q3", "2024Q3"):  # absent, and RESTRICTED: the same refusal
        metric = "revenue" if period == "2023Q3" else "order intake"
        code, out, err = run(capsys, "--db", db, "metric", metric, "--entity", "Kestrel", "--period", period, "--library", "kb")
        assert code == 1 and err == "" and out.startswith("No recorded value") and not any(c.isdigit() for c in out)
    code, out, err = run(capsys, "--db", db, "metric", "revenue", "--entity", "Kestrel", "--period", "last quarter", "--library", "kb")
    assert code == 2 and out == "" and err.startswith("ragspine: error: Not recognized: the period") and len(err.splitlines()) == 1
    code, out, err = run(capsys, "--db", db, "metric", "revenu", "--entity", "Kestrel", "--period", "２０２４年第５四半期", "--json")
    assert code == 2 and json.loads(out)["params"] == ["metric", "period"] and not any(c.isdigit() for c in out + err)


@pytest.mark.parametrize(("argv", "words"), [
    (["metric", "revenue", "--period", "2024Q3"], "--entity"),
    (["metric", "revenue", "--entity", "Kestrel", "--period", "Q3", "--as-of", "tomorrow"], "as-of date"),
    (["metric", "revenue", "--entity", "Kestrel", "--period", "2024Q3", "--glossary", "/nope.yaml"], "cannot read the glossary"),
    (["metric", "revenue", "--entity", "Kestrel", "--period", "2024Q3", "--language", "fr"], "invalid choice"),
    (["facts", "ingest", "/nope.csv"], "cannot read"),
    (["facts", "frobnicate"], "invalid choice"),
    (["facts"], "required"),
])
def test_bad_input_exits_2_with_one_line(capsys, db, argv, words) -> None:
    code, out, err = run(capsys, "--db", db, *argv)
    assert code == 2 and len(err.strip().splitlines()) == 1 and words in err, err


def test_a_bad_fact_file_writes_nothing(capsys, db, tmp_path) -> None:
    (tmp_path / "bad.csv").write_text(HEADER + "revenue,Kestrel,Q3 2024,,183,EUR_M,kestrel/q3-2024-results,p,2024-10-31,\n"
                                      "revenue,Kestrel,Q4 2024,,,EUR_M,kestrel/q3-2024-results,p,2024-10-31,\n", encoding="utf-8")
    code, _, err = run(capsys, "--db", db, "facts", "ingest", str(tmp_path / "bad.csv"), "--library", "kb")
    assert code == 2 and "row 2 (line 3), field value: is missing" in err and len(err.strip().splitlines()) == 1
    code, out, _ = run(capsys, "--db", db, "metric", "revenue", "--entity", "Kestrel", "--period", "2024Q3", "--library", "kb", "--json")
    assert json.loads(out)["value"] == "182"
