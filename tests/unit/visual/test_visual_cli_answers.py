"""``ragspine ask`` and ``ragspine query --visual`` with the visual seam: page hints beside an
answered question (never a source, never page text), none for a refused or unanswered one (the
gate decides before anything is embedded), byte for byte the old output when the seam is off;
deleting a library deletes its visual index."""

from __future__ import annotations

import json
import os

import pytest

from tests.helpers import needs
from tests.unit.test_cli import run
from tests.unit.visual.reports import QUESTION, UNANSWERED, report_docs
from tests.unit.visual.tiny_model import build_tiny_visual_model, chart_pdf

needs("onnx", "onnxruntime", "tokenizers", "pypdfium2", "PIL", "reportlab")

ECONOMY = ("--mode", "economy")


@pytest.fixture
def built(tmp_path, capsys, monkeypatch):
    """Library ``reports`` ingested and its visual index built; the seam on (the tiny model)."""
    root = report_docs(tmp_path / "docs")
    db = str(tmp_path / "v.db")
    code, _, err = run(capsys, "--db", db, *ECONOMY, "ingest", str(root), "--library", "reports")
    assert code == 0, err
    monkeypatch.setenv("RAGSPINE_VISUAL_EMBEDDER", "onnx")
    monkeypatch.setenv("RAGSPINE_VISUAL_MODEL", str(build_tiny_visual_model(tmp_path / "model")))
    code, out, err = run(capsys, "--db", db, "visual", "build")
    assert code == 0 and "3 page(s) of 2 PDF(s)" in out, err
    return db, root


@pytest.fixture
def embedded(monkeypatch) -> list[str]:
    """Every text the visual embedder is asked to embed."""
    from ragspine.retrieval.visual.onnx_embedder import OnnxVisualEmbedder

    seen: list[str] = []
    real = OnnxVisualEmbedder.embed_query

    def spy(self, query):
        seen.append(query)
        return real(self, query)

    monkeypatch.setattr(OnnxVisualEmbedder, "embed_query", spy)
    return seen


def _ask(capsys, db: str, question: str, *extra: str) -> tuple[int, str, str]:
    return run(capsys, "--db", db, *ECONOMY, "ask", question, *extra)


def test_ask_carries_page_hints_beside_its_sources(built, capsys) -> None:
    db, root = built
    code, out, err = _ask(capsys, db, QUESTION, "--json")
    answer = json.loads(out)
    assert code == 0, err
    assert answer["route"] == "narrative" and answer["sources"]  # answered from the text
    hints = answer["visual_hints"]
    assert hints[0] == {"kind": "visual_hint", "is_visual": True, "doc_id": "chart.pdf", "title": hints[0]["title"],
                        "library_id": "reports", "page": 2, "source_locator": f"{root / 'chart.pdf'}#page=2",
                        "score": pytest.approx(1.0, abs=0.05)}
    assert all(set(h) == set(hints[0]) for h in hints)  # page references only: no text of a page
    assert all(s["kind"] != "visual_hint" and "#page=" not in s.get("source_locator", "") for s in answer["sources"])
    assert "secret.pdf" not in out  # RESTRICTED: never rendered, never a hint
    code, text, _ = _ask(capsys, db, QUESTION)
    assert code == 0
    block = text.split("\nvisual hints (pages to look at; not citations):\n", 1)[1]
    assert block.splitlines()[0].strip().startswith("[reports] ") and f"{root / 'chart.pdf'}#page=2" in block.splitlines()[0]
    assert "Figure 2" not in block  # the page's text is never printed


def test_the_seam_off_prints_what_it_printed_before(built, capsys, monkeypatch) -> None:
    db, _ = built
    on = [_ask(capsys, db, QUESTION, *flags) for flags in ((), ("--json",))]
    monkeypatch.setenv("RAGSPINE_VISUAL_EMBEDDER", "none")
    off = [_ask(capsys, db, QUESTION, *flags) for flags in ((), ("--json",))]
    assert "visual" not in off[0][1] + off[1][1] and off[0][2] == off[1][2] == ""
    (text_on, json_on), (text_off, json_off) = ((o[1] for o in on)), ((o[1] for o in off))
    assert text_on.startswith(text_off) and text_on[len(text_off):].startswith("\nvisual hints")  # the block is all it adds
    hinted = json.loads(json_on)
    assert hinted.pop("visual_hints") and hinted == json.loads(json_off)
    assert json.dumps(hinted, ensure_ascii=False, indent=2) + "\n" == json_off  # same keys, same order, same bytes
    query_on = run(capsys, "--db", db, *ECONOMY, "query", QUESTION, "--json")
    monkeypatch.setenv("RAGSPINE_VISUAL_EMBEDDER", "onnx")
    assert run(capsys, "--db", db, *ECONOMY, "query", QUESTION, "--json") == query_on  # no --visual: the snippet list, as ever


def test_a_refused_question_gets_no_hint_and_is_never_embedded(built, capsys, monkeypatch, tmp_path, embedded) -> None:
    db, _ = built
    deny = tmp_path / "deny.yaml"
    deny.write_text("entities:\n  ACME:\n    en: [Acme]\n", encoding="utf-8")
    monkeypatch.setenv("RAGSPINE_SECURITY_DENYLIST", str(deny))
    code, out, _ = _ask(capsys, db, "Which bar chart is red at Acme?", "--json")
    answer = json.loads(out)
    assert code == 1 and answer["route"] == "refused" and "visual_hints" not in answer
    code, out, _ = run(capsys, "--db", db, *ECONOMY, "query", "Which bar chart is red at Acme?", "--visual", "--json")
    assert code == 0 and json.loads(out) == {"snippets": [], "visual_hints": []}
    assert embedded == []  # the gate ran first: the refused text never reached the visual model


def test_an_unanswered_question_gets_no_hint(built, capsys, embedded) -> None:
    db, _ = built
    code, out, _ = run(capsys, "--db", db, "visual", "search", UNANSWERED, "--json")
    assert code == 0 and json.loads(out)["visual_hints"][0]["doc_id"] == "blue.pdf"  # the index would point at a page...
    embedded.clear()
    code, out, _ = _ask(capsys, db, UNANSWERED, "--json")
    answer = json.loads(out)
    assert code == 0 and answer["sources"] == [] and "visual_hints" not in answer  # ...but nothing answered it: no hint
    code, out, _ = run(capsys, "--db", db, *ECONOMY, "query", UNANSWERED, "--visual", "--json")
    assert json.loads(out) == {"snippets": [], "visual_hints": []}
    assert embedded == []


def test_query_visual_adds_hints_and_keeps_boxes(built, capsys) -> None:
    db, root = built
    code, out, err = run(capsys, "--db", db, *ECONOMY, "query", QUESTION, "--visual", "--boxes", "--json")
    assert code == 0, err
    shown = json.loads(out)
    assert list(shown) == ["snippets", "visual_hints"]
    assert shown["snippets"] == json.loads(run(capsys, "--db", db, *ECONOMY, "query", QUESTION, "--boxes", "--json")[1])
    assert any("boxes" in s for s in shown["snippets"])  # --boxes as before
    assert (shown["visual_hints"][0]["doc_id"], shown["visual_hints"][0]["page"]) == ("chart.pdf", 2)
    code, text, _ = run(capsys, "--db", db, *ECONOMY, "query", QUESTION, "--visual")
    assert code == 0 and f"{root / 'chart.pdf'}#page=2" in text.split("visual hints (pages to look at; not citations):")[1]


def test_query_visual_with_the_seam_off_or_no_index(built, capsys, monkeypatch, tmp_path) -> None:
    db, root = built
    monkeypatch.setenv("RAGSPINE_VISUAL_EMBEDDER", "none")
    code, _, err = run(capsys, "--db", db, *ECONOMY, "query", QUESTION, "--visual")
    assert code == 2 and "RAGSPINE_VISUAL_EMBEDDER" in err and len(err.splitlines()) == 1
    monkeypatch.setenv("RAGSPINE_VISUAL_EMBEDDER", "onnx")
    assert run(capsys, "--db", db, *ECONOMY, "ingest", str(root / "notes.md"), "--library", "plain")[0] == 0
    code, out, err = run(capsys, "--db", db, *ECONOMY, "query", QUESTION, "--library", "plain", "--visual", "--json")
    assert code == 0 and json.loads(out)["visual_hints"] == [] and "no visual index in 'plain'" in err
    code, out, _ = _ask(capsys, db, QUESTION, "--library", "plain", "--json")
    assert code == 0 and json.loads(out)["sources"] and "visual_hints" not in json.loads(out)  # no index: no key


def test_an_index_of_another_model_leaves_the_answer_standing(built, capsys, monkeypatch, tmp_path) -> None:
    db, _ = built
    other = build_tiny_visual_model(tmp_path / "other")
    (other / "visual.json").write_text(json.dumps({"mean": [0.4, 0.5, 0.5]}), encoding="utf-8")
    monkeypatch.setenv("RAGSPINE_VISUAL_MODEL", str(other))
    code, out, err = _ask(capsys, db, QUESTION, "--json")
    assert code == 0 and json.loads(out)["sources"] and "visual_hints" not in json.loads(out)
    assert "no visual hints:" in err and "ragspine visual build --library reports" in err


def test_deleting_a_library_deletes_its_visual_index(built, capsys, tmp_path) -> None:
    from ragspine.config import load_settings
    from ragspine.retrieval.visual.index import visual_dir
    from ragspine.stack import Stack

    db, _ = built
    with Stack(load_settings({"RAGSPINE_CHUNK_STORE": db, "RAGSPINE_RETRIEVAL_MODE": "economy"})) as stack:
        where = visual_dir(stack.db.chunk_store("reports"))
        assert where and os.path.isfile(os.path.join(where, "index.json"))
        assert stack.delete_library("reports")
    assert not os.path.exists(where)
    # the library made again under its name, chart.pdf now another document: no page of the old file comes back
    again = tmp_path / "again"
    again.mkdir()
    chart_pdf(again / "chart.pdf", [("Which bar chart is red? None any more: the bars are gone", None)])
    assert run(capsys, "--db", db, *ECONOMY, "ingest", str(again), "--library", "reports")[0] == 0
    code, out, _ = _ask(capsys, db, QUESTION, "--json")
    assert code == 0 and json.loads(out)["sources"][0]["doc_id"] == "chart.pdf" and "visual_hints" not in json.loads(out)
