"""``ragspine demo``: cited snippets, and the RESTRICTED board memo withheld although it is the
best lexical match."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ragspine import cli
from ragspine.config import load_settings
from ragspine.demo import CORPUS_DIR, LIBRARIES, QUESTIONS, DemoReport, run_demo
from ragspine.documents import read_document
from ragspine.retrieval.sensitivity import is_restricted
from ragspine.stack import Stack
from tests.helpers import needs

BOARD_MEMO = "kestrel/board-memo-q3"
READS_FILES = all(importlib.util.find_spec(m) for m in ("pypdfium2", "openpyxl"))  # the documents extra


def _memo_body() -> str:
    return read_document(CORPUS_DIR / "board-memo-q3.md", CORPUS_DIR).text


def _cited(path: str, start: int, end: int) -> str:
    """The span a locator names: of the file's text (a Markdown file's own characters; a PDF's or
    a spreadsheet's text as its reader extracts it, which is what the store keeps)."""
    doc = read_document(Path(path), CORPUS_DIR)
    return doc.text[start - doc.body_offset : end - doc.body_offset]


def _check_pages(report: DemoReport) -> None:
    """The PDF and spreadsheet questions are answered from those files, with their pages."""
    from ragspine.demo import FILE_QUESTIONS

    for question, snippets in report.answers:
        if question in FILE_QUESTIONS:
            top = snippets[0]
            assert top["source_locator"].split("#")[0].endswith((".pdf", ".xlsx")) and top["page"] >= 1, top
    (pdf,) = [s for q, snippets in report.answers if q == FILE_QUESTIONS[0] for s in snippets if "4,000 operating hours" in s["text"]]
    assert pdf["source_locator"].split("#")[0].endswith(".pdf") and pdf.get("page_end", pdf["page"]) == 2  # lubrication: page 2
    (row,) = [s for q, snippets in report.answers if q == FILE_QUESTIONS[1] for s in snippets if "KR7-OS-01" in s["text"]]
    assert "| KR-7 output shaft | KR7-OS-01 | 410 | 6 |" in row["text"] and row["page"] == 1  # the first sheet


def _check_report(report: DemoReport) -> None:
    assert report.restricted_doc == BOARD_MEMO
    assert report.restricted_top_lexical is True
    assert report.restricted_leaked is False
    assert len(report.answers) == len(QUESTIONS)
    memo_sentences = [s.strip() for s in re.split(r"(?<=[.?])\s+", _memo_body()) if len(s.strip()) > 30]
    for question, snippets in report.answers:
        assert snippets, question.query
        for s in snippets:
            assert s["doc_id"] != BOARD_MEMO and not is_restricted(s["sensitivity"])
            assert "#char=" in s["source_locator"]
            path, _, span = s["source_locator"].partition("#char=")
            start, end = map(int, span.split(","))
            assert Path(path).is_absolute() and Path(path).parent == CORPUS_DIR  # a file the user can open
            assert _cited(path, start, end) == s["text"]
            assert not any(sentence in s["text"] for sentence in memo_sentences)
            if question.libraries:
                assert s["library_id"] in question.libraries
            if question.filters:
                assert all(s["metadata"].get(k) == v for k, v in question.filters.items())


def _check_agent_answers(report: DemoReport) -> None:
    """The demo's four agent answers: found with its source, not_found, unrecognized_param, and
    the composite with both source lists (every cited snippet a span of an open corpus file)."""
    from ragspine.demo.answers import QUESTIONS as AGENT_QUESTIONS

    answers = {item.expect: answer for item, answer in report.agent_answers}
    assert [item for item, _ in report.agent_answers] == list(AGENT_QUESTIONS)
    found = answers["found"]
    assert (found.route, found.structured.result.status, found.structured.result.value) == ("structured", "found", "182")
    assert found.sources == [found.structured.source()] and found.sources[0]["source_doc_id"] == "kestrel/q3-2024-results"
    assert found.sources[0]["library_id"] == "kestrel-reports" and "182 million euros" in found.text
    for status in ("not_found", "unrecognized_param"):
        answer = answers[status]
        assert answer.route == "structured" and answer.structured.result.status == status and answer.sources == []
        assert not re.search(r"\d|[０-９]", answer.text), answer.text
    assert answers["unrecognized_param"].structured.result.params == ("metric",)
    composite = answers["composite"]
    assert composite.route == "composite" and composite.structured.result.status == "found"
    kinds = [s["kind"] for s in composite.sources]
    assert kinds[0] == "fact" and kinds.count("chunk") >= 1 and composite.sources[1]["doc_id"] == "kestrel/q3-2024-results"
    for s in composite.sources[1:]:
        path, _, span = s["source_locator"].partition("#char=")
        start, end = map(int, span.split(","))
        assert Path(path).parent == CORPUS_DIR and _cited(path, start, end) == s["text"]
        assert s["doc_id"] != BOARD_MEMO
    assert composite.text.startswith(composite.structured.result.text)


def test_the_corpus_has_the_restricted_memo():
    memo = read_document(CORPUS_DIR / "board-memo-q3.md", CORPUS_DIR)
    assert memo.doc_id == BOARD_MEMO and is_restricted(memo.sensitivity)
    files = [f for _, fs in LIBRARIES.values() for f in fs]
    assert all((CORPUS_DIR / f).is_file() for f in files)


@pytest.mark.parametrize("mode", ["economy", "hybrid"])
def test_run_demo_report(tmp_path, mode):
    env = {"RAGSPINE_CHUNK_STORE": str(tmp_path / "demo.db"), "RAGSPINE_EMBEDDING": "deterministic",
           "RAGSPINE_CACHE_DIR": str(tmp_path / "cache")}
    lines: list[str] = []
    with Stack(load_settings(env), mode=mode) as stack:
        report = run_demo(stack, echo=lines.append)
    _check_report(report)
    _check_agent_answers(report)
    text = "\n".join(lines)
    assert "withheld (not indexed, and dropped at both exits)" in text and "LEAKED" not in text
    assert text.count(f"cite: {CORPUS_DIR}/") >= len(QUESTIONS)
    if mode == "economy":
        assert report.mode.startswith("economy")
    if READS_FILES:
        _check_pages(report)
    else:  # the core install: the demo says what it left out and why
        assert "skipped kr7-service-manual.pdf" in text and "ragspine[documents]" in text


def test_demo_command_in_process(capsys, tmp_path):
    db = tmp_path / "kept.db"
    code = cli.main(["--db", str(db), "--mode", "economy", "demo"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "RESTRICTED check" in out and f"best BM25 match in the store for the first question is {BOARD_MEMO}" in out
    assert "withheld (not indexed, and dropped at both exits)" in out
    assert re.search(rf"cite: {re.escape(str(CORPUS_DIR))}/[\w.-]+#char=\d+,\d+", out)
    assert f"demo database: {db}" in out  # --db keeps it
    assert "third-quarter revenue reversal" not in out  # memo text
    assert "Q: What was Kestrel's revenue in Q3 2024?   [structured: found]" in out
    assert "  Kestrel Robotics revenue for Q3 2024: 182 million euros (source: kestrel/q3-2024-results, paragraph 1;" in out
    assert "[structured: not_found]" in out and "[structured: unrecognized_param]" in out and "[composite: found]" in out
    assert "  source: fact  kestrel/q3-2024-results, paragraph 1 (library kestrel-reports;" in out and "  source: [S1] " in out
    assert "audit committee" not in out
    if READS_FILES:
        assert re.search(rf"cite: {re.escape(str(CORPUS_DIR))}/kr7-service-manual\.pdf#char=\d+,\d+, pages? (\d-)?2 ", out), out


def test_ragspine_demo_subprocess(tmp_path):
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGSPINE_")}
    env.update({"RAGSPINE_RETRIEVAL_MODE": "economy", "RAGSPINE_CACHE_DIR": str(tmp_path / "c"),
                "XDG_DATA_HOME": str(tmp_path / "x"), "TMPDIR": str(tmp_path)})
    proc = subprocess.run([str(Path(sys.executable).parent / "ragspine"), "demo"],
                          capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "#char=" in proc.stdout and "withheld (not indexed, and dropped at both exits)" in proc.stdout
    assert "audit committee" not in proc.stdout
    assert "demo database" not in proc.stdout  # a temporary database, not kept ...
    assert list(tmp_path.glob("ragspine-demo-*")) == []  # ... and removed


def test_demo_keep_keeps_the_temporary_database(capsys, tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert cli.main(["--mode", "economy", "demo", "--keep"]) == 0
    out = capsys.readouterr().out
    (kept,) = tmp_path.glob("ragspine-demo-*/demo.db")
    assert f"demo database: {kept}" in out
    assert cli.main(["--mode", "economy", "demo"]) == 0
    assert len(list(tmp_path.glob("ragspine-demo-*"))) == 1  # the second run cleaned up after itself


@pytest.mark.slow
def test_demo_with_the_default_onnx_mode(capsys, tmp_path):
    needs("onnxruntime", "fastembed")
    code = cli.main(["--db", str(tmp_path / "onnx.db"), "demo"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "retrieval mode: auto with all-MiniLM" in out
    assert "withheld (not indexed, and dropped at both exits)" in out and "audit committee" not in out


def test_demo_stack_runs_on_the_configured_stores(capsys, tmp_path, monkeypatch):
    """`ragspine demo --stack` writes into the configured chunk store (what compose's demo runs)."""
    from ragspine import cli
    from ragspine.stores.sqlite import SQLiteDatabase

    db_path = tmp_path / "configured.db"
    monkeypatch.setenv("RAGSPINE_CHUNK_STORE", str(db_path))
    monkeypatch.setenv("RAGSPINE_EMBEDDING", "deterministic")
    assert cli.main(["demo", "--stack"]) == 0
    out = capsys.readouterr().out
    assert "#char=" in out and "withheld (not indexed, and dropped at both exits)" in out
    db = SQLiteDatabase(db_path)
    try:
        assert {lib.library_id for lib in db.list_libraries()} == {"kestrel-reports", "kestrel-china"}
    finally:
        db.close()
