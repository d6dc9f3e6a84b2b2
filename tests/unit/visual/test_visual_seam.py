"""The visual seam end to end: PDFs rendered by reportlab, ingested, their pages rendered and
embedded by a tiny ONNX model the test builds (``tiny_model.py``), searched by MaxSim; hints are
page references, never snippets; RESTRICTED pages are never rendered; off, nothing changes."""

from __future__ import annotations

import json

import pytest

from tests.helpers import needs
from tests.unit.test_cli import run
from tests.unit.visual.tiny_model import build_tiny_visual_model, chart_pdf

needs("onnx", "onnxruntime", "tokenizers", "pypdfium2", "PIL", "reportlab")

RED, BLUE = (0.85, 0.1, 0.1), (0.1, 0.2, 0.85)


@pytest.fixture
def library(tmp_path, capsys, monkeypatch):
    """Library ``reports``: chart.pdf (text page, then a red chart), blue.pdf (a blue chart),
    secret.pdf (RESTRICTED, a red chart too), notes.md (not a PDF)."""
    root = tmp_path / "docs"
    root.mkdir()
    chart_pdf(root / "chart.pdf", [("Annual report: revenue by region", None), ("Figure 2: revenue by region", RED)])
    chart_pdf(root / "blue.pdf", [("Figure 1: headcount by site", BLUE)])
    chart_pdf(root / "secret.pdf", [("Board only: acquisition targets", RED)])
    (root / "secret.pdf.meta.yaml").write_text("sensitivity: RESTRICTED\n", encoding="utf-8")
    (root / "notes.md").write_text("# Notes\n\nThe red chart shows revenue.\n", encoding="utf-8")
    db = str(tmp_path / "v.db")
    code, _, err = run(capsys, "--db", db, "--mode", "economy", "ingest", str(root), "--library", "reports")
    assert code == 0, err
    monkeypatch.setenv("RAGSPINE_VISUAL_EMBEDDER", "onnx")
    monkeypatch.setenv("RAGSPINE_VISUAL_MODEL", str(build_tiny_visual_model(tmp_path / "model")))
    return db, root


def _search(capsys, db: str, query: str, *extra: str) -> list[dict]:
    code, out, err = run(capsys, "--db", db, "visual", "search", query, "--json", *extra)
    assert code == 0, err
    return json.loads(out)["visual_hints"]


def test_a_chart_is_found_by_what_it_shows(library, capsys) -> None:
    db, root = library
    code, out, err = run(capsys, "--db", db, "visual", "build", "--library", "reports")
    assert code == 0, err
    assert "3 page(s) of 2 PDF(s)" in out and "1 restricted" in out and "1 not_pdf" in out
    hints = _search(capsys, db, "the red chart", "--top-k", "1")
    assert hints == [{"kind": "visual_hint", "is_visual": True, "doc_id": "chart.pdf", "title": hints[0]["title"],
                      "library_id": "reports", "page": 2, "source_locator": f"{root / 'chart.pdf'}#page=2",
                      "score": pytest.approx(1.0, abs=0.05)}]
    assert "text" not in hints[0]  # a page reference, never a snippet
    (blue,) = _search(capsys, db, "blue", "--top-k", "1")
    assert (blue["doc_id"], blue["page"]) == ("blue.pdf", 1)
    assert _search(capsys, db, "revenue") == []  # words the model gives no vector: no hint, not a guess
    code, out, _ = run(capsys, "--db", db, "visual", "status")
    assert code == 0 and "reports: 3 page(s)" in out and "current" in out


def test_restricted_pages_are_never_rendered_nor_stored(library, capsys, monkeypatch) -> None:
    from ragspine.retrieval.visual import index as index_module

    db, root = library
    rendered = _spy_renders(monkeypatch)
    assert run(capsys, "--db", db, "visual", "build")[0] == 0
    assert sorted(rendered) == [str(root / "blue.pdf"), str(root / "chart.pdf")]
    from ragspine.stores.sqlite.database import SQLiteDatabase

    store = SQLiteDatabase(db).chunk_store("reports")
    saved = index_module.VisualIndex.load(index_module.visual_dir(store))
    assert {p.doc_id for p in saved.pages} == {"chart.pdf", "blue.pdf"}
    assert len(saved.patches) == saved.offsets[-1] and len(saved.offsets) == 4  # three pages' patches, nothing else
    assert all(h["doc_id"] != "secret.pdf" for h in _search(capsys, db, "red", "--top-k", "10"))


def test_a_document_restricted_after_the_build_is_dropped_at_query_time(library, capsys) -> None:
    db, root = library
    assert run(capsys, "--db", db, "visual", "build")[0] == 0
    assert _search(capsys, db, "red", "--top-k", "1")[0]["doc_id"] == "chart.pdf"
    (root / "chart.pdf.meta.yaml").write_text("sensitivity: RESTRICTED\n", encoding="utf-8")
    code, _, err = run(capsys, "--db", db, "--mode", "economy", "ingest", str(root / "chart.pdf"), "--library", "reports")
    assert code == 0, err
    assert all(h["doc_id"] != "chart.pdf" for h in _search(capsys, db, "red", "--top-k", "10"))
    code, out, _ = run(capsys, "--db", db, "visual", "status")
    assert "stale" in out


def test_an_index_of_another_model_is_refused(library, capsys, tmp_path, monkeypatch) -> None:
    db, _ = library
    assert run(capsys, "--db", db, "visual", "build")[0] == 0
    other = build_tiny_visual_model(tmp_path / "other")
    (other / "visual.json").write_text(json.dumps({"mean": [0.4, 0.5, 0.5]}), encoding="utf-8")
    monkeypatch.setenv("RAGSPINE_VISUAL_MODEL", str(other))
    code, _, err = run(capsys, "--db", db, "visual", "search", "red")
    assert code == 2 and "built by another model" in err and "ragspine visual build --library reports" in err


def test_the_seam_off_is_refused_by_the_cli(library, capsys, monkeypatch) -> None:
    db, _ = library
    monkeypatch.setenv("RAGSPINE_VISUAL_EMBEDDER", "none")
    code, _, err = run(capsys, "--db", db, "visual", "build")
    assert code == 2 and "RAGSPINE_VISUAL_EMBEDDER" in err


def _spy_renders(monkeypatch) -> list[str]:
    from ragspine.retrieval.visual import index as index_module

    rendered: list[str] = []
    real = index_module.render_pages

    def spy(path, **kwargs):
        rendered.append(str(path))
        return real(path, **kwargs)

    monkeypatch.setattr(index_module, "render_pages", spy)
    return rendered


def test_a_file_changed_or_labelled_restricted_since_its_ingest_is_not_rendered(library, capsys, monkeypatch) -> None:
    db, root = library
    chart_pdf(root / "chart.pdf", [("Another report altogether", RED)])  # the file is no longer the stored document
    (root / "blue.pdf.meta.yaml").write_text("sensitivity: RESTRICTED\n", encoding="utf-8")  # labelled after its ingest
    rendered = _spy_renders(monkeypatch)
    code, out, err = run(capsys, "--db", db, "visual", "build")
    assert code == 0, err
    assert rendered == [] and "reports: 0 page(s)" in out
    assert "1 changed_since_ingest" in out and "2 restricted" in out
    assert _search(capsys, db, "red") == [] and _search(capsys, db, "blue") == []
