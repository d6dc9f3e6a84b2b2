"""The SQLite library catalog: which libraries a database holds, with their descriptions.

Functions over a :class:`~ragspine.stores.sqlite.database.SQLiteDatabase` (its methods of the
same names call them). A library also exists when it only has chunks (written before the
catalog table existed).
"""

from __future__ import annotations

import shutil
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Sequence

from ragspine.retrieval.chunking.chunk_store import DERIVED_KINDS, LibraryInfo, check_library_id

if TYPE_CHECKING:
    from ragspine.stores.sqlite.database import SQLiteDatabase


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


_LIBRARIES = (
    "SELECT l.library_id, l.description, l.created_at,"
    " (SELECT COUNT(DISTINCT doc_id) FROM narrative_chunk c"
    "   WHERE c.library_id = l.library_id AND c.active = 1),"
    " (SELECT COUNT(*) FROM narrative_chunk c"
    "   WHERE c.library_id = l.library_id AND c.active = 1)"
    " FROM (SELECT library_id, description, created_at FROM library"
    "       UNION SELECT DISTINCT library_id, '', '' FROM narrative_chunk"
    "       WHERE library_id NOT IN (SELECT library_id FROM library)) l"
)


def ensure_library(db: SQLiteDatabase, library_id: str, description: str | None = None) -> LibraryInfo:
    check_library_id(library_id)
    db.init_schema()
    with db.transaction() as cur:
        cur.execute(
            "INSERT INTO library (library_id, description, created_at) VALUES (?, ?, ?)"
            " ON CONFLICT(library_id) DO NOTHING",
            (library_id, description or "", utc_now()),
        )
        if description is not None:
            cur.execute("UPDATE library SET description = ? WHERE library_id = ?", (description, library_id))
    info = get_library(db, library_id)
    assert info is not None
    return info


def get_library(db: SQLiteDatabase, library_id: str) -> LibraryInfo | None:
    db.init_schema()
    rows = db.query(f"SELECT * FROM ({_LIBRARIES}) WHERE library_id = ?", (library_id,))
    return LibraryInfo(*rows[0]) if rows else None


def descriptions(db: SQLiteDatabase, library_ids: Sequence[str]) -> dict[str, str]:
    db.init_schema()
    out: dict[str, str] = {}
    for library_id in dict.fromkeys(library_ids):
        rows = db.query("SELECT description FROM library WHERE library_id = ?", (library_id,))
        if rows:
            out[library_id] = rows[0][0] or ""
        elif db.query("SELECT 1 FROM narrative_chunk WHERE library_id = ? LIMIT 1", (library_id,)):
            out[library_id] = ""  # a library that only has chunks
    return out


def library_profile(db: SQLiteDatabase, library_id: str) -> str | None:
    db.init_schema()
    rows = db.query("SELECT profile FROM library WHERE library_id = ?", (library_id,))
    return rows[0][0] or None if rows else None


def set_library_profile(db: SQLiteDatabase, library_id: str, profile_json: str) -> None:
    check_library_id(library_id)
    db.init_schema()
    with db.transaction() as cur:
        cur.execute(
            "INSERT INTO library (library_id, description, created_at, profile) VALUES (?, '', ?, ?)"
            " ON CONFLICT(library_id) DO UPDATE SET profile = excluded.profile",
            (library_id, utc_now(), profile_json),
        )


def list_libraries(db: SQLiteDatabase, library_ids: Sequence[str] | None = None) -> list[LibraryInfo]:
    db.init_schema()
    if library_ids is None:
        return [LibraryInfo(*row) for row in db.query(_LIBRARIES + " ORDER BY l.library_id")]
    found = (get_library(db, library_id) for library_id in sorted(set(library_ids)))
    return [info for info in found if info is not None]


def delete_library(db: SQLiteDatabase, library_id: str) -> bool:
    """Delete a library's chunks, facts, RAPTOR tree and catalog row, log the drop (followers rebuild), and
    remove its saved lexical index."""
    db.init_schema()
    with db.transaction() as cur:
        cur.execute("DELETE FROM narrative_chunk WHERE library_id = ?", (library_id,))
        n_chunks = cur.rowcount
        cur.execute("DELETE FROM structured_fact WHERE library_id = ?", (library_id,))
        n_facts = cur.rowcount
        cur.execute("DELETE FROM structured_source WHERE library_id = ?", (library_id,))
        cur.execute("DELETE FROM raptor_node WHERE library_id = ?", (library_id,))
        cur.execute("DELETE FROM raptor_tree WHERE library_id = ?", (library_id,))
        cur.execute("DELETE FROM document_acl WHERE library_id = ?", (library_id,))
        cur.execute("DELETE FROM acl_change WHERE library_id = ?", (library_id,))
        cur.execute("DELETE FROM library WHERE library_id = ?", (library_id,))
        n_lib = cur.rowcount
        cur.execute(
            "INSERT INTO narrative_change (library_id, doc_id, version, changed_at) VALUES (?, '', 0, ?)",
            (library_id, utc_now()),
        )
    for kind in DERIVED_KINDS:  # the library's derived files could never be used again anyway
        saved = db.chunk_store(library_id).persist_dir(kind)
        if saved:
            shutil.rmtree(saved, ignore_errors=True)
    return bool(n_chunks or n_facts or n_lib)
