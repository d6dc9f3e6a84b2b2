"""The service store's principals — users, groups, memberships, keys bound to a user — on the
embedded default (SQLite) and PostgreSQL (revision ``0015_principals``), the same tests."""

from __future__ import annotations

import sqlite3
import time

import pytest

from tests.helpers import needs

needs("sqlalchemy")

from ragspine.errors import ConfigError
from ragspine.security.principals import Principal
from ragspine.service.auth import new_key
from ragspine.service.store import Conflict, ServiceStore, Unknown, sqlite_engine


@pytest.fixture(params=["sqlite", "postgres"])
def store(request, tmp_path):
    if request.param == "sqlite":
        s = ServiceStore(sqlite_engine(str(tmp_path / "service.db")), create=True)
    else:
        from ragspine.stores.postgres import PostgresDatabase

        url, schema = request.getfixturevalue("pg_schema")
        db = PostgresDatabase(url, schema=schema)
        s = ServiceStore(db.engine)
        request.addfinalizer(db.close)
    s.create_tenant("acme", "ACME")
    s.create_tenant("globex", "Globex")
    yield s
    s.close()


def test_names_are_canonical_and_a_duplicate_in_any_form_is_refused_naming_it(store) -> None:
    alice = store.add_principal("acme", "user", "Alice")
    assert (alice.key, alice.name, alice.look_alike) == ("alice", "Alice", "alice")
    for same in ("alice", "ALICE", "ａｌｉｃｅ"):  # case and width (NFKC) are one name
        with pytest.raises(Conflict, match="user 'Alice' exists already"):
            store.add_principal("acme", "user", same)
    assert store.get_principal("acme", "user", "ＡＬＩＣＥ") == alice
    # another kind, another tenant: a different name
    assert store.add_principal("acme", "group", "alice").key == "alice"
    assert store.add_principal("globex", "user", "alice").key == "alice"
    assert [u.name for u in store.list_principals("acme", "user")] == ["Alice"]


def test_a_look_alike_of_an_existing_name_is_refused_naming_it(store) -> None:
    store.add_principal("acme", "group", "ace")
    with pytest.raises(Conflict, match="group 'асе' looks like the existing group 'ace'"):
        store.add_principal("acme", "group", "асе")  # Cyrillic а, с, е
    store.add_principal("acme", "user", "асе")  # users and groups are apart
    with pytest.raises(Conflict, match="looks like the existing user 'асе'"):
        store.add_principal("acme", "user", "ACE")
    assert [g.name for g in store.list_principals("acme", "group")] == ["ace"]


def test_bad_names_and_unknown_tenants_are_refused(store) -> None:
    for bad in ("", "a b", "a\u200bb", "hr,board", "group:hr", "һr"):  # empty, space, zero-width, separators, mixed scripts
        with pytest.raises(ConfigError):
            store.add_principal("acme", "user", bad)
    with pytest.raises(Unknown, match="tenant 'nobody' not found"):
        store.add_principal("nobody", "user", "alice")
    # 128 characters that fold to 512 (1,536 bytes): past what every index holds, refused as a name
    with pytest.raises(ConfigError, match="folds to more than 1024 bytes"):
        store.add_principal("acme", "user", "\u337f" * 128)
    assert store.add_principal("acme", "group", "\u337f" * 80).key == "株式会社" * 80  # 960 bytes: stored
    assert store.list_principals("acme", "user") == []


def test_memberships_are_read_on_every_call(store) -> None:
    for user in ("alice", "bob"):
        store.add_principal("acme", "user", user)
    for group in ("HR", "Board"):
        store.add_principal("acme", "group", group)
    assert store.principal_for("acme", "alice") == Principal("alice", frozenset())
    assert store.add_member("acme", "hr", "ALICE") is True
    assert store.add_member("acme", "HR", "alice") is False  # already
    store.add_member("acme", "board", "alice")
    store.add_member("acme", "hr", "bob")
    assert store.principal_for("acme", "alice") == Principal.of("alice", ["hr", "board"])
    assert [u.name for u in store.related("acme", "group", "hr")] == ["alice", "bob"]
    assert [g.name for g in store.related("acme", "user", "alice")] == ["Board", "HR"]
    assert store.memberships("acme") == {"alice": ["board", "hr"], "bob": ["hr"]}
    assert store.remove_member("acme", "Board", "alice") is True
    assert store.remove_member("acme", "Board", "alice") is False
    assert store.principal_for("acme", "alice") == Principal.of("alice", ["hr"])
    assert store.principal_for("acme", "carol") is None
    assert store.principal_for("globex", "alice") is None  # another tenant's namesake is no one here
    with pytest.raises(Unknown, match="user 'carol' of tenant 'acme' not found"):
        store.add_member("acme", "hr", "carol")
    with pytest.raises(Unknown, match="group 'legal' of tenant 'acme' not found"):
        store.add_member("acme", "legal", "alice")
    with pytest.raises(Unknown, match="tenant 'nobody' not found"):
        store.add_member("nobody", "hr", "alice")


def test_removing_a_group_removes_its_memberships(store) -> None:
    store.add_principal("acme", "user", "alice")
    store.add_principal("acme", "group", "hr")
    store.add_member("acme", "hr", "alice")
    removed, revoked = store.remove_principal("acme", "group", "HR")
    assert (removed.name, revoked) == ("hr", [])
    assert store.principal_for("acme", "alice") == Principal("alice", frozenset())
    store.add_principal("acme", "group", "hr")  # a new group of that name starts empty
    assert store.related("acme", "group", "hr") == [] and store.memberships("acme") == {}
    with pytest.raises(Unknown):
        store.remove_principal("acme", "group", "legal")


def test_removing_a_user_removes_its_memberships_and_revokes_its_keys(store) -> None:
    store.add_principal("acme", "user", "alice")
    store.add_principal("acme", "group", "hr")
    store.add_member("acme", "hr", "alice")
    _, bound = new_key("acme", principal="alice")
    _, trusted = new_key("acme", trusted_app=True)
    _, plain = new_key("acme")
    for row in (bound, trusted, plain):
        store.add_key(row)
    assert store.get_key(bound.key_id).principal == "alice" and store.get_key(trusted.key_id).trusted_app is True
    removed, revoked = store.remove_principal("acme", "user", "Alice")
    assert removed.key == "alice" and revoked == [bound.key_id]
    now = time.time()
    assert not store.get_key(bound.key_id).active(now)
    assert store.get_key(trusted.key_id).active(now) and store.get_key(plain.key_id).active(now)
    assert store.principal_for("acme", "alice") is None and store.memberships("acme") == {}
    store.add_principal("acme", "user", "alice")  # a namesake starts with no group and no key
    assert store.principal_for("acme", "alice") == Principal("alice", frozenset())
    assert not store.get_key(bound.key_id).active(time.time())


def test_a_key_is_bound_to_a_user_or_trusted_never_both() -> None:
    with pytest.raises(ConfigError, match="not both"):
        new_key("acme", principal="alice", trusted_app=True)
    _, row = new_key("acme")
    assert (row.principal, row.trusted_app) == (None, False)


def test_an_old_sqlite_file_gets_the_tables_and_its_keys_stay_no_principal(tmp_path) -> None:
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.execute(  # ragspine_api_key as revision 0014 left it
        "CREATE TABLE ragspine_api_key (key_id VARCHAR(32) PRIMARY KEY, tenant_id VARCHAR(64) NOT NULL,"
        " prefix VARCHAR(64) NOT NULL, key_hash VARCHAR(64) NOT NULL, label TEXT NOT NULL DEFAULT '',"
        " created_at FLOAT NOT NULL, expires_at FLOAT, revoked_at FLOAT)")
    conn.execute("INSERT INTO ragspine_api_key VALUES ('0123456789ab', 'acme', 'rsk_0123456789ab', 'h', 'old', 1.0, NULL, NULL)")
    conn.commit()
    conn.close()
    store = ServiceStore(sqlite_engine(str(path)), create=True)
    try:
        key = store.get_key("0123456789ab")
        assert (key.label, key.principal, key.trusted_app) == ("old", None, False)
        store.create_tenant("acme", "")
        store.add_principal("acme", "user", "alice")
        assert store.principal_for("acme", "alice") == Principal("alice", frozenset())
        ServiceStore(store.engine, create=True)  # opening it again changes nothing
        assert store.get_key("0123456789ab") == key
    finally:
        store.close()


def test_postgres_0015_down_and_up_keeps_the_keys(pg_schema) -> None:
    from ragspine.stores.postgres import PostgresDatabase
    from ragspine.stores.postgres.migrate import current_revision, downgrade, upgrade

    url, schema = pg_schema
    db = PostgresDatabase(url, schema=schema)
    store = ServiceStore(db.engine)
    try:
        store.create_tenant("acme", "")
        _, row = new_key("acme")
        store.add_key(row)
        db.close()
        downgrade(url, "0014_chunk_boxes", schema=schema)
        upgrade(url, "0015_principals", schema=schema)
        assert current_revision(url, schema=schema) == "0015_principals"
        upgrade(url, "head", schema=schema)  # and the revisions after it
        assert store.get_key(row.key_id) == row  # no principal, not trusted: what it was
        store.add_principal("acme", "user", "alice")
        assert store.principal_for("acme", "alice") == Principal("alice", frozenset())
    finally:
        db.close()
