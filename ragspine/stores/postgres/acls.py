"""Document ACLs on PostgreSQL (``DocumentAcls``): ``ragspine_document_acl`` holds the ACL of
each document that has one, ``ragspine_acl_change`` every change (who, when, before, after).
Driver SQL with named parameters only; a library's changes are serialized by a transaction
advisory lock, so a change's ``seq`` order is its commit order."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragspine.retrieval.chunking.chunk_store import AclChange
from ragspine.security.principals import ACL, OPEN
from ragspine.stores.sqlite.acls import parse_acl, parse_acls

_LOCK = "SELECT pg_advisory_xact_lock(hashtext('ragspine_acl:' || %(library_id)s))"
_CURRENT = "SELECT acl FROM ragspine_document_acl WHERE library_id = %(library_id)s AND doc_id = %(doc_id)s FOR UPDATE"
_CURRENT_MANY = (
    "SELECT doc_id, acl FROM ragspine_document_acl WHERE library_id = %(library_id)s AND doc_id = ANY(%(doc_ids)s) FOR UPDATE"
)
_DELETE = "DELETE FROM ragspine_document_acl WHERE library_id = %(library_id)s AND doc_id = %(doc_id)s"
_UPSERT = (
    "INSERT INTO ragspine_document_acl (library_id, doc_id, acl) VALUES (%(library_id)s, %(doc_id)s, %(acl)s)"
    " ON CONFLICT (library_id, doc_id) DO UPDATE SET acl = EXCLUDED.acl"
)
_RECORD = (
    "INSERT INTO ragspine_acl_change (library_id, doc_id, acl_before, acl_after, changed_at, changed_by)"
    " VALUES (%(library_id)s, %(doc_id)s, %(before)s, %(after)s, to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'), %(by)s)"
)
_SEQ = "SELECT COALESCE(MAX(seq), 0) FROM ragspine_acl_change WHERE library_id = %(library_id)s"
_SINCE = (
    "SELECT seq, doc_id, acl_after FROM ragspine_acl_change WHERE library_id = %(library_id)s AND seq >= %(seq)s ORDER BY seq"
)
_ALL = (
    "SELECT '', (" + _SEQ + ")::text UNION ALL"
    " SELECT doc_id, acl FROM ragspine_document_acl WHERE library_id = %(library_id)s"
)


def set_acl(cur: Any, library_id: str, doc_id: str, acl: ACL, *, by: str) -> bool:
    """Give ``doc_id`` ``acl`` inside the caller's transaction (psycopg cursor); ``True`` when it changed."""
    key = {"library_id": library_id, "doc_id": doc_id}
    cur.execute(_LOCK, key)
    cur.execute(_CURRENT, key)
    row = cur.fetchone()
    before = parse_acl(row[0]) if row else OPEN
    if before == acl:
        return False
    cur.execute(_DELETE if acl.is_open else _UPSERT, {**key, "acl": acl.to_json()})
    cur.execute(_RECORD, {**key, "before": before.to_json(), "after": acl.to_json(), "by": by})
    return True


def set_acls(db: Any, library_id: str, acls: Mapping[str, ACL], *, by: str) -> int:
    from ragspine.stores.sqlite.acls import check_acls

    wanted = check_acls(acls)
    db.init_schema()
    with db.transaction() as conn, conn.connection.driver_connection.cursor() as cur:
        if len(wanted) == 1:
            ((doc_id, acl),) = wanted.items()
            return int(set_acl(cur, library_id, doc_id, acl, by=by))
        return _set_many(cur, library_id, wanted, by=by)


def _set_many(cur: Any, library_id: str, wanted: Mapping[str, ACL], *, by: str) -> int:
    """:func:`set_acl` for many documents in one transaction: one lock, one read of the batch's
    stored ACLs, then the writes and the change records pipelined (``executemany``), in doc-id
    order — the same rows, in the same ``seq`` order, as one :func:`set_acl` per document."""
    cur.execute(_LOCK, {"library_id": library_id})
    cur.execute(_CURRENT_MANY, {"library_id": library_id, "doc_ids": sorted(wanted)})
    stored = {doc_id: parse_acl(text) for doc_id, text in cur.fetchall()}
    deletes: list[dict[str, str]] = []
    upserts: list[dict[str, str]] = []
    records: list[dict[str, str]] = []
    for doc_id, acl in sorted(wanted.items()):
        before = stored.get(doc_id, OPEN)
        if before == acl:
            continue
        key = {"library_id": library_id, "doc_id": doc_id, "acl": acl.to_json()}
        (deletes if acl.is_open else upserts).append(key)
        records.append({"library_id": library_id, "doc_id": doc_id, "before": before.to_json(), "after": key["acl"], "by": by})
    if deletes:
        cur.executemany(_DELETE, deletes)
    if upserts:
        cur.executemany(_UPSERT, upserts)
    if records:
        cur.executemany(_RECORD, records)
    return len(records)


def acl_seq(db: Any, library_id: str) -> int:
    db.init_schema()
    return int(db.query(_SEQ, {"library_id": library_id})[0][0])


def document_acls(db: Any, library_id: str) -> tuple[int, dict[str, ACL]]:
    db.init_schema()
    rows = db.query(_ALL, {"library_id": library_id})
    seq = next(int(value) for doc_id, value in rows if doc_id == "")
    return seq, parse_acls((doc_id, text) for doc_id, text in rows if doc_id)


def acl_changes_since(db: Any, library_id: str, seq: int) -> tuple[int, dict[str, ACL]] | None:
    from ragspine.stores.sqlite.acls import changes_from

    if seq < 0:
        return None
    db.init_schema()
    rows = db.query(_SINCE, {"library_id": library_id, "seq": int(seq)})
    return changes_from(rows, seq)


def acl_history(db: Any, library_id: str, doc_id: str | None = None, *, limit: int = 100) -> list[AclChange]:
    db.init_schema()
    where = "library_id = %(library_id)s" + ("" if doc_id is None else " AND doc_id = %(doc_id)s")
    rows = db.query(
        "SELECT seq, doc_id, acl_before, acl_after, changed_at, changed_by FROM ragspine_acl_change"
        f" WHERE {where} ORDER BY seq DESC LIMIT %(limit)s",
        {"library_id": library_id, "doc_id": doc_id, "limit": int(limit)},
    )
    return [AclChange(int(s), d, ACL.from_json(b), ACL.from_json(a), at, by) for s, d, b, a, at, by in rows]
