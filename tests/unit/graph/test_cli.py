"""``ragspine graph edges|rollup|peers|trace`` over a library's facts and chunks."""

from __future__ import annotations

import json

import pytest

from tests.helpers import needs
from tests.helpers import run_cli as run

HEADER = "metric,entity,period,channel,value,unit,source_doc_id,source_locator,valid_as_of,sensitivity\n"
FACTS = HEADER + (
    "revenue,Kestrel China,2024Q3,,60,EUR_M,kestrel/china-q3-2024,table 1,2024-10-30,\n"
    "revenue,Kestrel Japan,2024Q3,,40.25,EUR_M,kestrel/japan-q3-2024,p. 2,2024-10-30,\n"
    "operating profit,Kestrel China,2024Q3,,6.5,EUR_M,kestrel/china-q3-2024,table 2,2024-10-30,\n"
    "operating profit,Kestrel Japan,2024Q3,,-2,EUR_M,kestrel/board-memo-q3,item 4,2024-10-20,RESTRICTED\n"
)


@pytest.fixture
def db(tmp_path, capsys, monkeypatch) -> str:
    monkeypatch.setenv("RAGSPINE_EMBEDDING", "none")
    monkeypatch.setenv("RAGSPINE_CACHE_DIR", str(tmp_path / "cache"))
    path = str(tmp_path / "kb.db")
    (tmp_path / "facts.csv").write_text(FACTS, encoding="utf-8")
    code, out, err = run(capsys, "--db", path, "facts", "ingest", str(tmp_path / "facts.csv"), "--library", "kb")
    assert code == 0, err
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "supply.md").write_text("# Supply\n\nKestrel China ships gearboxes to Kestrel Japan every month.\n", encoding="utf-8")
    (docs / "memo.md").write_text("---\nsensitivity: RESTRICTED\n---\n# Memo\n\nKestrel Japan may merge with Kestrel Robotics.\n",
                                  encoding="utf-8")
    code, out, err = run(capsys, "--db", path, "ingest", str(docs), "--library", "kb")
    assert code == 0, err
    return path


def test_rollup_prints_the_cited_total_and_exits_zero(capsys, db) -> None:
    code, out, err = run(capsys, "graph", "rollup", "revenue", "--entity", "Kestrel", "--period", "Q3 2024", "--library", "kb", "--db", db)
    assert code == 0 and out.startswith("Kestrel Robotics revenue for Q3 2024: 100.25 million euros") and "(kestrel/japan-q3-2024, p. 2)" in out
    code, out, _ = run(capsys, "graph", "rollup", "operating profit", "--entity", "Kestrel", "--period", "2024Q3", "--library", "kb",
                       "--db", db, "--json")
    data = json.loads(out)
    assert code == 1 and (data["status"], data["total"], data["missing"]) == ("incomplete", "", ["KESTREL_JP"]) and "board-memo" not in out


def test_an_unrecognized_input_is_one_line_on_stderr_and_exit_two(capsys, db) -> None:
    code, out, err = run(capsys, "graph", "rollup", "revenu", "--entity", "Kestrel", "--period", "2024Q3", "--library", "kb", "--db", db)
    assert code == 2 and out == "" and err.startswith("ragspine: error: Not recognized: the metric") and err.count("\n") == 1


def test_peers_and_trace(capsys, db) -> None:
    code, out, _ = run(capsys, "graph", "peers", "revenue", "--entity", "Kestrel China", "--period", "2024Q3", "--library", "kb", "--db", db)
    assert code == 0 and "comparable" in out
    code, out, _ = run(capsys, "graph", "trace", "operating margin", "--entity", "Kestrel China", "--period", "2024Q3",
                       "--library", "kb", "--db", db)
    assert code == 0 and "derived from operating profit and revenue" in out and "revenue: 60 million euros" in out
    code, out, _ = run(capsys, "graph", "trace", "operating margin", "--db", db)
    assert code == 0 and out.startswith("operating margin is derived from")


def test_edges_lists_cited_edges_and_the_extractor_adds_cooccurrence_from_open_chunks(capsys, db) -> None:
    code, out, _ = run(capsys, "graph", "edges", "--library", "kb", "--db", db, "--json")
    plain = json.loads(out)
    assert code == 0 and {e["relation"] for e in plain["edges"]} == {"subsidiary_of", "derived_from", "reports"}
    assert all(e["citable"] for e in plain["edges"]) and "board-memo" not in out
    code, out, err = run(capsys, "graph", "edges", "--library", "kb", "--db", db, "--extractor", "cooccurrence")
    assert code == 0 and "entity:KESTREL_CN -co_occurs_with-> entity:KESTREL_JP\tsupply" in out
    assert "memo" not in out  # the RESTRICTED chunk names two entities too, and adds nothing
    code, out, err = run(capsys, "graph", "edges", "--library", "kb", "--db", db, "--extractor", "llm")
    assert code == 2 and "needs an LLM provider" in err


def test_edges_with_the_llm_extractor_go_through_the_model_and_the_gate(capsys, db, tmp_path, monkeypatch) -> None:
    """End to end: RAGSPINE_LLM (an OpenAI-compatible stub), the deny list as the endpoint gate,
    no RESTRICTED text in any request, the model's edges stamped and never cited."""
    needs("openai")
    from ragspine.testing.openai_stub import OpenAIStub

    answer = json.dumps([{"source": "KESTREL_CN", "relation": "supplies", "target": "KESTREL_JP"}])
    with OpenAIStub(answer) as stub:
        monkeypatch.setenv("RAGSPINE_LLM", stub.url)
        monkeypatch.setenv("RAGSPINE_LLM_MODEL", "stub")
        code, out, err = run(capsys, "graph", "edges", "--library", "kb", "--db", db, "--extractor", "llm", "--json")
        sent = json.dumps(stub.requests, ensure_ascii=False)
    assert code == 0, err
    (edge,) = [e for e in json.loads(out)["edges"] if e["derivation"] == "model"]
    assert (edge["relation"], edge["verified"], edge["citable"], edge["source_doc_id"]) == ("supplies", False, False, "supply.md")
    assert "merge with Kestrel Robotics" not in sent and "ships gearboxes" in sent  # the RESTRICTED memo never sent
    deny = tmp_path / "deny.yaml"
    deny.write_text("entities:\n  KESTREL_JP: {en: [Kestrel Japan]}\n", encoding="utf-8")
    monkeypatch.setenv("RAGSPINE_SECURITY_DENYLIST", str(deny))
    with OpenAIStub(answer) as stub:
        monkeypatch.setenv("RAGSPINE_LLM", stub.url)
        code, out, err = run(capsys, "graph", "edges", "--library", "kb", "--db", db, "--extractor", "llm")
    assert code == 0 and "supplies" not in out and "refused_by_gate 1" in err


def test_rollup_peers_and_trace_answer_in_the_inputs_language_unless_told(capsys, db) -> None:
    lib = ["--library", "kb", "--db", db]
    code, out, _ = run(capsys, "graph", "rollup", "营收", "--entity", "红隼", "--period", "2024年第三季度", *lib)
    assert code == 0 and out.startswith("红隼机器人2024年第三季度的营收为100.25百万欧元，即其2家子公司已存储数值之和：")
    assert "红隼机器人中国区60百万欧元（kestrel/china-q3-2024，table 1）" in out and not any(w in out for w in ("revenue", "the sum"))
    code, out, _ = run(capsys, "graph", "rollup", "売上高", "--entity", "ケストレル", "--period", "2024年第3四半期", *lib)
    assert code == 0 and out.startswith("ケストレル・ロボティクスの2024年第3四半期の売上高は100.25百万ユーロで")
    code, out, _ = run(capsys, "graph", "rollup", "营收", "--entity", "红隼", "--period", "2024年第三季度", "--language", "en", *lib)
    assert code == 0 and out.startswith("Kestrel Robotics revenue for Q3 2024: 100.25 million euros")  # --language still wins
    code, out, _ = run(capsys, "graph", "rollup", "revenue", "--entity", "Kestrel", "--period", "2024Q3", "--language", "zh", *lib)
    assert code == 0 and out.startswith("红隼机器人2024年第三季度的营收为")
    code, out, _ = run(capsys, "graph", "rollup", "营业利润", "--entity", "红隼", "--period", "2024年第三季度", *lib)
    assert code == 1 and out.startswith("未汇总：红隼日本没有已记录的营业利润。")
    code, out, _ = run(capsys, "graph", "peers", "营收", "--entity", "红隼中国", "--period", "2024年第三季度", *lib)
    assert code == 0 and out.startswith("红隼机器人各子公司的营收：") and out.rstrip().endswith("——可比（同一单位、同一段时间）。")
    code, out, _ = run(capsys, "graph", "trace", "営業利益率", "--entity", "ケストレル中国", "--period", "2024年第3四半期", *lib)
    assert code == 0 and out.startswith("営業利益率は営業利益と売上高から導出されます") and "売上高：60百万ユーロ（kestrel/china-q3-2024、table 1）。" in out
    code, out, err = run(capsys, "graph", "rollup", "营收额", "--entity", "红隼", "--period", "2024年第三季度", *lib)
    assert code == 2 and err.startswith("ragspine: error: ") and "Not recognized" not in err  # the refusal in Chinese too
