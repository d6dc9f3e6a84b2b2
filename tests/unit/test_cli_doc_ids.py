"""Default document ids never silently overwrite another file's document.

``ragspine ingest`` names a document by its path below the directory given, so two folders
that each hold a ``copyright.txt`` give two files one ``doc_id``. In one run the clash was
already refused; in two runs the second silently replaced the first. Now the second run is
refused naming both paths and the fix, while re-ingesting the *same* file (however its path
is spelled) is still a versioned replace of its own document.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ragspine import cli
from ragspine.stores.sqlite import SQLiteDatabase


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path]:
    a, b = tmp_path / "pkg-a", tmp_path / "pkg-b"
    for folder, text in ((a, "Copyright 2024 Alpha Ltd. MIT licence."), (b, "Copyright 2019 Beta GmbH. GPL-3.0.")):
        folder.mkdir()
        (folder / "copyright.txt").write_text(text + "\n", encoding="utf-8")
        (folder / f"readme-{folder.name}.md").write_text(f"# {folder.name}\n\nAbout {folder.name}.\n", encoding="utf-8")
    return a, b


def ingest(capsys, db: Path, *args: str) -> tuple[int, str]:
    code = cli.main(["--db", str(db), "--mode", "economy", "ingest", *args, "--library", "kb"])
    return code, capsys.readouterr().err


def active(db: Path) -> dict[str, tuple[int, str, str]]:
    """``{doc_id: (version, text, source_locator)}`` of the active documents."""
    database = SQLiteDatabase(db)
    try:
        return {c.doc_id: (c.version, c.text, c.source_locator) for c in database.chunk_store("kb").iter_chunks()}
    finally:
        database.close()


def test_a_second_folders_file_of_the_same_default_id_is_refused(capsys, tmp_path, folders) -> None:
    a, b = folders
    db = tmp_path / "kb.db"
    assert ingest(capsys, db, str(a))[0] == 0
    code, err = ingest(capsys, db, str(b))
    line = err.strip()
    assert code == 2 and len(line.splitlines()) == 1, err  # before: exit 0, Alpha's notice replaced by Beta's
    assert line.startswith(f"ragspine: error: {b / 'copyright.txt'}: doc_id 'copyright.txt'"), line
    assert str(a / "copyright.txt") in line and "front matter" in line and "--replace-source" in line, line
    docs = active(db)
    assert docs["copyright.txt"][:2] == (1, "Copyright 2024 Alpha Ltd. MIT licence.")
    assert "readme-pkg-b.md" not in docs  # all or nothing: the run wrote none of its files


def test_skip_bad_ingests_the_other_files_and_names_the_clash(capsys, tmp_path, folders) -> None:
    a, b = folders
    db = tmp_path / "kb.db"
    ingest(capsys, db, str(a))
    code, err = ingest(capsys, db, str(b), "--skip-bad")
    assert code == 0 and f"ragspine: skipped: {b / 'copyright.txt'}: doc_id 'copyright.txt'" in err, err
    docs = active(db)
    assert docs["copyright.txt"][1].startswith("Copyright 2024 Alpha") and docs["readme-pkg-b.md"][0] == 1


def test_the_same_file_still_replaces_its_own_document(capsys, tmp_path, folders, monkeypatch) -> None:
    a, _ = folders
    db = tmp_path / "kb.db"
    monkeypatch.chdir(tmp_path)
    assert ingest(capsys, db, "pkg-a")[0] == 0  # recorded as the relative path pkg-a/copyright.txt
    (a / "copyright.txt").write_text("Copyright 2025 Alpha Ltd. MIT licence.\n", encoding="utf-8")
    assert ingest(capsys, db, "pkg-a")[0] == 0
    assert active(db)["copyright.txt"][:2] == (2, "Copyright 2025 Alpha Ltd. MIT licence.")
    (a / "copyright.txt").write_text("Copyright 2026 Alpha Ltd. MIT licence.\n", encoding="utf-8")
    assert ingest(capsys, db, str(a))[0] == 0  # the same file spelled absolute: still its own document
    assert ingest(capsys, db, "./pkg-a/../pkg-a/copyright.txt")[0] == 0  # a named file: doc_id is its name
    assert active(db)["copyright.txt"][:2] == (4, "Copyright 2026 Alpha Ltd. MIT licence.")


def test_replace_source_or_an_explicit_doc_id_says_which_document_it_is(capsys, tmp_path, folders) -> None:
    a, b = folders
    db = tmp_path / "kb.db"
    ingest(capsys, db, str(a))
    assert ingest(capsys, db, str(b), "--replace-source")[0] == 0  # a moved file, or a deliberate replace
    version, text, locator = active(db)["copyright.txt"]
    assert (version, text) == (2, "Copyright 2019 Beta GmbH. GPL-3.0.") and locator.startswith(str(b / "copyright.txt"))
    (a / "copyright.txt").write_text("---\ndoc_id: alpha/copyright\n---\nCopyright 2024 Alpha Ltd.\n", encoding="utf-8")
    (b / "copyright.txt").write_text("---\ndoc_id: copyright.txt\n---\nCopyright 2020 Beta GmbH.\n", encoding="utf-8")
    assert ingest(capsys, db, str(a))[0] == 0  # its own id now
    assert ingest(capsys, db, str(b))[0] == 0  # an id in front matter is the user's word: a versioned replace
    docs = active(db)
    assert docs["alpha/copyright"][1] == "Copyright 2024 Alpha Ltd." and docs["copyright.txt"][:2] == (3, "Copyright 2020 Beta GmbH.")


def test_one_run_with_both_folders_is_refused_naming_the_fix(capsys, tmp_path, folders) -> None:
    a, b = folders
    code, err = ingest(capsys, tmp_path / "kb.db", str(a), str(b))
    assert code == 2 and "doc_id 'copyright.txt' is also used by" in err and "front matter" in err, err
