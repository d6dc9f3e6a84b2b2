"""Sensitivity fails closed on every ingest path: a non-string or null label is an error, a key
that differs from a document field only in case or lookalike letters is that field, a key
written twice is an error, and a label that looks like RESTRICTED (any case, invisible
characters, full-width or confusable letters: ``ragspine.testing.lookalikes``) is stored as
RESTRICTED and never served."""

from __future__ import annotations

import json

import pytest

from ragspine.cli import main
from ragspine.errors import IngestError
from ragspine.retrieval.link.narrative_link import build_narrative_retriever
from ragspine.retrieval.sensitivity import is_restricted, parse_sensitivity, reserved_key, split_document_fields
from ragspine.stores.sqlite import SQLiteChunkStore
from ragspine.testing.lookalikes import OPEN_LABELS, RESTRICTED_LOOKALIKES


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


# -- issue 25: labels that look like RESTRICTED are RESTRICTED, on every path ----------------------
LOOKALIKES = pytest.mark.parametrize("label", list(RESTRICTED_LOOKALIKES.values()), ids=list(RESTRICTED_LOOKALIKES))


@LOOKALIKES
def test_a_lookalike_label_is_restricted_and_stored_as_restricted(label):
    assert is_restricted(label) and parse_sensitivity(label, "memo.md") == "RESTRICTED"


def test_a_long_lookalike_is_restricted_not_refused_and_never_open():
    padded = "\u200b" * 300 + "RESTRICTED"  # over the 64-character limit only because of what folding removes
    assert is_restricted(padded) and parse_sensitivity(padded) == "RESTRICTED"


@pytest.mark.parametrize("label", OPEN_LABELS)
def test_other_labels_stay_open_and_as_written(label):
    assert not is_restricted(label) and parse_sensitivity(f" {label} ") == label


def test_null_is_refused_where_a_key_was_given():
    with pytest.raises(IngestError, match="memo.md: sensitivity is null; give a label"):
        parse_sensitivity(None, "memo.md", default=None)


def test_a_lookalike_key_is_the_field():
    assert [reserved_key(k) for k in ("ｓｅｎｓｉｔｉｖｉｔｙ", "s\u0435nsitivity", "sensi\u200btivity", "tіtle")] == [
        "sensitivity", "sensitivity", "sensitivity", "title"]
    with pytest.raises(IngestError, match="both set sensitivity"):
        split_document_fields({"sensitivity": "RESTRICTED", "ｓｅｎｓｉｔｉｖｉｔｙ": "PUBLIC"}, "a.md")


def _front(label: str) -> str:
    return f"sensitivity: {json.dumps(label, ensure_ascii=False)}"  # a YAML double-quoted scalar, as written


@LOOKALIKES
def test_cli_ingest_withholds_a_lookalike_label(tmp_path, capsys, label):
    test_cli_ingest_reads_the_label_fail_closed(tmp_path, capsys, _front(label), served=False)


@LOOKALIKES
def test_cli_sensitivity_flag_folds_a_lookalike(tmp_path, capsys, label):
    (tmp_path / "memo.md").write_text("Zanzibar merger codename board memo.\n", encoding="utf-8")
    db = str(tmp_path / "s.db")
    assert main(["--db", db, "--mode", "economy", "ingest", str(tmp_path / "memo.md"), "--library", "l", "--sensitivity", label]) == 0
    capsys.readouterr()
    assert main(["--db", db, "--mode", "economy", "query", "zanzibar merger", "--json"]) == 0
    assert "Zanzibar" not in capsys.readouterr().out
    store = SQLiteChunkStore(db, library_id="l")
    assert [c.sensitivity for c in store.iter_chunks()] == ["RESTRICTED"]
    store.close()


@pytest.mark.parametrize("front, words", [
    ("sensitivity: RESTRICTED\nsensitivity: PUBLIC", "sets 'sensitivity' twice (line 3)"),
    ("title: T\nsensitivity: PUBLIC\ntitle: U\nsensitivity: RESTRICTED", "sets 'title' twice (line 4)"),
    ("sensitivity: RESTRICTED\nｓｅｎｓｉｔｉｖｉｔｙ: PUBLIC", "both set sensitivity"),
    ("meta:\n  a: 1\n  a: 2\nsensitivity: RESTRICTED", "sets 'a' twice"),
    ("1: x\n'1': y\nsensitivity: RESTRICTED", "keys 1 and '1' are both '1'"),
    ("sensitivity: null", "sensitivity is null"),
    ("sensitivity:", "sensitivity is null"),
    ("sensitivity: ~", "sensitivity is null"),
])
def test_cli_refuses_duplicate_keys_and_a_null_label(tmp_path, capsys, front, words):
    (tmp_path / "memo.md").write_text(f"---\n{front}\n---\nZanzibar merger codename board memo.\n", encoding="utf-8")
    db = str(tmp_path / "s.db")
    assert main(["--db", db, "ingest", str(tmp_path / "memo.md"), "--library", "l"]) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1, err
    assert main(["--db", db, "libraries"]) == 0 and "no libraries yet" in capsys.readouterr().out  # nothing written


@LOOKALIKES
def test_python_api_withholds_a_lookalike_label(tmp_path, label):
    retriever, store = build_narrative_retriever(str(tmp_path / "p.db"))
    retriever.index.ingest_text("d", "zanzibar merger codename board memo", sensitivity=label)
    retriever.index.ingest_text("o", "zanzibar merger open note")
    assert [s["doc_id"] for s in retriever.retrieve("zanzibar merger codename board memo")] == ["o"]
    assert {c.doc_id: c.sensitivity for c in store.iter_chunks()}["d"] == "RESTRICTED"
    with pytest.raises(IngestError, match="sensitivity is null"):
        retriever.index.ingest_text("n", "zanzibar", sensitivity=None)  # type: ignore[arg-type]
    store.close()
