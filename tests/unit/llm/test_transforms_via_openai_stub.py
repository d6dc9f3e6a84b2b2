"""Every query-time LLM path end to end through the OpenAI-compatible adapter: ``ragspine query
--llm URL`` against an :class:`OpenAIStub` this test starts — HyDE, RAG-Fusion, step-back,
decomposition, Adaptive-RAG with the LLM classifier, the corrective rewrite and the listwise
judge — checking what the stub received (the seam's prompt, the configured model, never a
RESTRICTED text) and that no generated text ever comes back in a snippet.

The stub writes a marker word into every text it generates (each variant, passage,
sub-question and rewrite), so a generated text that leaked into an answer would show it."""

from __future__ import annotations

import json

import pytest

from tests.helpers import needs
from tests.unit.test_cli import run

needs("openai")

from ragspine.testing.openai_stub import OpenAIStub  # noqa: E402
from ragspine.testing.reasoning import scripted_answer, seam_of  # noqa: E402

MARK = "zqgeneratedzq"  # in every generated text, in no document
SECRET = "xylophonequartz"  # only in the RESTRICTED document
JUDGE = "Rank the passages"
DOCS = {
    "warranty.md": "---\ntitle: Warranty\n---\nGearbox warranty is 36 months; warranty claims are answered in five days.\n",
    "claims.md": "---\ntitle: Claims\n---\nGearbox warranty claims rose after supply delays.\n",
    "repairs.md": "---\ntitle: Repairs\n---\nGearbox repairs take a week; claims for repairs need the serial number.\n",
    "memo.md": f"---\ntitle: Memo\nsensitivity: restricted\n---\nGearbox warranty claims board memo {SECRET}.\n",
}

#: (flags, question, the seams the stub must have been asked, in order of first appearance)
PATHS = {
    "hyde": (["--query-transform", "hyde"], "gearbox warranty claims", ["hyde"]),
    "rag_fusion": (["--query-transform", "rag_fusion"], "gearbox warranty claims", ["rag_fusion"]),
    "step_back": (["--query-transform", "step_back"], "gearbox warranty claims", ["step_back"]),
    "decompose": (["--decompose", "llm"], "gearbox warranty and repairs claims", ["decompose"]),
    "adaptive_llm": (["--adaptive", "llm"], "compare gearbox warranty and repairs", ["adaptive", "decompose"]),
    "corrective": (["--corrective"], "gearbox quantum chromodynamics lattice", ["rewrite"]),
    "listwise": (["--reranker", "listwise"], "gearbox warranty claims", ["judge"]),
}


def reply(body: dict) -> str:
    """The stub's answer: the scripted stand-in's, with the marker in every generated line;
    Adaptive-RAG's classifier says COMPLEX; the judge puts the candidates in reverse order."""
    prompt = body["messages"][-1]["content"]
    if prompt.startswith(JUDGE):
        n = sum(1 for line in prompt.splitlines() if line.startswith("["))
        return ", ".join(str(i) for i in reversed(range(n)))
    seam = seam_of(prompt)
    if seam == "adaptive":
        return "COMPLEX"
    answer = scripted_answer(prompt, MARK)
    return answer if seam == "hyde" else "\n".join(f"{line} {MARK}" for line in answer.splitlines())


def seam(body: dict) -> str:
    prompt = body["messages"][-1]["content"]
    return "judge" if prompt.startswith(JUDGE) else seam_of(prompt)


@pytest.fixture
def stub():
    with OpenAIStub(reply) as s:
        yield s


@pytest.fixture(params=["economy", "hybrid"])
def db(request, tmp_path, capsys, monkeypatch) -> tuple[str, str]:
    monkeypatch.setenv("RAGSPINE_EMBEDDING", "deterministic")
    monkeypatch.setenv("RAGSPINE_LLM_MODEL", "stub-model")
    monkeypatch.setenv("RAGSPINE_LLM_RETRIES", "0")
    root = tmp_path / "docs"
    root.mkdir()
    for name, text in DOCS.items():
        (root / name).write_text(text, encoding="utf-8")
    path = str(tmp_path / "stub.db")
    code, _, err = run(capsys, "--db", path, "--mode", request.param, "ingest", str(root), "--library", "kestrel")
    assert code == 0, err
    return path, request.param


@pytest.mark.parametrize("path", list(PATHS))
def test_each_path_runs_through_the_openai_compatible_adapter(capsys, db, stub, path) -> None:
    flags, question, seams = PATHS[path]
    database, mode = db
    code, out, err = run(capsys, "--db", database, "--mode", mode, "query", question, "--json", "--top-k", "5",
                         "--llm", stub.url, *flags, *([] if path == "listwise" else ["--trace"]))
    assert code == 0, err
    snippets = json.loads(out)

    # what the stub received: this path's prompts, in the configured model's name, no RESTRICTED text
    asked = list(dict.fromkeys(seam(body) for body in stub.requests))
    assert asked == seams, asked
    assert all(body["model"] == "stub-model" for body in stub.requests)
    assert all(SECRET not in message["content"] for body in stub.requests for message in body["messages"])

    # a generated text is a probe, never evidence: in no snippet, and every snippet a stored open chunk
    assert MARK not in out and SECRET not in out
    titles = {"Warranty", "Claims", "Repairs"}
    assert all(s["title"] in titles and s["sensitivity"] != "RESTRICTED" for s in snippets), snippets
    if path == "listwise":  # the judge saw the open candidates only, and its order (reversed) is the answer's
        judged = [line.split("] ", 1)[1] for line in stub.requests[0]["messages"][-1]["content"].splitlines() if line.startswith("[")]
        assert len(judged) == 3 and [" ".join(s["text"].split()) for s in snippets] == judged[::-1]
        return
    trace = json.loads(err[err.index("[") :])
    steps = [step["step"] for step in trace]
    if path == "hyde":
        assert MARK not in err and any(step.get("hyde_passages") == 1 for step in trace)  # counted, never shown
    elif path == "corrective":
        assert "grade" in steps and {"step": "act", "round": 1, "action": "rewrite"}.items() <= next(
            s for s in trace if s["step"] == "act").items()
    else:
        assert snippets, err
        shown = [text for step in trace for key in ("probes", "sub_questions") for text in step.get(key, [])]
        assert shown and all(MARK in text for text in shown)  # the trace shows what was generated, as probes
    if path == "adaptive_llm":
        assert steps[:2] == ["adaptive", "decompose"] and trace[0]["route"] == "decompose"
