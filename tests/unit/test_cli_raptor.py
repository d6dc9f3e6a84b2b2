"""``ragspine raptor build|status|show`` and ``ragspine query --raptor`` (the deterministic
embedding; the LLM summarizer through a stub OpenAI-compatible server the test starts)."""

from __future__ import annotations

import json

import pytest

from tests.helpers import needs
from tests.unit.test_cli import run

SECRET = "xylophonequartz"
DOCS = {
    "g1.md": "Gearbox supply delays slowed the northern plant. Gearbox castings were late.\n",
    "g2.md": "Gearbox supply delays hit the south plant too. Castings for gearbox lines arrived late.\n",
    "g3.md": "The gearbox supplier missed castings deadlines and supply delays grew.\n",
    "w1.md": "Warranty claims rose in 2023. Warranty service handled claims within five days.\n",
    "w2.md": "Warranty claims on motors rose; the warranty service team grew.\n",
    "memo.md": f"---\nsensitivity: RESTRICTED\n---\nBoard memo on gearbox supply delays {SECRET}.\n",
}


@pytest.fixture
def db(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("RAGSPINE_EMBEDDING", "deterministic")
    monkeypatch.setenv("RAGSPINE_RAPTOR_THRESHOLD", "0.3")
    root = tmp_path / "docs"
    root.mkdir()
    for name, text in DOCS.items():
        (root / name).write_text(text, encoding="utf-8")
    path = str(tmp_path / "cli.db")
    code, _, err = run(capsys, "--db", path, "ingest", str(root), "--library", "plant")
    assert code == 0, err
    return path


def test_build_status_show_and_query(db, capsys) -> None:
    code, out, err = run(capsys, "--db", db, "query", "gearbox castings", "--raptor")
    assert code == 2 and "no RAPTOR tree" in err and "ragspine raptor build --library plant" in err and len(err.strip().splitlines()) == 1
    code, out, err = run(capsys, "--db", db, "raptor", "build")
    assert code == 0 and out.startswith("plant: ") and "over 5 chunk(s)" in out, err
    code, out, _ = run(capsys, "--db", db, "raptor", "build", "--library", "plant")
    assert code == 0 and "current" in out
    code, out, _ = run(capsys, "--db", db, "raptor", "status")
    assert code == 0 and out.strip().endswith("; current")
    code, out, _ = run(capsys, "--db", db, "raptor", "show", "--library", "plant", "--json")
    nodes = json.loads(out)
    assert nodes and all(n["is_synthesis"] and n["leaves"] for n in nodes) and SECRET not in out
    code, plain, _ = run(capsys, "--db", db, "query", "gearbox castings", "--json", "--top-k", "5")
    code, with_raptor, err = run(capsys, "--db", db, "query", "gearbox castings", "--json", "--top-k", "5", "--raptor")
    assert code == 0, err
    snippets = json.loads(with_raptor)
    assert snippets and SECRET not in with_raptor and {s["doc_id"] for s in snippets} == {s["doc_id"] for s in json.loads(plain)}
    assert not any(s["text"] == n["text"] for s in snippets for n in nodes), "a synthesis text came back as a snippet"
    run(capsys, "--db", db, "ingest", str(db).replace("cli.db", "docs"), "--library", "plant", "--force")
    code, out, _ = run(capsys, "--db", db, "raptor", "status", "--library", "plant")
    assert "stale" in out
    code, out, _ = run(capsys, "--db", db, "raptor", "build", "--force")
    code, out, _ = run(capsys, "--db", db, "raptor", "status")
    assert out.strip().endswith("current")


def test_economy_mode_is_refused_in_one_line(db, capsys) -> None:
    for argv in (["raptor", "build"], ["query", "gearbox", "--raptor"]):
        code, _, err = run(capsys, "--db", db, "--mode", "economy", *argv)
        assert code == 2 and "economy" in err and len(err.strip().splitlines()) == 1, err


def test_unknown_library_and_missing_tree(db, capsys) -> None:
    code, _, err = run(capsys, "--db", db, "raptor", "build", "--library", "nope")
    assert code == 2 and "unknown library 'nope'" in err
    code, _, err = run(capsys, "--db", db, "raptor", "show", "--library", "plant")
    assert code == 2 and "ragspine raptor build --library plant" in err


def test_config_has_a_raptor_line(db, capsys, monkeypatch) -> None:
    code, out, _ = run(capsys, "--db", db, "config")
    assert code == 0 and "raptor:            off" in out and "RAGSPINE_RAPTOR_SUMMARIZER=extractive" in out
    monkeypatch.setenv("RAGSPINE_RAPTOR", "1")
    code, out, _ = run(capsys, "--db", db, "config")
    assert "raptor:            on: the dense leg searches chunks and the 4 nearest synthesis nodes" in out


def test_the_llm_summarizer_never_sends_restricted_text(db, capsys, monkeypatch) -> None:
    needs("openai")
    from ragspine.testing.openai_stub import OpenAIStub

    with OpenAIStub(lambda body: "Gearbox supply zqsummaryzq was late everywhere.") as stub:
        monkeypatch.setenv("RAGSPINE_LLM", stub.url)
        monkeypatch.setenv("RAGSPINE_LLM_MODEL", "stub-model")
        code, out, err = run(capsys, "--db", db, "raptor", "build", "--summarizer", "llm")
        assert code == 0 and "(llm)" in out, err
        assert stub.calls >= 1 and not any(SECRET in p for p in stub.prompts)
    code, out, _ = run(capsys, "--db", db, "raptor", "show", "--library", "plant", "--json")
    assert all("zqsummaryzq" in n["text"] and n["written_by"] == "llm" for n in json.loads(out))
    code, out, _ = run(capsys, "--db", db, "query", "gearbox supply", "--raptor", "--json")
    assert code == 0 and "zqsummaryzq" not in out
