"""The documents the wiring tests ask about: PDFs drawn by reportlab (their charts' colours are
what the tiny model sees, ``tiny_model.py``), one of them RESTRICTED, and a Markdown note."""

from __future__ import annotations

from pathlib import Path

from tests.unit.visual.tiny_model import chart_pdf

RED, BLUE = (0.85, 0.1, 0.1), (0.1, 0.2, 0.85)


def report_docs(root: Path, *, secret: bool = True) -> Path:
    """``root`` with chart.pdf (a text page, then a red bar chart), blue.pdf (a blue one),
    secret.pdf (RESTRICTED by its sidecar, a red bar chart too) and notes.md (not a PDF)."""
    root.mkdir(parents=True, exist_ok=True)
    chart_pdf(root / "chart.pdf", [("Annual report: the bar chart by region follows", None), ("Figure 2: bar chart by region", RED)])
    chart_pdf(root / "blue.pdf", [("Figure 1: bar chart of headcount by site", BLUE)])
    if secret:
        chart_pdf(root / "secret.pdf", [("Board only: bar chart of acquisition targets", RED)])
        (root / "secret.pdf.meta.yaml").write_text("sensitivity: RESTRICTED\n", encoding="utf-8")
    (root / "notes.md").write_text("# Notes\n\nThe red bar chart is in the annual report.\n", encoding="utf-8")
    return root


#: A question the narrative path answers (BM25 finds the note and the report) and the tiny model
#: reads as "red"; no glossary metric in it, so it routes narrative.
QUESTION = "Which bar chart is red?"
#: A question nothing stored answers (no word of it in any text), though "blue" finds a page.
UNANSWERED = "blue xylophone"
