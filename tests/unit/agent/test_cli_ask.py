"""``ragspine ask``: the answer, its sources and route; --json; --library; --as-of; the gate's
exit status; bad input is one line on stderr with status 2."""

from __future__ import annotations

import json

from tests.helpers import run_cli as run

FACTS = (
    "metric,entity,period,value,unit,source_doc_id,source_locator,valid_as_of\n"
    "revenue,Kestrel,Q3 2024,182,EUR_M,kestrel/q3-2024-results,paragraph 1,2024-10-30\n"
)
RESULTS = "---\ndoc_id: kestrel/q3-2024-results\ntitle: Q3 results\n---\nRevenue fell because K2 shipments slipped by six weeks.\n"


def seeded(tmp_path, capsys) -> str:
    db = str(tmp_path / "kb.db")
    (tmp_path / "facts.csv").write_text(FACTS, encoding="utf-8")
    (tmp_path / "results.md").write_text(RESULTS, encoding="utf-8")
    assert run(capsys, "--db", db, "--mode", "economy", "ingest", str(tmp_path / "results.md"), "--library", "kb")[0] == 0
    assert run(capsys, "--db", db, "facts", "ingest", str(tmp_path / "facts.csv"), "--library", "kb")[0] == 0
    return db


def test_ask_prints_the_answer_its_sources_and_route(tmp_path, capsys) -> None:
    db = seeded(tmp_path, capsys)
    code, out, err = run(capsys, "--db", db, "--mode", "economy", "ask", "Why did Kestrel's Q3 revenue fall, and by how much?",
                         "--as-of", "2024-11-15")
    assert code == 0, err
    assert out.startswith("Kestrel Robotics revenue for Q3 2024: 182 million euros (source: kestrel/q3-2024-results")
    assert "[S1] Revenue fell because K2 shipments slipped by six weeks." in out
    assert "  fact  kestrel/q3-2024-results, paragraph 1 (library kb;" in out and "  [S1] Q3 results (library kb): " in out
    assert out.rstrip().endswith("route: composite (asks why/how and how much)")


def test_ask_json_and_library(tmp_path, capsys) -> None:
    db = seeded(tmp_path, capsys)
    code, out, _ = run(capsys, "--db", db, "--mode", "economy", "ask", "What was Kestrel's revenue in Q3 2023?", "--library", "kb", "--json")
    answer = json.loads(out)
    assert code == 0 and answer["route"] == "structured" and answer["structured"]["status"] == "not_found" and answer["sources"] == []
    code, _, err = run(capsys, "--db", db, "ask", "revenue", "--library", "nope")
    assert code == 2 and err.startswith("ragspine: error: unknown library 'nope'") and len(err.splitlines()) == 1


def test_ask_bad_input_and_the_gate(tmp_path, capsys, monkeypatch) -> None:
    db = seeded(tmp_path, capsys)
    for argv in (["ask", "   "], ["ask", "x", "--as-of", "2024-99-01"], ["ask", "x", "--top-k", "0"]):
        code, _, err = run(capsys, "--db", db, *argv)
        assert code == 2 and err.startswith("ragspine: error: ") and len(err.splitlines()) == 1, argv
    deny = tmp_path / "deny.yaml"
    deny.write_text("entities:\n  ACME:\n    en: [Acme]\n", encoding="utf-8")
    monkeypatch.setenv("RAGSPINE_SECURITY_DENYLIST", str(deny))
    code, out, _ = run(capsys, "--db", db, "--mode", "economy", "ask", "What was Acme's revenue in Q3 2024?")
    assert code == 1 and out.startswith("Refused: the question names an entity") and "route: refused" in out


def test_a_how_many_question_naming_no_glossary_metric_gets_the_passages(tmp_path, capsys) -> None:
    """README walk: `ragspine ask "how many vacation days"` answered "Not recognized: the metric, entity,
    period…" with no snippet while `ragspine query` found the sentence."""
    db = seeded(tmp_path, capsys)
    (tmp_path / "handbook.txt").write_text("Employees get 25 vacation days a year.\n", encoding="utf-8")
    assert run(capsys, "--db", db, "--mode", "economy", "ingest", str(tmp_path / "handbook.txt"), "--library", "kb")[0] == 0
    code, out, err = run(capsys, "--db", db, "--mode", "economy", "ask", "how many vacation days", "--library", "kb", "--json")
    answer = json.loads(out)
    assert code == 0, err
    assert answer["route"] == "narrative" and answer["structured"] is None
    assert answer["text"].startswith("No recorded fact matches this question") and "Not recognized" not in answer["text"]
    assert "Employees get 25 vacation days a year." in answer["text"]
    assert [s["kind"] for s in answer["sources"]][:1] == ["chunk"]
