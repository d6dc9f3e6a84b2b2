"""Every fact command reads one glossary: ``--glossary FILE``, else ``RAGSPINE_FACT_GLOSSARY``,
else the shipped demo glossary — ``facts ingest``, ``metric``, ``graph`` and ``ask`` alike."""

from __future__ import annotations

import json

import pytest

from tests.helpers import run_cli as run

GLOSSARY = """version: 1
metrics:
  widgets_shipped:
    en: [widgets shipped, widget shipments]
entities:
  ACME:
    en: [Acme Tools, Acme]
  ACME_EU:
    en: [Acme Europe]
    parent: ACME
  ACME_US:
    en: [Acme US]
    parent: ACME
units:
  widgets:
    en: [widgets]
"""
FACTS = (
    "metric,entity,period,value,unit,source_doc_id,source_locator,valid_as_of\n"
    "widgets shipped,Acme Europe,2024Q3,500,widgets,acme/q3-report,table 4,2024-10-30\n"
)
QUESTION = "How many widgets shipped did Acme Europe have in Q3 2024?"


@pytest.fixture
def files(tmp_path, monkeypatch) -> dict[str, str]:
    monkeypatch.setenv("RAGSPINE_EMBEDDING", "none")
    (tmp_path / "acme.yaml").write_text(GLOSSARY, encoding="utf-8")
    (tmp_path / "facts.csv").write_text(FACTS, encoding="utf-8")
    return {"db": str(tmp_path / "kb.db"), "glossary": str(tmp_path / "acme.yaml"), "facts": str(tmp_path / "facts.csv")}


def commands(files: dict[str, str]) -> list[list[str]]:
    """Every fact command, each needing the Acme glossary to succeed (in this order: the
    ingest first)."""
    lib = ["--library", "kb", "--db", files["db"]]
    return [
        ["facts", "ingest", files["facts"], *lib],
        ["metric", "widgets shipped", "--entity", "Acme Europe", "--period", "2024Q3", "--json", *lib],
        ["graph", "trace", "widgets shipped", *lib],
        ["graph", "peers", "widgets shipped", "--entity", "Acme Europe", "--period", "2024Q3", *lib],
        ["graph", "edges", "--json", *lib],
        ["ask", QUESTION, "--json", "--mode", "economy", *lib],
    ]


def check(code: int, out: str, err: str, argv: list[str]) -> None:
    assert code == 0, (argv, err)
    if argv[0] == "metric":
        assert json.loads(out)["value"] == "500"
    elif argv[:2] == ["graph", "peers"]:
        assert "Acme Europe: 500 widgets (acme/q3-report, table 4)" in out
    elif argv[:2] == ["graph", "edges"]:
        assert "entity:ACME_EU" in {e["source"] for e in json.loads(out)["edges"]}
    elif argv[0] == "ask":
        answer = json.loads(out)
        assert (answer["route"], answer["structured"]["status"], answer["structured"]["value"]) == ("structured", "found", "500")


def test_every_fact_command_reads_ragspine_fact_glossary(capsys, files, monkeypatch) -> None:
    monkeypatch.setenv("RAGSPINE_FACT_GLOSSARY", files["glossary"])
    for argv in commands(files):
        check(*run(capsys, *argv), argv)


def test_the_glossary_flag_wins_over_the_setting_on_every_fact_command(capsys, files, monkeypatch) -> None:
    monkeypatch.setenv("RAGSPINE_FACT_GLOSSARY", files["glossary"] + ".missing")
    for argv in commands(files):
        check(*run(capsys, *argv, "--glossary", files["glossary"]), argv)
    code, _, err = run(capsys, "metric", "widgets shipped", "--entity", "Acme Europe", "--period", "2024Q3", "--db", files["db"])
    assert code == 2 and "cannot read the glossary" in err and ".missing" in err  # the setting, when no flag is given


def test_without_either_the_shipped_glossary_is_read(capsys, files) -> None:
    code, _, err = run(capsys, "facts", "ingest", files["facts"], "--db", files["db"])
    assert code == 2 and "widgets shipped" in err
    code, out, _ = run(capsys, "metric", "revenue", "--entity", "Kestrel", "--period", "2024Q3", "--db", files["db"])
    assert code == 1 and out.startswith("No recorded value")
