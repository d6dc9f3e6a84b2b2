"""``ragspine query`` with query-time reasoning (against a stub OpenAI-compatible server the
test starts), the security gate from RAGSPINE_SECURITY_DENYLIST, and ``ragspine config``'s lines."""

from __future__ import annotations

import json

import pytest

from tests.helpers import needs
from tests.unit.test_cli import run
from tests.unit.test_cli_llm import DOCS

needs("openai")

from ragspine.testing.openai_stub import OpenAIStub  # noqa: E402
from ragspine.testing.reasoning import scripted_answer  # noqa: E402


@pytest.fixture
def db(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("RAGSPINE_EMBEDDING", "deterministic")
    monkeypatch.setenv("RAGSPINE_LLM_MODEL", "stub-model")
    root = tmp_path / "docs"
    root.mkdir()
    for name, text in DOCS.items():
        (root / name).write_text(text, encoding="utf-8")
    path = str(tmp_path / "cli.db")
    code, _, err = run(capsys, "--db", path, "--mode", "economy", "ingest", str(root), "--library", "kestrel")
    assert code == 0, err
    return path


@pytest.fixture
def stub():
    with OpenAIStub(lambda body: scripted_answer(body["messages"][-1]["content"], "zqmarkzq")) as s:
        yield s


@pytest.mark.parametrize("flags", [["--query-transform", "rag_fusion"], ["--query-transform", "hyde"], ["--query-transform", "step_back"],
                                   ["--decompose", "llm"], ["--adaptive", "heuristic"], ["--corrective"]])
def test_each_flag_runs_through_the_configured_model_and_prints_its_trace(capsys, db, stub, flags):
    code, out, err = run(capsys, "--db", db, "--mode", "economy", "query", "gearbox warranty and claims", "--json", "--trace",
                         "--llm", stub.url, *flags)
    assert code == 0, err
    snippets = json.loads(out)
    assert snippets and "zqmarkzq" not in out and all("xylophonequartz" not in p for p in stub.prompts)
    trace = json.loads(err)
    assert trace[0]["step"] in ("search", "transform", "adaptive", "decompose")
    if flags[0] != "--corrective" and flags[0] != "--adaptive":
        assert stub.calls >= 1


def test_the_default_query_prints_what_it_always_did(capsys, db):
    code, plain, err = run(capsys, "--db", db, "--mode", "economy", "query", "gearbox warranty", "--json")
    assert code == 0 and err == ""
    code, none, err = run(capsys, "--db", db, "--mode", "economy", "query", "gearbox warranty", "--json", "--query-transform", "none",
                          "--no-corrective")
    assert code == 0 and none == plain and err == ""


def test_the_gate_refuses_before_any_search_and_says_why(capsys, db, tmp_path, monkeypatch):
    deny = tmp_path / "deny.yaml"
    deny.write_text("entities:\n  ACME:\n    en: [Acme]\n    zh: [艾克米]\n", encoding="utf-8")
    monkeypatch.setenv("RAGSPINE_SECURITY_DENYLIST", str(deny))
    code, out, err = run(capsys, "--db", db, "--mode", "economy", "query", "gearbox warranty at ACME")
    assert code == 0 and out.strip() == "no matching snippets"
    assert "refused question 'gearbox warranty at ACME': it names the deny-listed entity ACME" in err and "nothing was searched" in err
    code, out, err = run(capsys, "--db", db, "--mode", "economy", "config")
    assert "security gate:     1 denied entity from" in out and "RAGSPINE_SECURITY_DENYLIST=" in out


def test_bad_flags_are_one_line_errors(capsys, db):
    code, _, err = run(capsys, "--db", db, "--mode", "economy", "query", "gearbox", "--query-transform", "hyde")
    assert code == 2 and "needs an LLM provider" in err and err.count("\n") == 1
    code, _, err = run(capsys, "--db", db, "--mode", "economy", "query", "gearbox", "--fanout", "9", "--corrective")
    assert code == 2 and "--fanout must be within 1..8" in err
