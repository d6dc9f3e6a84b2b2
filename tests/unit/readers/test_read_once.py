"""``ragspine ingest`` extracts each file once: the check pass's reading is what the write pass writes."""

from __future__ import annotations

import json
import os

import pytest

from ragspine import cli
from ragspine.documents import chunk_source, read_document
from ragspine.read_spool import ReadSpool
from tests.helpers import needs
from tests.unit.readers.conftest import docx_bytes, report_pdf, xlsx_bytes

needs("pypdfium2", "docx", "openpyxl")


@pytest.fixture
def docs(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGSPINE_EMBEDDING", "none")
    monkeypatch.setenv("RAGSPINE_CHUNK_CHARS", "100")
    monkeypatch.setenv("RAGSPINE_OVERLAP_CHARS", "20")
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "report.pdf").write_bytes(report_pdf())
    (folder / "handbook.docx").write_bytes(docx_bytes())
    (folder / "plants.xlsx").write_bytes(xlsx_bytes())
    (folder / "notes.md").write_text("# Notes\n\nThe quarry reopens in spring.\n", encoding="utf-8")
    return folder


@pytest.fixture
def reads(monkeypatch):
    """How many times each file's bytes went through a reader."""
    import ragspine.readers.registry as registry

    counts: dict[str, int] = {}
    real = registry.read_bytes

    def counting(data, where, limits=None):
        counts[os.path.basename(where)] = counts.get(os.path.basename(where), 0) + 1
        return real(data, where, limits)

    monkeypatch.setattr(registry, "read_bytes", counting)
    return counts


def test_each_extracted_file_is_read_once_and_written_as_checked(docs, reads, tmp_path, capsys) -> None:
    db = str(tmp_path / "a.db")
    assert cli.main(["--db", db, "ingest", str(docs), "--library", "lib"]) == 0, capsys.readouterr().err
    assert "ingested 4 document(s)" in capsys.readouterr().out
    # PDF, Word and Excel: one extraction each; a text file is read again (as cheap as the spool)
    assert reads == {"report.pdf": 1, "handbook.docx": 1, "plants.xlsx": 1, "notes.md": 2}
    out = json.loads(_query(db, capsys, "xylophone retrofit scrap"))
    assert out and out[0]["doc_id"] == "report.pdf"
    # the chunks written are the chunks of a fresh reading (the spool changes nothing)
    from ragspine.config import load_settings
    from ragspine.stack import Stack

    with Stack(load_settings({**os.environ, "RAGSPINE_CHUNK_STORE": db})) as stack:
        chunker, store = stack.pipeline("lib").chunker, stack.db.chunk_store("lib")
        for name in ("report.pdf", "handbook.docx", "plants.xlsx"):
            expected = chunk_source(read_document(docs / name, docs), chunker)
            stored = sorted(store.iter_chunks(doc_id=name), key=lambda c: c.char_start)
            assert [(c.chunk_id, c.text, c.source_locator, dict(c.metadata)) for c in stored] == \
                [(c.chunk_id, c.text, c.source_locator, dict(c.metadata)) for c in expected]


def _query(db: str, capsys, text: str) -> str:
    assert cli.main(["--db", db, "query", text, "--library", "lib", "--json"]) == 0
    return capsys.readouterr().out


def test_a_file_changed_between_the_passes_is_written_as_checked(docs, tmp_path, monkeypatch, capsys) -> None:
    """The check pass validated the PDF; the PDF then breaks before the write pass (right after
    the check's verdict): the run writes the reading it checked — a second reading would fail
    halfway through the run."""
    import ragspine.cli.ingest as ingest

    real = ingest._refuse_or_skip

    def then_break(problems, skip_bad):
        real(problems, skip_bad)
        (docs / "report.pdf").write_bytes(b"%PDF-1.4 broken now")

    monkeypatch.setattr(ingest, "_refuse_or_skip", then_break)
    db = str(tmp_path / "b.db")
    assert cli.main(["--db", db, "ingest", str(docs), "--library", "lib"]) == 0, capsys.readouterr().err
    assert "ingested 4 document(s)" in capsys.readouterr().out
    assert json.loads(_query(db, capsys, "xylophone retrofit scrap"))[0]["doc_id"] == "report.pdf"


def test_the_spool_leaves_nothing_behind(docs, tmp_path, monkeypatch, capsys) -> None:
    made: list[ReadSpool] = []
    real_init = ReadSpool.__init__

    def remember(self):
        real_init(self)
        made.append(self)

    monkeypatch.setattr(ReadSpool, "__init__", remember)
    (docs / "bad.pdf").write_bytes(b"%PDF-1.4 not a pdf")
    db = str(tmp_path / "c.db")
    assert cli.main(["--db", db, "ingest", str(docs), "--library", "lib"]) != 0  # refused: nothing written
    assert "bad.pdf" in capsys.readouterr().err
    (spool,) = made
    assert spool._dir is None and len(spool) == 0


def test_spool_round_trip_keeps_every_field(docs, tmp_path) -> None:
    doc = read_document(docs / "report.pdf", docs)
    with ReadSpool() as spool:
        assert spool.put("k", doc)
        assert not spool.put("t", read_document(docs / "notes.md", docs))  # text: read again instead
        folder = spool._dir
        back = spool.take("k")
        assert spool.take("k") is None and spool.take("t") is None
    assert back == doc and back.structure == doc.structure
    assert folder is not None and not folder.exists()
