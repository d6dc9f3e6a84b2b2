"""Document ACLs on SQLite (``DocumentAcls``): ``document_acl`` holds the ACL of each document
that has one, ``acl_change`` every change (who, when, before, after); a library's latest
change's ``seq`` is its ACL sequence."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping
from typing import Any

from ragspine.retrieval.chunking.chunk_store import AclChange
from ragspine.security.principals import ACL, OPEN
from ragspine.stores.sqlite.database import SQLiteDatabase


def check_acls(acls: Mapping[str, ACL]) -> dict[str, ACL]:
    """``acls`` with each value an :class:`ACL` and each key a document id (``ConfigError`` otherwise)."""
    from ragspine.errors import ConfigError

    out: dict[str, ACL] = {}
    for doc_id, acl in acls.items():
        if not isinstance(doc_id, str) or not doc_id or "\x00" in doc_id:
            raise ConfigError(f"an ACL is set on a document id, got {doc_id!r}")
        out[doc_id] = ACL.parse(acl)
    return out


def parse_acls(rows: Iterable[tuple[str, str]]) -> dict[str, ACL]:
    """``{doc_id: ACL}`` of ``(doc_id, canonical JSON)`` rows, each distinct text parsed once (one
    ACL object per class: a library of 300,000 documents in 1,000 classes parses 1,000) and
    remembered for the next read (:data:`_PARSED`: an ACL is immutable, so reads share them)."""
    parsed = _PARSED
    out: dict[str, ACL] = {}
    for doc_id, text in rows:
        acl = parsed.get(text)
        out[doc_id] = acl if acl is not None else parse_acl(text)
    return out


def parse_acl(text: str) -> ACL:
    """The ACL of its canonical JSON ``text``, parsed once across reads and writes."""
    acl = _PARSED.get(text)
    if acl is None:
        if len(_PARSED) >= _PARSED_MAX:
            _PARSED.clear()
        acl = _PARSED[text] = ACL.from_json(text)
    return acl


#: canonical ACL text -> its ACL, across reads (parsing one takes ~60 us: a read of 1,000 classes, 60 ms)
_PARSED: dict[str, ACL] = {}
_PARSED_MAX = 65_536


def set_acl(cur: sqlite3.Cursor, library_id: str, doc_id: str, acl: ACL, *, by: str, now: str) -> bool:
    """Give ``doc_id`` ``acl`` inside the caller's transaction; ``True`` when it changed (recorded)."""
    row = cur.execute("SELECT acl FROM document_acl WHERE library_id = ? AND doc_id = ?", (library_id, doc_id)).fetchone()
    before = parse_acl(row[0]) if row else OPEN
    if before == acl:
        return False
    if acl.is_open:
        cur.execute("DELETE FROM document_acl WHERE library_id = ? AND doc_id = ?", (library_id, doc_id))
    else:
        cur.execute(_UPSERT, (library_id, doc_id, acl.to_json()))
    cur.execute(_RECORD, (library_id, doc_id, before.to_json(), acl.to_json(), now, by))
    return True


_UPSERT = ("INSERT INTO document_acl (library_id, doc_id, acl) VALUES (?, ?, ?)"
           " ON CONFLICT(library_id, doc_id) DO UPDATE SET acl = excluded.acl")
_RECORD = "INSERT INTO acl_change (library_id, doc_id, acl_before, acl_after, changed_at, changed_by) VALUES (?, ?, ?, ?, ?, ?)"


def set_acls(db: SQLiteDatabase, library_id: str, acls: Mapping[str, ACL], *, by: str) -> int:
    from ragspine.stores.sqlite.catalog import utc_now

    wanted = check_acls(acls)
    db.init_schema()
    now = utc_now()
    with db.transaction() as cur:  # set_acl's steps, each for the whole batch: one read, three executemany
        ids = list(wanted)
        stored: dict[str, str] = {}
        for i in range(0, len(ids), _IN_BATCH):
            part = ids[i : i + _IN_BATCH]
            marks = ", ".join("?" * len(part))
            stored.update(cur.execute(f"SELECT doc_id, acl FROM document_acl WHERE library_id = ? AND doc_id IN ({marks})",
                                      (library_id, *part)).fetchall())
        texts: dict[int, str] = {}  # each ACL object's JSON, written once (a batch shares a few)
        changed = [(doc_id, stored.get(doc_id, _OPEN_JSON), texts.get(id(acl)) or texts.setdefault(id(acl), acl.to_json()), acl)
                   for doc_id, acl in wanted.items() if (parse_acl(stored[doc_id]) if doc_id in stored else OPEN) != acl]
        cur.executemany("DELETE FROM document_acl WHERE library_id = ? AND doc_id = ?",
                        [(library_id, doc_id) for doc_id, _, _, acl in changed if acl.is_open])
        cur.executemany(_UPSERT, [(library_id, doc_id, text) for doc_id, _, text, acl in changed if not acl.is_open])
        cur.executemany(_RECORD, [(library_id, doc_id, before, text, now, by) for doc_id, before, text, _ in changed])
        return len(changed)


_OPEN_JSON = OPEN.to_json()
_IN_BATCH = 500  # document ids per IN (...) list (SQLite before 3.32 allows 999 parameters)


def acl_seq(db: SQLiteDatabase, library_id: str) -> int:
    db.init_schema()
    return int(db.query("SELECT COALESCE(MAX(seq), 0) FROM acl_change WHERE library_id = ?", (library_id,))[0][0])


def document_acls(db: SQLiteDatabase, library_id: str) -> tuple[int, dict[str, ACL]]:
    db.init_schema()
    rows = db.query(
        "SELECT '', (SELECT COALESCE(MAX(seq), 0) FROM acl_change WHERE library_id = ?) UNION ALL"
        " SELECT doc_id, acl FROM document_acl WHERE library_id = ?",
        (library_id, library_id),
    )
    seq = next(int(value) for doc_id, value in rows if doc_id == "")  # a document id is never empty
    return seq, parse_acls((doc_id, text) for doc_id, text in rows if doc_id)


def changes_from(rows: list[tuple[Any, str, str]], seq: int) -> tuple[int, dict[str, ACL]] | None:
    """``acl_changes_since(seq)`` of a library's ``(seq, doc_id, acl_after)`` rows from ``seq`` on,
    ascending (both backends). The row of ``seq`` itself proves the record reaches back to it:
    deleting a library deletes its record, and any later changes start after its last ``seq``
    (sequences are never reused), so without that row the changes since can't be told complete."""
    if seq < 0 or (seq > 0 and (not rows or int(rows[0][0]) != seq)):
        return None
    changes = rows[1:] if seq > 0 else rows
    return (int(rows[-1][0]) if rows else seq), parse_acls((doc_id, text) for _, doc_id, text in changes)  # a document's last wins


def acl_changes_since(db: SQLiteDatabase, library_id: str, seq: int) -> tuple[int, dict[str, ACL]] | None:
    if seq < 0:
        return None
    db.init_schema()
    rows = db.query(
        "SELECT seq, doc_id, acl_after FROM acl_change WHERE library_id = ? AND seq >= ? ORDER BY seq", (library_id, int(seq)),
    )
    return changes_from(rows, seq)


def acl_history(db: SQLiteDatabase, library_id: str, doc_id: str | None = None, *, limit: int = 100) -> list[AclChange]:
    db.init_schema()
    where, params = ("library_id = ?", [library_id]) if doc_id is None else ("library_id = ? AND doc_id = ?", [library_id, doc_id])
    rows = db.query(
        f"SELECT seq, doc_id, acl_before, acl_after, changed_at, changed_by FROM acl_change WHERE {where} ORDER BY seq DESC LIMIT ?",
        (*params, int(limit)),
    )
    return [AclChange(int(s), d, ACL.from_json(b), ACL.from_json(a), at, by) for s, d, b, a, at, by in rows]
