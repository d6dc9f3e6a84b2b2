"""``ragspine principals``: a tenant's users and groups from the command line, on the embedded
default (the service tables in the chunk store's SQLite file) and on PostgreSQL — the same
tables the admin API writes."""

from __future__ import annotations

import json

import pytest

from tests.helpers import needs

needs("sqlalchemy")

from ragspine.cli import main
from ragspine.security.principals import Principal


@pytest.fixture(params=["sqlite", "postgres"])
def target(request, tmp_path, monkeypatch):
    """``(global CLI options, a ServiceStore on the same database)`` with a tenant ``acme``."""
    from ragspine.service.store import ServiceStore, sqlite_engine

    if request.param == "sqlite":
        path = str(tmp_path / "chunks.db")
        monkeypatch.setenv("RAGSPINE_CHUNK_STORE", str(tmp_path / "elsewhere.db"))  # --db wins
        options = ["--db", path]
        main(["libraries", *options])  # the chunk store file exists as the CLI makes it
        store = ServiceStore(sqlite_engine(path), create=True)
    else:
        from ragspine.stores.postgres import PostgresDatabase

        url, schema = request.getfixturevalue("pg_schema")
        monkeypatch.setenv("RAGSPINE_CHUNK_STORE", url)
        monkeypatch.setenv("RAGSPINE_PG_SCHEMA", schema)
        options = []
        db = PostgresDatabase(url, schema=schema)
        request.addfinalizer(db.close)
        store = ServiceStore(db.engine)
    store.create_tenant("acme", "ACME")
    yield options, store
    store.close()


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_add_list_and_remove(target, capsys) -> None:
    options, store = target
    t = ["--tenant", "acme", *options]
    assert _run(capsys, "principals", "add-user", "Alice", *t)[:2] == (0, "added user 'Alice' to tenant 'acme' (key 'alice')\n")
    assert _run(capsys, "principals", "add-user", "bob", *t)[0] == 0
    assert _run(capsys, "principals", "add-group", "HR", *t)[0] == 0
    assert _run(capsys, "principals", "add-member", "ｈｒ", "ALICE", *t)[:2] == (0, "'Alice' is now in group 'HR'\n")
    assert _run(capsys, "principals", "add-member", "hr", "alice", *t)[1] == "'Alice' was already in group 'HR'\n"
    assert store.principal_for("acme", "alice") == Principal.of("alice", ["hr"])  # what the service reads
    code, out, _ = _run(capsys, "principals", "list", "--json", *t)
    assert code == 0 and json.loads(out) == {"users": [{"name": "Alice", "groups": ["HR"]}, {"name": "bob", "groups": []}],
                                             "groups": [{"name": "HR", "members": 1}]}
    code, out, _ = _run(capsys, "principals", "list", *t)
    assert out.splitlines() == ["users of tenant 'acme': 2", "  Alice  groups: HR", "  bob  (no group)", "groups: 1", "  HR  1 member(s)"]
    assert _run(capsys, "principals", "remove-member", "HR", "alice", *t)[:2] == (0, "'Alice' is no longer in group 'HR'\n")
    assert store.principal_for("acme", "alice") == Principal("alice", frozenset())
    store.add_member("acme", "hr", "alice")
    assert _run(capsys, "principals", "remove-group", "hr", *t)[0] == 0
    assert store.principal_for("acme", "alice") == Principal("alice", frozenset())
    assert _run(capsys, "principals", "remove-user", "ALICE", *t)[:2] == (0, "removed user 'Alice' from tenant 'acme' with its memberships\n")
    assert [u.name for u in store.list_principals("acme", "user")] == ["bob"]


def test_refusals_are_one_line_and_exit_2(target, capsys) -> None:
    options, store = target
    t = ["--tenant", "acme", *options]
    _run(capsys, "principals", "add-user", "ace", *t)
    cases = {
        ("add-user", "ACE"): "user 'ace' exists already in tenant 'acme'",
        ("add-user", "асе"): "user 'асе' looks like the existing user 'ace' of tenant 'acme': choose a name that cannot be mistaken for it",
        ("add-user", "a\u200bb"): "user name 'a\\u200bb' holds 'ZERO WIDTH SPACE': use letters, digits and . _ - @ +",
        ("remove-user", "carol"): "user 'carol' of tenant 'acme' not found",
        ("add-member", "hr", "ace"): "group 'hr' of tenant 'acme' not found",
        ("remove-member", "hr", "ace"): "group 'hr' of tenant 'acme' not found",
    }
    for argv, message in cases.items():
        code, out, err = _run(capsys, "principals", *argv, *t)
        assert (code, out, err) == (2, "", f"ragspine: error: {message}\n"), argv
    code, _, err = _run(capsys, "principals", "list", "--tenant", "nobody", *options)
    assert code == 2 and err == "ragspine: error: tenant 'nobody' not found (create it with POST /v1/admin/tenants)\n"
    _run(capsys, "principals", "add-group", "hr", *t)
    assert _run(capsys, "principals", "remove-member", "hr", "ace", *t)[2] == "ragspine: error: user 'ace' is not in group 'hr'\n"
    assert [u.name for u in store.list_principals("acme", "user")] == ["ace"]


def test_tenant_is_required(capsys) -> None:
    with pytest.raises(SystemExit) as info:
        main(["principals", "add-user", "alice"])
    assert info.value.code == 2 and "--tenant" in capsys.readouterr().err
