"""The SQLite schema: explicit tables and indexes, and the additive upgrade of older files.

``narrative_chunk`` holds every version of every chunk (``active`` marks the current one),
``narrative_change`` is the change log derived indexes follow (one row per replace, with the
document's fingerprint), ``library`` the catalog; ``structured_fact`` every version of every
numeric fact (``active`` marks the current ones; one active fact per key and library, by a
partial unique index) and ``structured_source`` each fact source's current version;
``raptor_tree`` / ``raptor_node`` a library's RAPTOR tree (apart from the chunks);
``document_acl`` who may read a document and ``acl_change`` every change of it. Older files (without ``library_id``, the
metadata JSON column, the parent/window fields or the change log's fingerprints) are upgraded
by adding the missing columns; ``PRAGMA user_version`` records :data:`SCHEMA_VERSION`.
"""

from __future__ import annotations

import sqlite3

from ragspine.retrieval.chunking.chunk_store import DEFAULT_LIBRARY_ID

SCHEMA_VERSION = 8  # 4: the structured channel's fact tables; 5: RAPTOR trees; 6: the library's recipe (library.profile); 7: narrative_chunk.boxes;
# 8: document ACLs (document_acl, acl_change)

CHUNK_COLUMNS: tuple[tuple[str, str], ...] = (
    ("library_id", f"TEXT NOT NULL DEFAULT '{DEFAULT_LIBRARY_ID}'"),
    ("chunk_id", "TEXT NOT NULL"),
    ("doc_id", "TEXT NOT NULL"),
    ("version", "INTEGER NOT NULL DEFAULT 1"),
    ("active", "INTEGER NOT NULL DEFAULT 1"),
    ("ordinal", "INTEGER NOT NULL DEFAULT 0"),
    ("text", "TEXT NOT NULL"),
    ("title", "TEXT NOT NULL DEFAULT ''"),
    ("source_locator", "TEXT NOT NULL DEFAULT ''"),
    ("char_start", "INTEGER NOT NULL DEFAULT 0"),
    ("char_end", "INTEGER NOT NULL DEFAULT 0"),
    ("topic", "TEXT NOT NULL DEFAULT ''"),
    ("entity", "TEXT NOT NULL DEFAULT ''"),
    ("geography", "TEXT NOT NULL DEFAULT ''"),
    ("period", "TEXT NOT NULL DEFAULT ''"),
    ("language", "TEXT NOT NULL DEFAULT ''"),
    ("metadata_json", "TEXT NOT NULL DEFAULT '{}'"),
    ("sensitivity", "TEXT NOT NULL DEFAULT 'INTERNAL'"),
    ("parent_id", "TEXT NOT NULL DEFAULT ''"),
    ("heading", "TEXT NOT NULL DEFAULT ''"),
    ("window_text", "TEXT NOT NULL DEFAULT ''"),
    ("parent_locator", "TEXT NOT NULL DEFAULT ''"),
    ("valid_as_of", "TEXT NOT NULL DEFAULT ''"),
    ("ingested_at", "TEXT NOT NULL DEFAULT ''"),
    ("boxes", "TEXT NOT NULL DEFAULT ''"),  # 7: a PDF chunk's line boxes (Chunk.boxes)
)
COLUMN_NAMES = tuple(name for name, _ in CHUNK_COLUMNS)
SELECT_CHUNKS = "SELECT " + ", ".join(COLUMN_NAMES) + " FROM narrative_chunk"

_DDL = (
    "CREATE TABLE IF NOT EXISTS narrative_chunk ("
    + ", ".join(f"{name} {decl}" for name, decl in CHUNK_COLUMNS)
    + ", PRIMARY KEY (library_id, chunk_id, version))",
    "CREATE TABLE IF NOT EXISTS narrative_change ("
    "seq INTEGER PRIMARY KEY AUTOINCREMENT, library_id TEXT NOT NULL, doc_id TEXT NOT NULL,"
    " version INTEGER NOT NULL, changed_at TEXT NOT NULL, fingerprint TEXT NOT NULL DEFAULT '')",
    "CREATE TABLE IF NOT EXISTS library ("
    "library_id TEXT PRIMARY KEY, description TEXT NOT NULL DEFAULT '',"
    " created_at TEXT NOT NULL DEFAULT '', profile TEXT NOT NULL DEFAULT '')",
    "CREATE TABLE IF NOT EXISTS structured_fact ("
    "library_id TEXT NOT NULL, source_doc_id TEXT NOT NULL, version INTEGER NOT NULL, ordinal INTEGER NOT NULL,"
    " active INTEGER NOT NULL DEFAULT 1, metric TEXT NOT NULL, entity TEXT NOT NULL, period TEXT NOT NULL,"
    " channel TEXT NOT NULL, value TEXT NOT NULL, unit TEXT NOT NULL DEFAULT '', source_locator TEXT NOT NULL,"
    " valid_as_of TEXT NOT NULL, sensitivity TEXT NOT NULL DEFAULT 'INTERNAL', ingested_at TEXT NOT NULL DEFAULT '',"
    " PRIMARY KEY (library_id, source_doc_id, version, ordinal))",
    "CREATE TABLE IF NOT EXISTS structured_source ("
    "library_id TEXT NOT NULL, source_doc_id TEXT NOT NULL, version INTEGER NOT NULL, facts INTEGER NOT NULL DEFAULT 0,"
    " changed_at TEXT NOT NULL DEFAULT '', PRIMARY KEY (library_id, source_doc_id))",
    "CREATE TABLE IF NOT EXISTS raptor_tree ("
    "library_id TEXT PRIMARY KEY, tree_id TEXT NOT NULL, change_seq INTEGER NOT NULL, model TEXT NOT NULL,"
    " params TEXT NOT NULL DEFAULT '{}', chunks INTEGER NOT NULL DEFAULT 0, nodes INTEGER NOT NULL DEFAULT 0,"
    " levels INTEGER NOT NULL DEFAULT 0, built_at TEXT NOT NULL DEFAULT '', build_seconds REAL NOT NULL DEFAULT 0)",
    "CREATE TABLE IF NOT EXISTS raptor_node ("
    "library_id TEXT NOT NULL, node_id TEXT NOT NULL, level INTEGER NOT NULL, ordinal INTEGER NOT NULL, text TEXT NOT NULL,"
    " children TEXT NOT NULL, leaves TEXT NOT NULL, vector BLOB NOT NULL, written_by TEXT NOT NULL DEFAULT 'extractive',"
    " PRIMARY KEY (library_id, node_id))",
    # 8: who may read a document (only documents with an ACL have a row) and every change of it
    "CREATE TABLE IF NOT EXISTS document_acl ("
    "library_id TEXT NOT NULL, doc_id TEXT NOT NULL, acl TEXT NOT NULL, PRIMARY KEY (library_id, doc_id))",
    "CREATE TABLE IF NOT EXISTS acl_change ("
    "seq INTEGER PRIMARY KEY AUTOINCREMENT, library_id TEXT NOT NULL, doc_id TEXT NOT NULL, acl_before TEXT NOT NULL,"
    " acl_after TEXT NOT NULL, changed_at TEXT NOT NULL, changed_by TEXT NOT NULL DEFAULT '')",
)
_INDEXES = (
    "CREATE INDEX IF NOT EXISTS narrative_chunk_active"
    " ON narrative_chunk (library_id, active, doc_id, ordinal)",
    "CREATE INDEX IF NOT EXISTS narrative_chunk_active_id"
    " ON narrative_chunk (library_id, chunk_id) WHERE active = 1",
    "CREATE INDEX IF NOT EXISTS narrative_change_lib ON narrative_change (library_id, seq)",
    # a document's versions (the next version, its fingerprint) without scanning the library
    "CREATE INDEX IF NOT EXISTS narrative_change_doc ON narrative_change (library_id, doc_id, version)",
    # one active fact per (metric, entity, period, channel) of a library: a lookup never chooses
    "CREATE UNIQUE INDEX IF NOT EXISTS structured_fact_active_key"
    " ON structured_fact (library_id, metric, entity, period, channel) WHERE active = 1",
    "CREATE INDEX IF NOT EXISTS structured_fact_source ON structured_fact (library_id, source_doc_id, active)",
    "CREATE INDEX IF NOT EXISTS raptor_node_order ON raptor_node (library_id, ordinal)",
    "CREATE INDEX IF NOT EXISTS acl_change_lib ON acl_change (library_id, seq)",
    "CREATE INDEX IF NOT EXISTS acl_change_doc ON acl_change (library_id, doc_id, seq)",
)
_CHANGE_MIGRATIONS = (("fingerprint", "TEXT NOT NULL DEFAULT ''"),)
_LIBRARY_MIGRATIONS = (("profile", "TEXT NOT NULL DEFAULT ''"),)  # the recipe it was built with (ragspine/profile.py)


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    rows = conn.execute("SELECT name FROM pragma_table_info(?)", (table,)).fetchall()
    return {r[0] for r in rows}


def create_or_upgrade(conn: sqlite3.Connection) -> None:
    """Create the tables and indexes, adding columns an older file lacks (idempotent). A
    file already at :data:`SCHEMA_VERSION` is only read (one ``PRAGMA``), never written."""
    (version,) = conn.execute("PRAGMA user_version").fetchone()
    if version == SCHEMA_VERSION:
        return
    existing = _columns(conn, "narrative_chunk")
    existing_log = _columns(conn, "narrative_change")
    existing_library = _columns(conn, "library")
    for ddl in _DDL:
        conn.execute(ddl)
    if existing:  # additive migration of an older narrative_chunk table
        for name, decl in CHUNK_COLUMNS:
            if name not in existing:
                conn.execute(f"ALTER TABLE narrative_chunk ADD COLUMN {name} {decl}")
    if existing_log:  # ... and of an older change log
        for name, decl in _CHANGE_MIGRATIONS:
            if name not in existing_log:
                conn.execute(f"ALTER TABLE narrative_change ADD COLUMN {name} {decl}")
    if existing_library:  # ... and of an older catalog
        for name, decl in _LIBRARY_MIGRATIONS:
            if name not in existing_library:
                conn.execute(f"ALTER TABLE library ADD COLUMN {name} {decl}")
    for ddl in _INDEXES:
        conn.execute(ddl)
    conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
