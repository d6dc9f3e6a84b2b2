"""``ragspine query --llm`` and ``ragspine config``'s llm line, against a stub OpenAI-compatible
server the test starts."""

from __future__ import annotations

import pytest

from tests.helpers import needs
from tests.unit.test_cli import SECRET, run

needs("openai")

from ragspine.testing.openai_stub import OpenAIStub  # noqa: E402

DOCS = {
    "a.md": "---\ntitle: A\n---\nGearbox warranty claims rose.\n",
    "b.md": "---\ntitle: B\n---\nGearbox warranty is 36 months.\n",
    "board.md": SECRET,
}


@pytest.fixture
def db(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("RAGSPINE_EMBEDDING", "deterministic")
    root = tmp_path / "docs"
    root.mkdir()
    for name, text in DOCS.items():
        (root / name).write_text(text, encoding="utf-8")
    path = str(tmp_path / "cli.db")
    code, _, err = run(capsys, "--db", path, "--mode", "economy", "ingest", str(root), "--library", "kestrel")
    assert code == 0, err
    return path


def titles(out: str) -> list[str]:
    return [line.split("] ", 1)[1].split("  (")[0] for line in out.splitlines() if line[:1].isdigit()]


def test_query_llm_reaches_the_listwise_judge(capsys, db, monkeypatch):
    monkeypatch.setenv("RAGSPINE_LLM_MODEL", "stub-model")
    code, out, err = run(capsys, "--db", db, "--mode", "economy", "query", "gearbox warranty")
    assert code == 0, err
    fused = titles(out)
    assert len(fused) == 2
    with OpenAIStub("1, 0") as stub:
        code, out, err = run(capsys, "--db", db, "--mode", "economy", "query", "gearbox warranty", "--reranker", "listwise",
                             "--llm", stub.url)
    assert code == 0, err
    assert titles(out) == fused[::-1]
    assert stub.calls == 1 and stub.requests[0]["model"] == "stub-model"
    assert "xylophonequartz" not in stub.prompts[0]


def test_query_llm_that_fails_degrades_to_the_fused_order(capsys, db, monkeypatch):
    monkeypatch.setenv("RAGSPINE_LLM_MODEL", "stub-model")
    monkeypatch.setenv("RAGSPINE_LLM_RETRIES", "0")
    fused = titles(run(capsys, "--db", db, "--mode", "economy", "query", "gearbox warranty")[1])
    with OpenAIStub("I will not rank") as stub:
        code, out, err = run(capsys, "--db", db, "--mode", "economy", "query", "gearbox warranty", "--reranker", "listwise",
                             "--llm", stub.url)
    assert code == 0 and titles(out) == fused and stub.calls == 1


def test_a_bad_llm_value_is_one_line_naming_the_choices(capsys, db):
    code, _, err = run(capsys, "--db", db, "query", "gearbox", "--llm", "gpt-4o")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "RAGSPINE_LLM" in err and "local" in err and "base URL" in err


def test_an_openai_llm_without_a_model_names_the_setting(capsys, db):
    code, _, err = run(capsys, "--db", db, "query", "gearbox", "--reranker", "listwise", "--llm", "http://127.0.0.1:9/v1")
    assert code == 2 and "RAGSPINE_LLM_MODEL" in err


def test_config_shows_the_llm_line_with_its_model(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("RAGSPINE_LLM", "http://127.0.0.1:11434/v1")
    monkeypatch.setenv("RAGSPINE_LLM_MODEL", "llama3.2")
    monkeypatch.setenv("RAGSPINE_LLM_API_KEY", "sk-secret")
    code, out, _ = run(capsys, "--db", str(tmp_path / "c.db"), "config")
    assert code == 0
    (line,) = [x for x in out.splitlines() if x.startswith("llm:")]
    assert "llama3.2" in line and "127.0.0.1:11434/v1" in line
    assert "sk-secret" not in out and "RAGSPINE_LLM_API_KEY=***" in out
