"""Document ACLs from the command line (issue 29): front matter and sidecar ACLs at ``ragspine
ingest`` (the document's, never metadata; an ACL-only change writes the ACL alone), ``ragspine
acl set|show``, and ``ragspine query --as USER`` — on the embedded default and on PostgreSQL."""

from __future__ import annotations

import json

import pytest

from tests.helpers import needs

needs("sqlalchemy")

from ragspine.cli import main
from ragspine.cli.acl import cli_user
from ragspine.security.principals import ACL, OPEN

HR = "---\ntitle: Leave policy\nallow: [group:hr]\n---\n# Leave policy\nParental leave is sixteen weeks for every employee.\n"
OPEN_DOC = "# Canteen\nThe canteen serves parental leave cake at eight.\n"


@pytest.fixture(params=["sqlite", "postgres"])
def target(request, tmp_path, monkeypatch):
    """``(global CLI options, the chunk database, a ServiceStore on it)``; tenant ``acme`` with
    ``alice`` in group ``hr`` and ``bob`` in none."""
    from ragspine.service.store import ServiceStore, sqlite_engine

    if request.param == "sqlite":
        from ragspine.stores.sqlite.database import SQLiteDatabase

        path = str(tmp_path / "chunks.db")
        monkeypatch.setenv("RAGSPINE_CHUNK_STORE", str(tmp_path / "elsewhere.db"))  # --db wins
        options = ["--db", path, "--mode", "economy"]
        main(["libraries", *options])  # the chunk store file exists as the CLI makes it
        db = SQLiteDatabase(path)
        store = ServiceStore(sqlite_engine(path), create=True)
    else:
        from ragspine.stores.postgres import PostgresDatabase

        url, schema = request.getfixturevalue("pg_schema")
        monkeypatch.setenv("RAGSPINE_CHUNK_STORE", url)
        monkeypatch.setenv("RAGSPINE_PG_SCHEMA", schema)
        options = ["--mode", "economy"]
        db = PostgresDatabase(url, schema=schema)
        store = ServiceStore(db.engine)
    request.addfinalizer(db.close)
    store.create_tenant("acme", "ACME")
    store.add_principal("acme", "user", "alice")
    store.add_principal("acme", "user", "bob")
    store.add_principal("acme", "group", "hr")
    store.add_member("acme", "hr", "alice")
    yield options, db, store
    store.close()


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def _versions(db, library: str = "lib") -> dict[str, set[int]]:
    out: dict[str, set[int]] = {}
    for chunk in db.chunk_store(library).iter_chunks():
        out.setdefault(chunk.doc_id, set()).add(chunk.version)
    return out


def _corpus(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "hr.md").write_text(HR)
    (docs / "open.md").write_text(OPEN_DOC)
    (docs / "notes.txt").write_text("Board notes: the parental leave budget is approved.\n")
    (docs / "notes.txt.meta.yaml").write_text("acl:\n  allow: [group:board]\n  deny: [user:bob]\ntopic: budget\n")
    return docs


def test_front_matter_and_sidecar_acls_land_in_the_store_not_in_metadata(target, tmp_path, capsys) -> None:
    options, db, _ = target
    docs = _corpus(tmp_path)
    code, out, err = _run(capsys, "ingest", str(docs), "--library", "lib", *options)
    assert code == 0, err
    store = db.chunk_store("lib")
    assert store.document_acls()[1] == {"hr.md": ACL(("group:hr",)), "notes.txt": ACL(("group:board",), ("user:bob",))}
    chunks = list(store.iter_chunks())
    assert {c.doc_id for c in chunks} == {"hr.md", "open.md", "notes.txt"}
    for chunk in chunks:  # the ACL is no metadata (nor in the fingerprint)
        assert not {"acl", "allow", "deny"} & {k.lower() for k in chunk.metadata}
    assert dict(next(c for c in chunks if c.doc_id == "notes.txt").metadata) == {"topic": "budget"}
    assert {(h.doc_id, h.changed_by) for h in store.acl_history()} == {("hr.md", "ingest"), ("notes.txt", "ingest")}


def test_an_acl_only_change_writes_the_acl_alone_and_records_it(target, tmp_path, capsys) -> None:
    options, db, _ = target
    docs = _corpus(tmp_path)
    assert _run(capsys, "ingest", str(docs), "--library", "lib", *options)[0] == 0
    before, seq = _versions(db), db.chunk_store("lib").acl_seq()
    code, out, err = _run(capsys, "ingest", str(docs), "--library", "lib", *options)  # nothing changed
    assert code == 0 and "3 unchanged document(s) skipped" in out and "ACL" not in out
    assert db.chunk_store("lib").acl_seq() == seq  # nothing recorded
    (docs / "notes.txt.meta.yaml").write_text("allow: [group:hr]\ntopic: budget\n")  # a sidecar: the text is the same
    (docs / "hr.md").write_text(HR.replace("group:hr", "group:it"))  # the same length: the same offsets, locators
    code, out, err = _run(capsys, "ingest", str(docs), "--library", "lib", *options)
    assert code == 0, err
    assert "ingested 0 document(s)" in out and "3 unchanged document(s) skipped" in out
    assert "the ACL of 2 unchanged document(s) changed (no new version)" in out
    assert _versions(db) == before  # no new version: nothing re-embedded
    store = db.chunk_store("lib")
    assert store.document_acls()[1] == {"hr.md": ACL(("group:it",)), "notes.txt": ACL(("group:hr",))}
    latest = store.acl_history("hr.md")[0]
    assert (latest.before, latest.after, latest.changed_by) == (ACL(("group:hr",)), ACL(("group:it",)), "ingest")
    # a file without ACL fields leaves the stored ACL as it is; `acl: open` takes it away
    (docs / "notes.txt.meta.yaml").write_text("topic: budget\n")
    assert _run(capsys, "ingest", str(docs), "--library", "lib", *options)[0] == 0
    assert store.document_acls()[1]["notes.txt"] == ACL(("group:hr",))
    (docs / "notes.txt.meta.yaml").write_text("acl: open\ntopic: budget\n")
    assert "the ACL of 1 unchanged document(s) changed" in _run(capsys, "ingest", str(docs), "--library", "lib", *options)[1]
    assert "notes.txt" not in store.document_acls()[1] and _versions(db) == before


def test_a_text_change_writes_the_acl_with_the_new_version(target, tmp_path, capsys) -> None:
    options, db, _ = target
    docs = _corpus(tmp_path)
    assert _run(capsys, "ingest", str(docs), "--library", "lib", *options)[0] == 0
    (docs / "hr.md").write_text(HR.replace("group:hr", "group:board").replace("sixteen", "twenty"))
    code, out, _ = _run(capsys, "ingest", str(docs), "--library", "lib", *options)
    assert code == 0 and "ingested 1 document(s)" in out and "ACL of" not in out  # in the replace's own transaction
    assert _versions(db)["hr.md"] == {2}  # the active version
    assert db.chunk_store("lib").document_acls()[1]["hr.md"] == ACL(("group:board",))


def test_a_bad_acl_refuses_the_file_in_one_line_and_writes_nothing(target, tmp_path, capsys) -> None:
    options, db, _ = target
    docs = _corpus(tmp_path)
    assert _run(capsys, "ingest", str(docs), "--library", "lib", *options)[0] == 0
    before, acls = _versions(db), db.chunk_store("lib").document_acls()
    (docs / "hr.md").write_text(HR.replace("group:hr", "hr").replace("sixteen", "twenty"))
    code, out, err = _run(capsys, "ingest", str(docs), "--library", "lib", *options)
    assert code == 2 and out == ""
    assert err == f"ragspine: error: {docs / 'hr.md'}: allow: ACL entry 'hr' must be 'user:<name>' or 'group:<name>'\n"
    assert _versions(db) == before and db.chunk_store("lib").document_acls() == acls
    code, _, err = _run(capsys, "ingest", str(docs / "open.md"), "--library", "new", "--meta", "Allow=group:hr", *options)
    assert code == 2 and err.startswith("ragspine: error: --meta Allow=... is not metadata; set a document's ACL in its front matter")
    assert "new" not in _run(capsys, "libraries", *options)[1]


def test_acl_set_and_show(target, tmp_path, capsys) -> None:
    options, db, _ = target
    _corpus(tmp_path)
    assert _run(capsys, "ingest", str(tmp_path / "docs"), "--library", "lib", *options)[0] == 0
    code, out, err = _run(capsys, "acl", "set", "lib", "open.md", "--allow", "group:HR,user:Alice", "--deny", "user:bob", *options)
    assert (code, err) == (0, "")
    assert out == ("library 'lib' document 'open.md': allow group:hr, user:alice; deny user:bob"
                   " (was: open (no ACL: every principal of the tenant))\n")
    assert _run(capsys, "acl", "set", "lib", "open.md", "--allow", "user:alice,group:hr", "--deny", "user:bob", *options)[1].endswith(
        "(unchanged)\n")
    store = db.chunk_store("lib")
    assert store.document_acls()[1]["open.md"] == ACL(("group:hr", "user:alice"), ("user:bob",))
    assert store.acl_history("open.md")[0].changed_by == cli_user() and cli_user().startswith("cli:")
    code, out, _ = _run(capsys, "acl", "show", "lib", *options)
    assert out.splitlines() == ["library 'lib': 3 document(s) with an ACL (the others: every principal of the tenant)",
                                "  hr.md  allow group:hr", "  notes.txt  allow group:board; deny user:bob",
                                "  open.md  allow group:hr, user:alice; deny user:bob"]
    shown = json.loads(_run(capsys, "acl", "show", "lib", "--json", *options)[1])
    assert shown["documents"]["hr.md"] == {"allow": ["group:hr"], "deny": []} and shown["acl_seq"] == store.acl_seq()
    assert _run(capsys, "acl", "set", "lib", "open.md", "--open", *options)[0] == 0
    one = json.loads(_run(capsys, "acl", "show", "lib", "open.md", "--json", *options)[1])
    assert one["acl"] == {"allow": [], "deny": []}
    assert [(h["before"], h["after"], h["changed_by"]) for h in one["history"]] == [
        ({"allow": ["group:hr", "user:alice"], "deny": ["user:bob"]}, {"allow": [], "deny": []}, cli_user()),
        ({"allow": [], "deny": []}, {"allow": ["group:hr", "user:alice"], "deny": ["user:bob"]}, cli_user())]
    text = _run(capsys, "acl", "show", "lib", "open.md", *options)[1].splitlines()
    assert text[0] == "library 'lib' document 'open.md': open (no ACL: every principal of the tenant)" and text[1] == "changes: 2 (newest first)"
    code, out, err = _run(capsys, "acl", "set", "lib", "later.md", "--allow", "group:hr", *options)  # waits for the document
    assert code == 0 and err == "ragspine: note: library 'lib' document 'later.md' has no active version yet; its ACL waits for it\n"


@pytest.mark.parametrize("argv, message", [
    (["lib", "hr.md"], "say who may read the document: --allow ENTRY,... and/or --deny ENTRY,..."),
    (["lib", "hr.md", "--open", "--allow", "group:hr"], "--open takes the document's ACL away: give it without --allow/--deny"),
    (["lib", "hr.md", "--allow", "hr"], "--allow/--deny: ACL entry 'hr' must be 'user:<name>' or 'group:<name>'"),
    (["lib", "hr.md", "--allow", ","], "--allow/--deny name nobody"),
    (["nope", "hr.md", "--open"], "unknown library 'nope' (see `ragspine libraries`)"),
])
def test_acl_set_refusals_are_one_line_and_exit_2(target, tmp_path, capsys, argv, message) -> None:
    options, db, _ = target
    _corpus(tmp_path)
    assert _run(capsys, "ingest", str(tmp_path / "docs"), "--library", "lib", *options)[0] == 0
    seq = db.chunk_store("lib").acl_seq()
    code, out, err = _run(capsys, "acl", "set", *argv, *options)
    assert (code, out) == (2, "") and err.startswith(f"ragspine: error: {message}") and err.count("\n") == 1
    assert db.chunk_store("lib").acl_seq() == seq


def _doc_ids(out: str) -> list[str]:
    return [s["doc_id"] for s in json.loads(out)]


def test_query_as_a_user_reads_what_its_groups_may(target, tmp_path, capsys) -> None:
    options, db, store = target
    _corpus(tmp_path)
    assert _run(capsys, "ingest", str(tmp_path / "docs"), "--library", "lib", *options)[0] == 0
    q = ["query", "parental leave", "--json", "--top-k", "10", *options]
    code, out, err = _run(capsys, *q)  # as no principal: the documents without an ACL only, and a note
    assert code == 0 and _doc_ids(out) == ["open.md"]
    assert err == ("ragspine: note: documents with an ACL (2 in 'lib') were left out: this search ran as no principal"
                   " (documents without an ACL only); pass --as USER [--tenant T] to search as a user\n")
    code, out, err = _run(capsys, *q, "--as", "Alice")
    assert code == 0 and sorted(_doc_ids(out)) == ["hr.md", "open.md"] and err == ""
    code, out, _ = _run(capsys, *q, "--as", "bob", "--tenant", "acme")
    assert code == 0 and _doc_ids(out) == ["open.md"]
    store.add_principal("acme", "group", "board")
    store.add_member("acme", "board", "alice")  # a membership counts on the next query
    assert sorted(_doc_ids(_run(capsys, *q, "--as", "alice")[1])) == ["hr.md", "notes.txt", "open.md"]
    store.add_member("acme", "board", "bob")  # denied by name, whatever his groups
    assert _doc_ids(_run(capsys, *q, "--as", "bob")[1]) == ["open.md"]
    assert _run(capsys, "acl", "set", "lib", "hr.md", "--open", *options)[0] == 0  # a change counts on the next query
    assert sorted(_doc_ids(_run(capsys, *q)[1])) == ["hr.md", "open.md"]


@pytest.mark.parametrize("extra, message", [
    (["--as", "carol"], "--as: no user 'carol' in tenant 'acme' (see `ragspine principals list --tenant acme`)"),
    (["--as", "alice", "--tenant", "globex"], "--tenant: tenant 'globex' not found"),
    (["--as", "a b"], "--as: user name 'a b' holds 'SPACE'"),
    (["--tenant", "acme"], "--tenant names the tenant of --as USER: give --as too"),
])
def test_query_as_refusals_are_one_line_and_exit_2(target, tmp_path, capsys, extra, message) -> None:
    options, _, _ = target
    _corpus(tmp_path)
    assert _run(capsys, "ingest", str(tmp_path / "docs"), "--library", "lib", *options)[0] == 0
    code, out, err = _run(capsys, "query", "parental leave", *extra, *options)
    assert (code, out) == (2, "") and err.startswith(f"ragspine: error: {message}") and err.count("\n") == 1


def test_query_as_needs_tenant_when_there_are_several(target, tmp_path, capsys) -> None:
    options, _, store = target
    _corpus(tmp_path)
    assert _run(capsys, "ingest", str(tmp_path / "docs"), "--library", "lib", *options)[0] == 0
    store.create_tenant("globex", "Globex")
    code, _, err = _run(capsys, "query", "parental leave", "--as", "alice", *options)
    assert code == 2 and err == "ragspine: error: --as: 2 tenants (acme, globex): name the user's with --tenant T\n"
    assert _run(capsys, "query", "parental leave", "--as", "alice", "--tenant", "acme", *options)[0] == 0


def test_no_note_without_acls(target, tmp_path, capsys) -> None:
    options, _, _ = target
    (tmp_path / "open.md").write_text(OPEN_DOC)
    assert _run(capsys, "ingest", str(tmp_path / "open.md"), "--library", "lib", *options)[0] == 0
    code, out, err = _run(capsys, "query", "canteen", "--json", *options)
    assert code == 0 and _doc_ids(out) == ["open.md"] and err == ""
    assert OPEN.is_open
