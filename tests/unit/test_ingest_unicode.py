"""What no store can keep — a NUL, a lone surrogate — is refused the same way on every ingest
path: the Python API (``ingest_text``, ``replace_doc_chunks``, ``ingest_many``), ``ragspine
ingest`` (naming the file), HTTP uploads (JSON, batch, file): one ``IngestError`` naming the
document and the field or metadata key. Each store's side is the conformance pack's
``ChunkStoreUnicodeTests`` / ``VectorStoreUnicodeTests``."""

from __future__ import annotations

import json
import os
import sys

import pytest

from ragspine import cli
from ragspine.errors import IngestError
from ragspine.retrieval.chunking.chunk_store import DocumentChunks
from ragspine.retrieval.pipeline import LibraryPipeline
from ragspine.retrieval.storable import check_document, unstorable
from ragspine.stores.sqlite import SQLiteDatabase
from ragspine.testing.chunk_store import ODD_BUT_VALID, UNSTORABLE, doc
from tests.helpers import needs


def test_unstorable_is_nul_or_a_lone_surrogate_and_nothing_else() -> None:
    assert [unstorable(s) for s in ODD_BUT_VALID] == [None] * len(ODD_BUT_VALID)
    assert unstorable("a\x00b") == "a NUL character"
    assert unstorable("x\ud800y") == "a lone surrogate \\ud800"
    assert unstorable("\udcff") == "a lone surrogate \\udcff"
    assert unstorable("🙂" * 10_000 + "\x00") == "a NUL character"


@pytest.mark.parametrize("bad", UNSTORABLE)
def test_the_message_names_the_document_and_the_key(bad: str) -> None:
    cases = [
        ({"metadata": {bad: 1}}, f"metadata key {bad!r}"),
        ({"metadata": {"team": bad}}, "the value of metadata key 'team'"),
        ({"metadata": {"tags": ["ok", bad]}}, "the value of metadata key 'tags'[1]"),
        ({"metadata": {"o": {"k": bad}}}, "the value of metadata key 'o'['k']"),
        ({"title": bad}, "title"),
        ({"text": f"body {bad}"}, "text"),
        ({"valid_as_of": bad}, "valid_as_of"),
    ]
    for fields, what in cases:
        with pytest.raises(IngestError) as raised:
            check_document("report-7", **fields)
        message = str(raised.value)
        assert message.startswith(f"document 'report-7': {what} holds ") and "\n" not in message, message
        assert "remove it" in message  # the fix


@pytest.fixture
def pipeline(tmp_path):
    db = SQLiteDatabase(tmp_path / "api.db")
    db.init_schema()
    yield LibraryPipeline(db.chunk_store("lib"), mode="economy")
    db.close()


@pytest.mark.parametrize("bad", ["a\ud800", "a\x00b"])
def test_every_python_ingest_path_refuses_with_one_message(pipeline, bad: str) -> None:
    """Before: ``UnicodeEncodeError`` from sqlite3 for a lone surrogate, and a NUL stored by
    SQLite (PostgreSQL refused it)."""
    pipeline.ingest_text("d", "first version", metadata={"team": "ops"})
    with pytest.raises(IngestError) as first:
        pipeline.ingest_text("d", "Employees get 25 vacation days.", metadata={"team": bad})
    message = str(first.value)
    assert message == str(pytest.raises(IngestError, check_document, "d", metadata={"team": bad}).value)
    assert message.startswith("document 'd': the value of metadata key 'team' holds ")
    chunks = doc("d", "Employees get 25 vacation days.", metadata={"team": bad})
    for write in (lambda: pipeline.replace_doc_chunks("d", chunks),
                  lambda: pipeline.replace_docs([DocumentChunks("e", doc("e", "fine")), DocumentChunks("d", chunks)]),
                  lambda: pipeline.ingest_many([DocumentChunks("d", chunks)]),
                  lambda: pipeline.store.replace_doc_chunks("d", chunks)):
        with pytest.raises(IngestError) as raised:
            write()
        assert str(raised.value) == message
    assert [(c.text, dict(c.metadata)) for c in pipeline.store.iter_chunks()] == [("first version", {"team": "ops"})]


# -- ragspine ingest -----------------------------------------------------------------------------
def ingest(capsys, db: str, *paths: str, extra: tuple[str, ...] = ()) -> tuple[int, str]:
    code = cli.main(["--db", db, "--mode", "economy", "ingest", *paths, "--library", "kb", *extra])
    return code, capsys.readouterr().err


@pytest.mark.parametrize(("front", "what"), [
    ('team: "ops\\ud800"', "the value of metadata key 'team'"),
    ('"te\\uDC80am": ops', "metadata key 'te\\udc80am'"),
    ('team: "a\\0b"', "the value of metadata key 'team'"),
    ('title: "Q3\\0"', "title"),
    ('doc_id: "q3\\ud800"', "the document id"),
])
def test_the_cli_names_the_file_and_the_key(capsys, tmp_path, front: str, what: str) -> None:
    """Before: a lone surrogate (a YAML escape) crashed the write with ``UnicodeEncodeError``
    naming neither the file nor the key; a NUL was stored on SQLite."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "good.md").write_text("Trains are preferred.\n", encoding="utf-8")
    bad = docs / "q3.md"
    bad.write_text(f"---\n{front}\n---\nRevenue fell.\n", encoding="utf-8")
    db = str(tmp_path / "cli.db")
    code, err = ingest(capsys, db, str(docs))
    line = err.strip()
    assert code == 2 and len(line.splitlines()) == 1, err
    assert line.startswith(f"ragspine: error: {bad}: document ") and f": {what} holds " in line, line
    assert "remove it" in line
    assert not os.path.exists(db) or SQLiteDatabase(db).list_libraries() == []  # nothing written


def test_meta_from_the_command_line_is_checked_too(capsys, tmp_path) -> None:
    (tmp_path / "a.md").write_text("Trains are preferred.\n", encoding="utf-8")
    code, err = ingest(capsys, str(tmp_path / "cli.db"), str(tmp_path / "a.md"), extra=("--meta", "team=ops\udcff"))
    assert code == 2 and "the value of metadata key 'team' holds a lone surrogate" in err and "a.md" in err, err


@pytest.mark.skipif(sys.platform in ("darwin", "win32"), reason="needs a file system that takes any bytes in a name")
def test_a_file_name_that_is_not_utf8_is_named_and_refused(capsys, tmp_path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    name = os.fsdecode(b"caf\xe9.md")  # Latin-1: kept by Python as a lone surrogate
    (docs / name).write_text("Coffee is free.\n", encoding="utf-8")
    code, err = ingest(capsys, str(tmp_path / "cli.db"), str(docs))
    assert code == 2 and "caf\\udce9.md: the path is not valid UTF-8" in err and "rename the file" in err, err


# -- HTTP ------------------------------------------------------------------------------------------
def test_http_uploads_answer_the_python_message(tmp_path) -> None:
    """Before: the HTTP check had its own wording (and the schema's own for a NUL in the text).
    A lone surrogate in a plain string field (doc_id, title, text) never gets this far: the
    request schema refuses it as not a valid string (422)."""
    needs("fastapi")
    from fastapi.testclient import TestClient

    from ragspine.service.app import create_app
    from tests.unit.service.conftest import make_settings, new_library, new_tenant

    with TestClient(create_app(make_settings(tmp_path))) as client:
        headers = new_tenant(client)
        new_library(client, headers, "hb")
        json_headers = {**headers, "Content-Type": "application/json"}
        for field, value, what in [("metadata", {"te\ud800am": 1}, "metadata key 'te\\ud800am'"),
                                   ("metadata", {"team": "a\x00b"}, "the value of metadata key 'team'"),
                                   ("title", "Q3\x00", "title"), ("text", "body \x00", "text")]:
            body = {"doc_id": "d", "title": "T", "text": "body", field: value}
            expected = str(pytest.raises(IngestError, check_document, **body).value)
            assert f": {what} holds " in expected
            raw = json.dumps(body).encode()  # "\ud800" travels as JSON's escape
            r = client.post("/v1/libraries/hb/documents", content=raw, headers=json_headers)
            assert (r.status_code, r.json()["message"]) == (422, expected), r.text
            r = client.post("/v1/libraries/hb/documents/batch", content=json.dumps({"documents": [body]}).encode(), headers=json_headers)
            assert (r.status_code, r.json()["message"]) == (422, expected), r.text
        files = {"file": ("q3.md", '---\nteam: "ops\\ud800"\n---\nRevenue fell.\n'.encode(), "text/markdown")}
        r = client.post("/v1/libraries/hb/documents/upload", files=files, headers=headers)
        expected = str(pytest.raises(IngestError, check_document, "q3.md", metadata={"team": "ops\ud800"}).value)
        assert (r.status_code, r.json()["message"]) == (422, expected), r.text
        assert client.get("/v1/jobs", headers=headers).json() == []
