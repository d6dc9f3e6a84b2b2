"""SQLite: the zero-service default ``ChunkStore`` and ``LibraryCatalog``.

One database file holds many libraries; a :class:`SQLiteChunkStore` is a view of one of
them. Explicit schema, parameterized SQL only, WAL journal so readers never block on a
replace, and ``BEGIN IMMEDIATE`` so two replaces of one document serialize. Older schemas
(without ``library_id``, the metadata JSON column, the parent/window fields or the change
log's fingerprints) are migrated additively by ``init_schema``.

``replace_many`` is the bulk form of ``replace_doc_chunks`` (which is ``replace_many`` of one
document): every document is validated first, then the whole batch is one ``BEGIN IMMEDIATE``
transaction. Every replace appends one ``narrative_change`` row carrying the document's
:func:`~ragspine.retrieval.chunking.chunk_store.fingerprint`, which ``fingerprints`` reads back
for the active documents (a bulk ingest resumes by skipping what is already current).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import sys
import threading
from datetime import datetime, timezone
from typing import Any, Iterator, Sequence

from ragspine.errors import BackendError, IngestError
from ragspine.retrieval.chunking.chunk_store import (
    DEFAULT_LIBRARY_ID,
    DocumentChunks,
    LibraryInfo,
    StoredChunk,
    check_batch,
    check_library_id,
    fingerprint,
)
from ragspine.retrieval.chunking.chunking import Chunk
from ragspine.retrieval.metadata import STANDARD_FIELDS

SCHEMA_VERSION = 3
_BATCH = 500  # ids per IN (...) list

_CHUNK_COLUMNS: tuple[tuple[str, str], ...] = (
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
)
_COLUMN_NAMES = tuple(name for name, _ in _CHUNK_COLUMNS)
_SELECT = "SELECT " + ", ".join(_COLUMN_NAMES) + " FROM narrative_chunk"

_DDL = (
    "CREATE TABLE IF NOT EXISTS narrative_chunk ("
    + ", ".join(f"{name} {decl}" for name, decl in _CHUNK_COLUMNS)
    + ", PRIMARY KEY (library_id, chunk_id, version))",
    "CREATE TABLE IF NOT EXISTS narrative_change ("
    "seq INTEGER PRIMARY KEY AUTOINCREMENT, library_id TEXT NOT NULL, doc_id TEXT NOT NULL,"
    " version INTEGER NOT NULL, changed_at TEXT NOT NULL, fingerprint TEXT NOT NULL DEFAULT '')",
    "CREATE TABLE IF NOT EXISTS library ("
    "library_id TEXT PRIMARY KEY, description TEXT NOT NULL DEFAULT '',"
    " created_at TEXT NOT NULL DEFAULT '')",
)
_INDEXES = (
    "CREATE INDEX IF NOT EXISTS narrative_chunk_active"
    " ON narrative_chunk (library_id, active, doc_id, ordinal)",
    "CREATE INDEX IF NOT EXISTS narrative_chunk_active_id"
    " ON narrative_chunk (library_id, chunk_id) WHERE active = 1",
    "CREATE INDEX IF NOT EXISTS narrative_change_lib ON narrative_change (library_id, seq)",
    # a document's versions (the next version, its fingerprint) without scanning the library
    "CREATE INDEX IF NOT EXISTS narrative_change_doc ON narrative_change (library_id, doc_id, version)",
)
_CHANGE_MIGRATIONS = (("fingerprint", "TEXT NOT NULL DEFAULT ''"),)


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


_READ_ACTIONS = frozenset({sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_RECURSIVE})
_INTROSPECTION_PRAGMAS = frozenset({"table_info", "table_xinfo", "index_list", "index_info", "index_xinfo", "foreign_key_list"})


def _allow_all(*_args: Any) -> int:  # Python 3.10 cannot clear an authorizer with None
    return sqlite3.SQLITE_OK


def _read_only_authorizer(action: int, arg1: Any, arg2: Any, db_name: Any, source: Any) -> int:
    """``execute_read``'s authorizer: reads, functions and PRAGMA reads (no assignment) only."""
    if action in _READ_ACTIONS:
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_PRAGMA and (arg2 is None or str(arg1).lower() in _INTROSPECTION_PRAGMAS):
        return sqlite3.SQLITE_OK
    return sqlite3.SQLITE_DENY


class SQLiteDatabase:
    """One SQLite file (or ``:memory:``): a connection, a lock and the schema."""

    def __init__(self, db_path: str | os.PathLike[str] = ":memory:") -> None:
        self.path = os.fspath(db_path)
        if self.path != ":memory:":
            parent = os.path.dirname(os.path.abspath(self.path))
            try:
                os.makedirs(parent, exist_ok=True)
            except OSError as exc:  # e.g. a file where the directory should be
                raise BackendError(f"cannot open SQLite database {self.path!r}: {exc}") from exc
        try:
            self._conn = sqlite3.connect(
                self.path, check_same_thread=False, isolation_level=None, timeout=30.0
            )
        except sqlite3.Error as exc:
            raise BackendError(f"cannot open SQLite database {self.path!r}: {exc}") from exc
        self.lock = threading.RLock()
        self._schema_ready = False
        with self.lock:
            try:  # e.g. "file is not a database": wrapped like a failed connect
                if self.path != ":memory:":
                    self._conn.execute("PRAGMA journal_mode=WAL")
                self._conn.execute("PRAGMA synchronous=NORMAL")
            except sqlite3.Error as exc:
                self._conn.close()
                raise BackendError(f"cannot open SQLite database {self.path!r}: {exc}") from exc

    @property
    def conn(self) -> sqlite3.Connection:
        return self._conn

    def init_schema(self) -> None:
        with self.lock:
            if self._schema_ready:
                return
            existing = self._columns("narrative_chunk")
            existing_log = self._columns("narrative_change")
            for ddl in _DDL:
                self._conn.execute(ddl)
            if existing:  # additive migration of an older narrative_chunk table
                for name, decl in _CHUNK_COLUMNS:
                    if name not in existing:
                        self._conn.execute(f"ALTER TABLE narrative_chunk ADD COLUMN {name} {decl}")
            if existing_log:  # ... and of an older change log
                for name, decl in _CHANGE_MIGRATIONS:
                    if name not in existing_log:
                        self._conn.execute(f"ALTER TABLE narrative_change ADD COLUMN {name} {decl}")
            for ddl in _INDEXES:
                self._conn.execute(ddl)
            self._conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            self._schema_ready = True

    def _columns(self, table: str) -> set[str]:
        rows = self._conn.execute(
            "SELECT name FROM pragma_table_info(?)", (table,)
        ).fetchall()
        return {r[0] for r in rows}

    def transaction(self) -> "_Transaction":
        return _Transaction(self)

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self.lock:
            try:
                return self._conn.execute(sql, tuple(params)).fetchall()
            except sqlite3.Error as exc:
                raise BackendError(f"SQLite query failed: {exc}") from exc

    def execute_read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run one read-only statement; any write raises ``BackendError``."""
        with self.lock:
            self._conn.execute("PRAGMA query_only=ON")
            # query_only alone lets BEGIN/SAVEPOINT (which would wedge the shared connection),
            # ATTACH and PRAGMA writes through: authorize plain reads only.
            self._conn.set_authorizer(_read_only_authorizer)
            try:
                return self._conn.execute(sql, tuple(params)).fetchall()
            except (sqlite3.Error, sqlite3.Warning) as exc:
                raise BackendError(f"read-only query refused or failed: {exc}") from exc
            finally:
                self._conn.set_authorizer(None if sys.version_info >= (3, 11) else _allow_all)
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                self._conn.execute("PRAGMA query_only=OFF")

    def close(self) -> None:
        with self.lock:
            self._conn.close()

    # -- catalog ------------------------------------------------------------------------
    def chunk_store(self, library_id: str = DEFAULT_LIBRARY_ID) -> "SQLiteChunkStore":
        return SQLiteChunkStore(self, library_id=library_id)

    def ensure_library(self, library_id: str, description: str | None = None) -> LibraryInfo:
        check_library_id(library_id)
        self.init_schema()
        with self.transaction() as cur:
            cur.execute(
                "INSERT INTO library (library_id, description, created_at) VALUES (?, ?, ?)"
                " ON CONFLICT(library_id) DO NOTHING",
                (library_id, description or "", utc_now()),
            )
            if description is not None:
                cur.execute(
                    "UPDATE library SET description = ? WHERE library_id = ?",
                    (description, library_id),
                )
        info = self.get_library(library_id)
        assert info is not None
        return info

    def get_library(self, library_id: str) -> LibraryInfo | None:
        return next((i for i in self.list_libraries() if i.library_id == library_id), None)

    def list_libraries(self) -> list[LibraryInfo]:
        self.init_schema()
        rows = self.query(
            "SELECT l.library_id, l.description, l.created_at,"
            " (SELECT COUNT(DISTINCT doc_id) FROM narrative_chunk c"
            "   WHERE c.library_id = l.library_id AND c.active = 1),"
            " (SELECT COUNT(*) FROM narrative_chunk c"
            "   WHERE c.library_id = l.library_id AND c.active = 1)"
            " FROM (SELECT library_id, description, created_at FROM library"
            "       UNION SELECT DISTINCT library_id, '', '' FROM narrative_chunk"
            "       WHERE library_id NOT IN (SELECT library_id FROM library)) l"
            " ORDER BY l.library_id"
        )
        return [LibraryInfo(*row) for row in rows]

    def delete_library(self, library_id: str) -> bool:
        self.init_schema()
        with self.transaction() as cur:
            cur.execute("DELETE FROM narrative_chunk WHERE library_id = ?", (library_id,))
            n_chunks = cur.rowcount
            cur.execute("DELETE FROM library WHERE library_id = ?", (library_id,))
            n_lib = cur.rowcount
            cur.execute(
                "INSERT INTO narrative_change (library_id, doc_id, version, changed_at)"
                " VALUES (?, '', 0, ?)",
                (library_id, utc_now()),
            )
        saved = self.chunk_store(library_id).persist_dir("lexical")
        if saved:  # its saved lexical index goes too (it could never be used again anyway)
            import shutil

            shutil.rmtree(saved, ignore_errors=True)
        return bool(n_chunks or n_lib)


class _Transaction:
    """``with db.transaction() as cur:`` — BEGIN IMMEDIATE … COMMIT, ROLLBACK on error."""

    def __init__(self, db: SQLiteDatabase) -> None:
        self.db = db

    def __enter__(self) -> sqlite3.Cursor:
        self.db.lock.acquire()
        try:
            self.db.conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            self.db.lock.release()
            raise BackendError(f"cannot start a write transaction: {exc}") from exc
        return self.db.conn.cursor()

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        try:
            if exc_type is None:
                self.db.conn.execute("COMMIT")
            else:
                self.db.conn.execute("ROLLBACK")
        except sqlite3.Error as err:
            if self.db.conn.in_transaction:
                self.db.conn.execute("ROLLBACK")
            raise BackendError(f"SQLite write failed: {err}") from err
        finally:
            self.db.lock.release()
        if isinstance(exc, sqlite3.Error) and not isinstance(exc, sqlite3.IntegrityError):
            raise BackendError(f"SQLite write failed: {exc}") from exc


class SQLiteChunkStore:
    """The default ``ChunkStore``: one library's view of a :class:`SQLiteDatabase`.

    ``SQLiteChunkStore("chunks.db")`` opens (and owns) the file; passing a
    ``SQLiteDatabase`` shares its connection between libraries.
    """

    def __init__(
        self,
        db: SQLiteDatabase | str | os.PathLike[str] = ":memory:",
        *,
        library_id: str = DEFAULT_LIBRARY_ID,
    ) -> None:
        self.library_id = check_library_id(library_id)
        self._owns_db = not isinstance(db, SQLiteDatabase)
        self.db = SQLiteDatabase(db) if self._owns_db else db  # type: ignore[arg-type]

    def __repr__(self) -> str:
        return f"SQLiteChunkStore({self.db.path!r}, library_id={self.library_id!r})"

    def init_schema(self) -> None:
        self.db.init_schema()

    def replace_doc_chunks(self, doc_id: str, chunks: Sequence[Chunk], valid_as_of: str = "") -> int:
        return self.replace_many([DocumentChunks(doc_id, chunks, valid_as_of)])

    def replace_many(self, docs: Sequence[DocumentChunks]) -> int:
        """Versioned replace of every document, in order, as one transaction: all of it becomes
        visible or none of it (any invalid document raises before anything is written)."""
        batch = check_batch(docs)
        if not batch:
            return 0
        self.init_schema()
        now = utc_now()
        with self.db.transaction() as cur:
            return sum(self._replace_one(cur, doc, now) for doc in batch)

    def _replace_one(self, cur: sqlite3.Cursor, doc: DocumentChunks, now: str) -> int:
        """One document's versioned replace inside the caller's transaction."""
        doc_id, chunks, valid_as_of = doc
        (current,) = cur.execute(  # a retirement writes no rows: count it from the change log
            "SELECT MAX(COALESCE((SELECT MAX(version) FROM narrative_chunk"
            "   WHERE library_id = ? AND active IN (0, 1) AND doc_id = ?), 0),"
            " COALESCE((SELECT MAX(version) FROM narrative_change"
            "   WHERE library_id = ? AND doc_id = ?), 0))",
            (self.library_id, doc_id, self.library_id, doc_id),
        ).fetchone()
        version = int(current) + 1
        ids = [c.chunk_id for c in chunks]
        for start in range(0, len(ids), _BATCH):  # a chunk id names one active chunk per library
            part = ids[start : start + _BATCH]
            clash = cur.execute(
                "SELECT chunk_id, doc_id FROM narrative_chunk WHERE library_id = ? AND active = 1"
                f" AND doc_id <> ? AND chunk_id IN ({', '.join('?' * len(part))}) LIMIT 1",
                (self.library_id, doc_id, *part),
            ).fetchone()
            if clash:
                raise IngestError(f"chunk_id {clash[0]!r} is already active in doc {clash[1]!r}")
        cur.execute(
            "UPDATE narrative_chunk SET active = 0"
            " WHERE library_id = ? AND doc_id = ? AND active = 1",
            (self.library_id, doc_id),
        )
        try:
            cur.executemany(
                f"INSERT INTO narrative_chunk ({', '.join(_COLUMN_NAMES)})"
                f" VALUES ({', '.join('?' * len(_COLUMN_NAMES))})",
                [self._row(c, version, valid_as_of, now) for c in chunks],
            )
        except sqlite3.IntegrityError as exc:
            raise IngestError(f"cannot store the chunks of {doc_id!r}: {exc}") from None
        cur.execute(
            "INSERT INTO narrative_change (library_id, doc_id, version, changed_at, fingerprint)"
            " VALUES (?, ?, ?, ?, ?)",
            (self.library_id, doc_id, version, now, fingerprint(chunks, str(valid_as_of))),
        )
        return len(chunks)

    def fingerprints(self, doc_ids: Sequence[str]) -> dict[str, str]:
        """``{doc_id: fingerprint}`` of the active documents among ``doc_ids`` (the fingerprint
        their current version was written with; computed from the stored rows for versions
        written before the change log kept fingerprints)."""
        self.init_schema()
        wanted = list(dict.fromkeys(doc_ids))
        out: dict[str, str] = {}
        for start in range(0, len(wanted), _BATCH):
            part = wanted[start : start + _BATCH]
            rows = self.db.query(
                "SELECT a.doc_id, COALESCE(c.fingerprint, '') FROM"
                " (SELECT doc_id, MAX(version) AS version FROM narrative_chunk"
                f"   WHERE library_id = ? AND active = 1 AND doc_id IN ({', '.join('?' * len(part))})"
                "   GROUP BY doc_id) a"
                " LEFT JOIN narrative_change c"
                "   ON c.library_id = ? AND c.doc_id = a.doc_id AND c.version = a.version",
                (self.library_id, *part, self.library_id),
            )
            for doc_id, value in rows:
                if not value:  # a version from before fingerprints were recorded
                    stored = self.iter_chunks(doc_id=doc_id)
                    value = fingerprint(stored, stored[0].valid_as_of if stored else "")
                out[doc_id] = value
        return out

    def _row(self, c: Chunk, version: int, valid_as_of: str, now: str) -> tuple[Any, ...]:
        meta = dict(c.metadata)
        values = {
            "library_id": self.library_id,
            "chunk_id": c.chunk_id,
            "doc_id": c.doc_id,
            "version": version,
            "active": 1,
            "ordinal": c.ordinal,
            "text": c.text,
            "title": c.title,
            "source_locator": c.source_locator,
            "char_start": c.char_start,
            "char_end": c.char_end,
            "metadata_json": json.dumps(meta, ensure_ascii=False, sort_keys=True),
            "sensitivity": c.sensitivity,
            "parent_id": c.parent_id,
            "heading": c.heading,
            "window_text": c.window_text,
            "parent_locator": c.parent_locator,
            "valid_as_of": valid_as_of,
            "ingested_at": now,
        }
        for name in STANDARD_FIELDS:
            value = meta.get(name)
            values[name] = "" if value is None else str(value)
        return tuple(values[name] for name in _COLUMN_NAMES)

    def iter_chunks(
        self,
        *,
        doc_id: str | None = None,
        topic: str | None = None,
        entity: str | None = None,
        geography: str | None = None,
        period: str | None = None,
        language: str | None = None,
        include_inactive: bool = False,
    ) -> list[StoredChunk]:
        self.init_schema()
        clauses = ["library_id = ?"]
        params: list[Any] = [self.library_id]
        if not include_inactive:
            clauses.append("active = 1")
        for column, value in (
            ("doc_id", doc_id),
            ("topic", topic),
            ("entity", entity),
            ("geography", geography),
            ("period", period),
            ("language", language),
        ):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        rows = self.db.query(
            f"{_SELECT} WHERE {' AND '.join(clauses)} ORDER BY doc_id, ordinal, version, chunk_id",
            params,
        )
        return [_to_stored(row) for row in rows]

    def iter_active(self, batch_size: int = 5000) -> Iterator[StoredChunk]:
        """All active chunks, streamed in pages of ``batch_size`` (keyset pagination)."""
        self.init_schema()
        last: tuple[str, int, str] = ("", -1, "")
        while True:
            rows = self.db.query(
                f"{_SELECT} WHERE library_id = ? AND active = 1 AND (doc_id, ordinal, chunk_id) > (?, ?, ?)"
                " ORDER BY doc_id, ordinal, chunk_id LIMIT ?",
                (self.library_id, *last, batch_size),
            )
            if not rows:
                return
            for row in rows:
                yield _to_stored(row)
            last = (rows[-1][2], rows[-1][5], rows[-1][1])

    def iter_active_docs(self, doc_ids: Sequence[str]) -> Iterator[StoredChunk]:
        """The active chunks of many documents, a few hundred documents per query (what a
        derived index reads to catch up with a batch of changes)."""
        self.init_schema()
        wanted = list(dict.fromkeys(doc_ids))
        for start in range(0, len(wanted), _BATCH):
            part = wanted[start : start + _BATCH]
            rows = self.db.query(
                f"{_SELECT} WHERE library_id = ? AND active = 1 AND doc_id IN ({', '.join('?' * len(part))})"
                " ORDER BY doc_id, ordinal, chunk_id",
                (self.library_id, *part),
            )
            for row in rows:
                yield _to_stored(row)

    def change_marker(self, seq: int) -> str | None:
        """What identifies change ``seq`` of this library in this database (its document,
        version and commit time), or ``None`` if there is no such change: a derived index saved
        at ``seq`` checks it, so an index file is never applied to another database."""
        self.init_schema()
        rows = self.db.query(
            "SELECT doc_id, version, changed_at FROM narrative_change WHERE library_id = ? AND seq = ?",
            (self.library_id, seq),
        )
        return None if not rows else json.dumps([seq, *rows[0]], ensure_ascii=False)

    def persist_dir(self, kind: str) -> str | None:
        """Where a derived index of ``kind`` may keep its files: ``<db file>.<kind>/<library
        hash>/`` next to the database; ``None`` for an in-memory database."""
        path = self.db.path
        if not path or path == ":memory:" or path.startswith("file:"):
            return None
        digest = hashlib.sha256(self.library_id.encode("utf-8")).hexdigest()[:16]
        return os.path.join(os.path.abspath(path) + f".{kind}", digest)

    def get_chunks(self, chunk_ids: Sequence[str]) -> list[StoredChunk]:
        self.init_schema()
        wanted = list(dict.fromkeys(chunk_ids))
        found: dict[str, StoredChunk] = {}
        for start in range(0, len(wanted), 500):
            part = wanted[start : start + 500]
            rows = self.db.query(
                f"{_SELECT} WHERE library_id = ? AND active = 1"
                f" AND chunk_id IN ({', '.join('?' * len(part))})",
                [self.library_id, *part],
            )
            for row in rows:
                chunk = _to_stored(row)
                found[chunk.chunk_id] = chunk
        return [found[c] for c in chunk_ids if c in found]

    def doc_ids(self) -> list[str]:
        self.init_schema()
        rows = self.db.query(
            "SELECT DISTINCT doc_id FROM narrative_chunk WHERE library_id = ? AND active = 1"
            " ORDER BY doc_id",
            (self.library_id,),
        )
        return [r[0] for r in rows]

    def count(self, *, include_inactive: bool = False) -> int:
        self.init_schema()
        sql = "SELECT COUNT(*) FROM narrative_chunk WHERE library_id = ?"
        if not include_inactive:
            sql += " AND active = 1"
        return int(self.db.query(sql, (self.library_id,))[0][0])

    def change_seq(self) -> int:
        self.init_schema()
        rows = self.db.query(
            "SELECT COALESCE(MAX(seq), 0) FROM narrative_change WHERE library_id = ?",
            (self.library_id,),
        )
        return int(rows[0][0])

    def changes_since(self, seq: int) -> tuple[int, list[str]]:
        self.init_schema()
        rows = self.db.query(
            "SELECT seq, doc_id FROM narrative_change WHERE library_id = ? AND seq > ?"
            " ORDER BY seq",
            (self.library_id, seq),
        )
        if not rows:
            return seq, []
        return int(rows[-1][0]), list(dict.fromkeys(r[1] for r in rows))

    def execute_read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        self.init_schema()
        return self.db.execute_read(sql, params)

    def close(self) -> None:
        if self._owns_db:
            self.db.close()


def _to_stored(row: Sequence[Any]) -> StoredChunk:
    v = dict(zip(_COLUMN_NAMES, row))
    meta = json.loads(v["metadata_json"] or "{}")
    for name in STANDARD_FIELDS:  # rows written by an older schema kept these as columns
        if v[name] and name not in meta:
            meta[name] = v[name]
    return StoredChunk.from_row(v, metadata=meta)
