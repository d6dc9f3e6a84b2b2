"""``SQLiteChunkStore``: the zero-service default ``ChunkStore``, one library's view of a database.

Explicit schema, parameterized SQL only. ``replace_many`` is the bulk form of
``replace_doc_chunks`` (which is ``replace_many`` of one document): every document is
validated first, then the whole batch is one ``BEGIN IMMEDIATE`` transaction. Every replace
appends one ``narrative_change`` row carrying the document's
:func:`~ragspine.retrieval.chunking.chunk_store.fingerprint`, which ``fingerprints`` reads
back for the active documents (a bulk ingest resumes by skipping what is already current).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from typing import Any, Iterator, Mapping, Sequence

from ragspine.errors import IngestError
from ragspine.retrieval.chunking.chunk_store import (
    DEFAULT_LIBRARY_ID,
    AclChange,
    DocumentChunks,
    StoredChunk,
    check_batch,
    check_library_id,
    fingerprint,
)
from ragspine.retrieval.chunking.chunking import Chunk
from ragspine.retrieval.sensitivity import is_restricted
from ragspine.security.principals import ACL
from ragspine.stores.sqlite import acls as _acls
from ragspine.stores.sqlite.acls import set_acl
from ragspine.stores.sqlite.catalog import utc_now
from ragspine.stores.sqlite.converters import chunk_row, row_to_stored
from ragspine.stores.sqlite.database import SQLiteDatabase
from ragspine.stores.sqlite.schema import COLUMN_NAMES, SELECT_CHUNKS

_BATCH = 500  # ids per IN (...) list
_INSERT = f"INSERT INTO narrative_chunk ({', '.join(COLUMN_NAMES)}) VALUES ({', '.join('?' * len(COLUMN_NAMES))})"


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
        self.db = db if isinstance(db, SQLiteDatabase) else SQLiteDatabase(db)

    def __repr__(self) -> str:
        return f"SQLiteChunkStore({self.db.path!r}, library_id={self.library_id!r})"

    def init_schema(self) -> None:
        self.db.init_schema()

    # -- writes -------------------------------------------------------------------------------
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
        doc_id, chunks, valid_as_of, acl = doc
        if acl is not None:  # who may read it changes with its chunks: never one without the other
            set_acl(cur, self.library_id, doc_id, acl, by="ingest", now=now)
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
            "UPDATE narrative_chunk SET active = 0 WHERE library_id = ? AND doc_id = ? AND active = 1",
            (self.library_id, doc_id),
        )
        try:
            cur.executemany(_INSERT, [chunk_row(self.library_id, c, version, valid_as_of, now) for c in chunks])
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

    # -- reads --------------------------------------------------------------------------------
    def iter_chunks(  # the seed's signature: its five metadata fields as an AND pre-filter (SQLite's own)
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
            f"{SELECT_CHUNKS} WHERE {' AND '.join(clauses)} ORDER BY doc_id, ordinal, version, chunk_id", params
        )
        return [row_to_stored(row) for row in rows]

    def restricted_spans(self, doc_ids: Sequence[str]) -> dict[tuple[str, int], list[tuple[int, int]]]:
        """See :class:`~ragspine.retrieval.chunking.chunk_store.RestrictedSpans`."""
        self.init_schema()
        wanted = list(dict.fromkeys(doc_ids))
        out: dict[tuple[str, int], list[tuple[int, int]]] = {}
        for start in range(0, len(wanted), _BATCH):
            part = wanted[start : start + _BATCH]
            rows = self.db.query(  # RESTRICTED as stored, or a label that may fold to it (decided below)
                "SELECT doc_id, version, char_start, char_end, sensitivity FROM narrative_chunk WHERE library_id = ? AND active = 1"
                f" AND doc_id IN ({', '.join('?' * len(part))}) AND (upper(trim(sensitivity, ' ' || char(9, 10, 13))) = 'RESTRICTED'"
                " OR sensitivity GLOB '*[^A-Za-z0-9]*') ORDER BY doc_id, version, char_start, char_end",
                (self.library_id, *part),
            )
            for doc_id, version, c0, c1, label in rows:
                if is_restricted(label):  # a lookalike stored before ingest folded labels too
                    out.setdefault((doc_id, int(version)), []).append((int(c0), int(c1)))
        return out

    def iter_active(self, batch_size: int = 5000) -> Iterator[StoredChunk]:
        """All active chunks, streamed in pages of ``batch_size`` (keyset pagination)."""
        if batch_size <= 0:  # LIMIT 0 would end the stream at once, as if the store were empty
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        self.init_schema()
        last: tuple[str, int, str] = ("", -1, "")
        while True:
            rows = self.db.query(
                f"{SELECT_CHUNKS} WHERE library_id = ? AND active = 1 AND (doc_id, ordinal, chunk_id) > (?, ?, ?)"
                " ORDER BY doc_id, ordinal, chunk_id LIMIT ?",
                (self.library_id, *last, batch_size),
            )
            if not rows:
                return
            for row in rows:
                yield row_to_stored(row)
            last = (rows[-1][2], rows[-1][5], rows[-1][1])

    def active_versions(self, batch_size: int = 50_000) -> Iterator[tuple[Sequence[str], Sequence[int], Sequence[str]]]:
        """Pages of the active chunks' ``(chunk_ids, versions, sensitivities)`` (keyset
        pagination on the active chunk-id index; no text read)."""
        if batch_size <= 0:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        self.init_schema()
        last = None
        while True:
            after = "" if last is None else " AND chunk_id > ?"
            rows = self.db.query(
                "SELECT chunk_id, version, sensitivity FROM narrative_chunk WHERE library_id = ? AND active = 1"
                f"{after} ORDER BY chunk_id LIMIT ?",
                (self.library_id, *(() if last is None else (last,)), batch_size),
            )
            if not rows:
                return
            ids, versions, labels = zip(*rows, strict=True)
            yield ids, versions, labels
            last = rows[-1][0]

    def iter_active_docs(self, doc_ids: Sequence[str]) -> Iterator[StoredChunk]:
        """The active chunks of many documents, a few hundred documents per query (what a
        derived index reads to catch up with a batch of changes)."""
        self.init_schema()
        wanted = list(dict.fromkeys(doc_ids))
        for start in range(0, len(wanted), _BATCH):
            part = wanted[start : start + _BATCH]
            rows = self.db.query(
                f"{SELECT_CHUNKS} WHERE library_id = ? AND active = 1 AND doc_id IN ({', '.join('?' * len(part))})"
                " ORDER BY doc_id, ordinal, chunk_id",
                (self.library_id, *part),
            )
            for row in rows:
                yield row_to_stored(row)

    def get_chunks(self, chunk_ids: Sequence[str]) -> list[StoredChunk]:
        """The active rows for ``chunk_ids`` in the order asked (one statement per 500 ids)."""
        self.init_schema()
        wanted = list(dict.fromkeys(chunk_ids))
        found: dict[str, StoredChunk] = {}
        for start in range(0, len(wanted), _BATCH):
            part = wanted[start : start + _BATCH]
            rows = self.db.query(
                f"{SELECT_CHUNKS} WHERE library_id = ? AND active = 1 AND chunk_id IN ({', '.join('?' * len(part))})",
                (self.library_id, *part),
            )
            for row in rows:
                chunk = row_to_stored(row)
                found[chunk.chunk_id] = chunk
        return [found[c] for c in chunk_ids if c in found]

    def doc_ids(self) -> list[str]:
        self.init_schema()
        rows = self.db.query(
            "SELECT DISTINCT doc_id FROM narrative_chunk WHERE library_id = ? AND active = 1 ORDER BY doc_id",
            (self.library_id,),
        )
        return [r[0] for r in rows]

    def count(self, *, include_inactive: bool = False) -> int:
        self.init_schema()
        sql = "SELECT COUNT(*) FROM narrative_chunk WHERE library_id = ?"
        if not include_inactive:
            sql += " AND active = 1"
        return int(self.db.query(sql, (self.library_id,))[0][0])

    # -- the change log (``ChangeLog``) and persistence (``PersistDir``) -------------------------
    def change_seq(self) -> int:
        self.init_schema()
        rows = self.db.query(
            "SELECT COALESCE(MAX(seq), 0) FROM narrative_change WHERE library_id = ?", (self.library_id,)
        )
        return int(rows[0][0])

    def changes_since(self, seq: int) -> tuple[int, list[str]]:
        self.init_schema()
        rows = self.db.query(
            "SELECT seq, doc_id FROM narrative_change WHERE library_id = ? AND seq > ? ORDER BY seq",
            (self.library_id, seq),
        )
        if not rows:
            return seq, []
        return int(rows[-1][0]), list(dict.fromkeys(r[1] for r in rows))

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

    # -- document ACLs (``DocumentAcls``) ------------------------------------------------------
    def acl_seq(self) -> int:
        return _acls.acl_seq(self.db, self.library_id)

    def document_acls(self) -> tuple[int, dict[str, ACL]]:
        return _acls.document_acls(self.db, self.library_id)

    def acl_changes_since(self, seq: int) -> tuple[int, dict[str, ACL]] | None:
        return _acls.acl_changes_since(self.db, self.library_id, seq)

    def set_acls(self, acls: Mapping[str, ACL], *, by: str) -> int:
        return _acls.set_acls(self.db, self.library_id, acls, by=by)

    def acl_history(self, doc_id: str | None = None, *, limit: int = 100) -> list[AclChange]:
        return _acls.acl_history(self.db, self.library_id, doc_id, limit=limit)

    def execute_read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        self.init_schema()
        return self.db.execute_read(sql, params)

    def close(self) -> None:
        if self._owns_db:
            self.db.close()
