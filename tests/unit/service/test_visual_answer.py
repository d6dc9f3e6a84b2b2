"""``POST /v1/answer`` with the visual seam: ``visual_hints`` only when the seam is on and a hint
is found — pages of the tenant's own libraries, never a RESTRICTED document's, never for a
refused question — and the response byte for byte what it was with the seam off; deleting a
library deletes its visual index.

A service upload keeps no file to render, so the PDFs here are ingested from files into the
tenant's library (``<tenant>/<name>``) by the CLI, as an operator would, and indexed by
``ragspine visual build``."""

from __future__ import annotations

import os

import pytest

from tests.helpers import needs
from tests.unit.service.conftest import make_settings, new_library, new_tenant
from tests.unit.test_cli import run
from tests.unit.visual.reports import QUESTION, RED, report_docs
from tests.unit.visual.tiny_model import build_tiny_visual_model, chart_pdf

needs("fastapi", "onnx", "onnxruntime", "tokenizers", "pypdfium2", "PIL", "reportlab")

from fastapi.testclient import TestClient  # noqa: E402

from ragspine.service.app import create_app  # noqa: E402

#: the answer's keys before the seam, in their order: with the seam off, exactly these
KEYS = ["question", "route", "text", "language", "libraries", "structured", "narrative", "sources", "refusal", "refused", "routing"]


@pytest.fixture
def model(tmp_path, monkeypatch):
    path = build_tiny_visual_model(tmp_path / "model")
    monkeypatch.setenv("RAGSPINE_EMBEDDING", "deterministic")  # the CLI runs below write as the service does
    monkeypatch.setenv("RAGSPINE_VISUAL_EMBEDDER", "onnx")  # the CLI's `visual build`
    monkeypatch.setenv("RAGSPINE_VISUAL_MODEL", str(path))
    return path


def _app(tmp_path, model, *, on: bool = True):
    env = {"RAGSPINE_VISUAL_EMBEDDER": "onnx", "RAGSPINE_VISUAL_MODEL": str(model)} if on else {}
    return TestClient(create_app(make_settings(tmp_path, **env)))


def _library(client, capsys, tmp_path, tenant: str, root, headers=None) -> dict:
    """``tenant``'s library ``reports``: the files of ``root`` ingested into it and indexed."""
    headers = headers or new_tenant(client, tenant)
    new_library(client, headers, "reports", description="annual reports")
    db = str(tmp_path / "service.db")
    code, _, err = run(capsys, "--db", db, "ingest", str(root), "--library", f"{tenant}/reports")
    assert code == 0, err
    code, out, err = run(capsys, "--db", db, "visual", "build", "--library", f"{tenant}/reports")
    assert code == 0, err
    return headers


def _answer(client, headers, question: str = QUESTION, **body):
    r = client.post("/v1/answer", json={"question": question, **body}, headers=headers)
    assert r.status_code == 200, r.text
    return r


def test_hints_on_and_the_response_unchanged_off(tmp_path, capsys, model) -> None:
    root = report_docs(tmp_path / "docs")
    with _app(tmp_path, model) as client:
        headers = _library(client, capsys, tmp_path, "acme", root)
        on = _answer(client, headers)
    with _app(tmp_path, model, on=False) as client:
        off = _answer(client, headers)
    assert list(off.json()) == KEYS and b"visual" not in off.content
    hinted = on.json()
    hints = hinted.pop("visual_hints")
    assert hinted == off.json() and list(hinted) == KEYS  # the key is all the seam adds
    assert hints[0] == {"kind": "visual_hint", "is_visual": True, "doc_id": "chart.pdf", "title": hints[0]["title"],
                        "library_id": "reports", "page": 2, "source_locator": f"{root / 'chart.pdf'}#page=2",
                        "score": pytest.approx(1.0, abs=0.05)}
    assert "acme/" not in on.text  # the tenant's names, never the catalog's
    assert all(s["kind"] == "chunk" and "#page=" not in s["source_locator"] for s in hinted["sources"])


def test_a_restricted_pdf_never_becomes_a_hint(tmp_path, capsys, model) -> None:
    root = report_docs(tmp_path / "docs")  # secret.pdf: RESTRICTED, a red bar chart as chart.pdf's
    with _app(tmp_path, model) as client:
        headers = _library(client, capsys, tmp_path, "acme", root)
        for question in (QUESTION, "bar chart of acquisition targets in red", "Board only: red"):
            out = _answer(client, headers, question).json()
            assert "secret.pdf" not in str(out.get("visual_hints", [])) and "acquisition" not in str(out["sources"])
        # chart.pdf labelled RESTRICTED and ingested again after the build: its pages go from the hints at once
        (root / "chart.pdf.meta.yaml").write_text("sensitivity: RESTRICTED\n", encoding="utf-8")
        code, _, err = run(capsys, "--db", str(tmp_path / "service.db"), "ingest", str(root / "chart.pdf"), "--library", "acme/reports")
        assert code == 0, err
        out = _answer(client, headers).json()
        assert all(h["doc_id"] not in ("chart.pdf", "secret.pdf") for h in out.get("visual_hints", []))


def test_hints_come_from_the_tenants_own_libraries(tmp_path, capsys, model) -> None:
    acme_root = report_docs(tmp_path / "acme", secret=False)
    beta_root = tmp_path / "beta"
    beta_root.mkdir()
    chart_pdf(beta_root / "rival.pdf", [("Which bar chart is red? Ours, the rival plan", RED)])
    with _app(tmp_path, model) as client:
        acme = _library(client, capsys, tmp_path, "acme", acme_root)
        beta = _library(client, capsys, tmp_path, "beta", beta_root)
        for _ in range(2):  # the second time from the indexes held
            acme_hints = _answer(client, acme, top_k=5).json()["visual_hints"]
            beta_hints = _answer(client, beta).json()["visual_hints"]
            assert {h["doc_id"] for h in acme_hints} <= {"chart.pdf", "blue.pdf"} and "rival" not in str(acme_hints)
            assert [(h["doc_id"], h["library_id"]) for h in beta_hints] == [("rival.pdf", "reports")]
        assert client.post("/v1/answer", json={"question": QUESTION, "libraries": ["nope"]}, headers=acme).status_code == 404


def test_a_refused_question_gets_no_hint(tmp_path, capsys, model, monkeypatch) -> None:
    from ragspine.retrieval.visual.onnx_embedder import OnnxVisualEmbedder

    deny = tmp_path / "deny.yaml"
    deny.write_text("entities:\n  ACME:\n    en: [Acme]\n", encoding="utf-8")
    seen: list[str] = []
    real = OnnxVisualEmbedder.embed_query
    monkeypatch.setattr(OnnxVisualEmbedder, "embed_query", lambda self, q: (seen.append(q), real(self, q))[1])
    root = report_docs(tmp_path / "docs")
    env = {"RAGSPINE_VISUAL_EMBEDDER": "onnx", "RAGSPINE_VISUAL_MODEL": str(model), "RAGSPINE_SECURITY_DENYLIST": str(deny)}
    with TestClient(create_app(make_settings(tmp_path, **env))) as client:
        headers = _library(client, capsys, tmp_path, "tenant1", root)
        out = _answer(client, headers, "Which bar chart is red at Acme?")
        assert out.json()["route"] == "refused" and list(out.json()) == KEYS
        assert seen == []  # the gate first: the refused question never reached the visual model
        assert "visual_hints" in _answer(client, headers).json() and seen == [QUESTION]


def test_deleting_a_library_deletes_its_visual_index(tmp_path, capsys, model) -> None:
    from ragspine.retrieval.visual.index import visual_dir

    root = report_docs(tmp_path / "docs")
    with _app(tmp_path, model) as client:
        headers = _library(client, capsys, tmp_path, "acme", root)
        assert _answer(client, headers).json()["visual_hints"]
        where = visual_dir(client.app.state.service.stack.db.chunk_store("acme/reports"))
        assert where and os.path.isfile(os.path.join(where, "index.json"))
        assert client.delete("/v1/libraries/reports", headers=headers).status_code == 200
        assert not os.path.exists(where)
        new_library(client, headers, "reports", description="annual reports")  # the name again: no page of the old one
        code, _, err = run(capsys, "--db", str(tmp_path / "service.db"), "ingest", str(root / "notes.md"), "--library", "acme/reports")
        assert code == 0, err
        out = _answer(client, headers).json()
        assert out["sources"] and "visual_hints" not in out
