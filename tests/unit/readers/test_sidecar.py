"""Sidecars: ``report.pdf.meta.yaml`` gives a file without front matter its fields, by every
rule of front matter (fail-closed sensitivity, scalars only, key checks)."""

from __future__ import annotations

import json

import pytest

from ragspine import cli
from ragspine.documents import collect_files, read_document
from ragspine.errors import IngestError
from tests.helpers import needs
from tests.unit.readers.conftest import report_pdf

needs("pypdfium2")


def test_a_sidecar_gives_a_pdf_its_fields(write) -> None:
    pdf = write("docs/report.pdf", report_pdf())
    write("docs/report.pdf.meta.yaml", "doc_id: plant-review\ntitle: Review\nSensitivity: restricted\nteam: ops\nyear: 2024\n"
          "valid_as_of: 2024-12-31\n")
    doc = read_document(pdf, pdf.parent)
    assert (doc.doc_id, doc.title, doc.sensitivity, doc.valid_as_of) == ("plant-review", "Review", "RESTRICTED", "2024-12-31")
    assert doc.metadata["team"] == "ops" and doc.metadata["year"] == 2024 and doc.metadata["author"] == "Ada Byron"
    assert doc.text == read_document(write("other/report.pdf", report_pdf())).text  # the text is the reader's, unchanged


def test_a_sidecar_beside_a_text_file_without_front_matter(write) -> None:
    text = write("notes.txt", "Plain notes about the crane.\n")
    write("notes.txt.meta.yaml", "sensitivity: INTERNAL\ntopic: cranes\n")
    doc = read_document(text)
    assert (doc.text, doc.body_offset, doc.sensitivity, dict(doc.metadata)) == (
        "Plain notes about the crane.\n", 0, "INTERNAL", {"topic": "cranes"})


@pytest.mark.parametrize("sidecar, needle", [
    ("sensitivity: [RESTRICTED]\n", "sensitivity must be one label"),
    ("sensitivity: null\n", "sensitivity is null"),
    ("sensitivity:\n", "sensitivity is null"),
    ("sensitivity: RESTRICTED\nsensitivity: PUBLIC\n", "sidecar sets 'sensitivity' twice (line 2)"),
    ("1: a\n'1': b\n", "sidecar keys 1 and '1' are both '1'"),
    ("tags: [a, b]\n", "tags"),
    ("- a\n- b\n", "sidecar must be a mapping"),
    ("title: [unclosed\n", "sidecar is not valid YAML"),
    ("chunker: nosuch\n", "chunker"),
])
def test_every_front_matter_rule_applies_to_a_sidecar(write, sidecar, needle) -> None:
    pdf = write("report.pdf", report_pdf())
    write("report.pdf.meta.yaml", sidecar)
    with pytest.raises(IngestError) as info:
        read_document(pdf)
    message = str(info.value)
    assert message.startswith(f"{pdf}.meta.yaml: ") and needle in message and "\n" not in message, message


def test_a_lookalike_label_in_a_sidecar_is_restricted(write) -> None:
    pdf = write("report.pdf", report_pdf())
    write("report.pdf.meta.yaml", "sensitivity: \"RESTRICTED\u200b\"\n")
    assert read_document(pdf).sensitivity == "RESTRICTED"


def test_front_matter_and_a_sidecar_together_are_an_error(write) -> None:
    md = write("a.md", "---\nsensitivity: PUBLIC\n---\nBody.\n")
    write("a.md.meta.yaml", "sensitivity: RESTRICTED\n")
    with pytest.raises(IngestError, match=r"a\.md: has front matter and a sidecar \(a\.md\.meta\.yaml\); keep one"):
        read_document(md)


def test_a_sidecar_is_never_a_document_and_an_orphan_fails_closed(write, tmp_path) -> None:
    write("docs/report.pdf", report_pdf())
    write("docs/report.pdf.meta.yaml", "sensitivity: RESTRICTED\n")
    assert [p.name for p, _ in collect_files([tmp_path / "docs"])] == ["report.pdf"]
    with pytest.raises(IngestError, match="a sidecar .*not a document"):
        collect_files([tmp_path / "docs" / "report.pdf.meta.yaml"])
    write("docs/Report2.pdf", report_pdf())
    write("docs/report2.pdf.meta.yaml", "sensitivity: RESTRICTED\n")  # its file is Report2.pdf: it would be read open
    write("docs/report.pdf.meta.yml", "sensitivity: RESTRICTED\n")
    problems: list[str] = []
    files = collect_files([tmp_path / "docs"], problems)
    assert sorted(p.name for p, _ in files) == ["Report2.pdf", "report.pdf"]
    assert any("report2.pdf.meta.yaml: a sidecar without its document (report2.pdf" in p for p in problems), problems
    assert any("report.pdf.meta.yml: a sidecar is named report.pdf.meta.yaml exactly" in p for p in problems), problems
    with pytest.raises(IngestError, match="sidecar"):
        collect_files([tmp_path / "docs"])


def test_ingest_keeps_a_restricted_pdf_out_of_answers(write, tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("RAGSPINE_EMBEDDING", "none")
    write("docs/report.pdf", report_pdf())
    write("docs/report.pdf.meta.yaml", "sensitivity: RESTRICTED\n")
    write("docs/open.md", "The xylophone retrofit is public knowledge.\n")
    db = str(tmp_path / "s.db")
    assert cli.main(["--db", db, "ingest", str(tmp_path / "docs"), "--library", "l"]) == 0
    capsys.readouterr()
    assert cli.main(["--db", db, "query", "xylophone retrofit", "--json"]) == 0
    assert [s["doc_id"] for s in json.loads(capsys.readouterr().out)] == ["open.md"]
