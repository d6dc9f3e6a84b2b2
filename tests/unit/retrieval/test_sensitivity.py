"""Sensitivity fails closed on every ingest path: a non-string label is an error, a key that
differs from a document field only in case is that field, labels compare stripped and
case-insensitively, RESTRICTED in any spelling is stored as RESTRICTED and never served."""

from __future__ import annotations

import pytest

from ragspine.cli import main
from ragspine.errors import IngestError
from ragspine.retrieval.link.narrative_link import build_narrative_retriever
from ragspine.retrieval.sensitivity import parse_sensitivity, reserved_key, split_document_fields
from ragspine.stores.sqlite import SQLiteChunkStore


@pytest.mark.parametrize("value", [" restricted ", "Restricted", "RESTRICTED", "\tREStricted\n"])
def test_every_spelling_of_restricted_is_restricted(value):
    assert parse_sensitivity(value) == "RESTRICTED"


@pytest.mark.parametrize("value", [["RESTRICTED"], ("RESTRICTED",), {"level": "RESTRICTED"}, 3, True, "", "  ", "a\nb"])
def test_anything_but_one_label_is_an_error(value):
    with pytest.raises(IngestError, match="sensitivity"):
        parse_sensitivity(value, "doc.md")


def test_labels_keep_their_text_and_none_is_the_default():
    assert parse_sensitivity(" PUBLIC ") == "PUBLIC" and parse_sensitivity(None) == "INTERNAL"


def test_document_fields_in_any_case():
    assert [reserved_key(k) for k in ("Sensitivity", " SENSITIVITY ", "Doc_ID", "topic", 3)] == [
        "sensitivity", "sensitivity", "doc_id", None, None]
    fields, meta = split_document_fields({"Sensitivity": "RESTRICTED", "Title": "T", "topic": "x"}, "a.md")
    assert fields == {"sensitivity": "RESTRICTED", "title": "T"} and meta == {"topic": "x"}
    with pytest.raises(IngestError, match="both set sensitivity"):
        split_document_fields({"sensitivity": "PUBLIC", "Sensitivity": "RESTRICTED"}, "a.md")


@pytest.mark.parametrize(
    "front, served",
    [
        ("sensitivity: RESTRICTED", False),
        ("Sensitivity: RESTRICTED", False),  # once became ordinary metadata: served
        ("SENSITIVITY: ' restricted '", False),
        ("sensitivity: PUBLIC", True),
    ],
)
def test_cli_ingest_reads_the_label_fail_closed(tmp_path, capsys, front, served):
    (tmp_path / "memo.md").write_text(f"---\n{front}\n---\nZanzibar merger codename board memo.\n", encoding="utf-8")
    db = str(tmp_path / "s.db")
    assert main(["--db", db, "--mode", "economy", "ingest", str(tmp_path / "memo.md"), "--library", "l"]) == 0
    capsys.readouterr()
    assert main(["--db", db, "--mode", "economy", "query", "zanzibar merger", "--json"]) == 0
    out = capsys.readouterr().out
    assert ("Zanzibar" in out) is served
    store = SQLiteChunkStore(db, library_id="l")
    (chunk,) = store.iter_chunks()
    assert chunk.sensitivity == ("PUBLIC" if served else "RESTRICTED") and "Sensitivity" not in chunk.metadata
    store.close()


@pytest.mark.parametrize("front", ["sensitivity: [RESTRICTED]", "sensitivity:\n  - RESTRICTED", "sensitivity: 1",
                                   "sensitivity: RESTRICTED\nSensitivity: PUBLIC"])
def test_cli_refuses_a_label_that_is_not_one_string(tmp_path, capsys, front):
    (tmp_path / "memo.md").write_text(f"---\n{front}\n---\nboard memo\n", encoding="utf-8")
    db = str(tmp_path / "s.db")
    assert main(["--db", db, "ingest", str(tmp_path / "memo.md"), "--library", "l"]) == 2
    err = capsys.readouterr().err
    assert "sensitivity" in err.lower() and len(err.strip().splitlines()) == 1
    assert main(["--db", db, "libraries"]) == 0 and "no libraries yet" in capsys.readouterr().out  # nothing written


def test_cli_meta_cannot_smuggle_a_document_field(tmp_path, capsys):
    (tmp_path / "a.md").write_text("text\n", encoding="utf-8")
    assert main(["--db", str(tmp_path / "s.db"), "ingest", str(tmp_path / "a.md"), "--library", "l", "--meta", "Sensitivity=PUBLIC"]) == 2
    assert "--sensitivity" in capsys.readouterr().err


def test_python_api_refuses_what_would_fail_open(tmp_path):
    retriever, store = build_narrative_retriever(str(tmp_path / "p.db"))
    index = retriever.index
    with pytest.raises(IngestError, match="sensitivity"):
        index.ingest_text("d", "board memo", sensitivity=["RESTRICTED"])  # type: ignore[arg-type]
    with pytest.raises(IngestError, match="Sensitivity"):
        index.ingest_text("d", "board memo", metadata={"Sensitivity": "RESTRICTED"})
    index.ingest_text("d", "board memo", sensitivity=" restricted ")
    assert retriever.retrieve("board memo") == []  # stripped, case-insensitive: withheld
    (chunk,) = store.iter_chunks()
    assert chunk.doc_id == "d" and chunk.sensitivity.strip().upper() == "RESTRICTED"
    store.close()
