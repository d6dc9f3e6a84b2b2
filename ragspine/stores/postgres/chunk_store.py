"""``PostgresChunkStore``: the versioned ``ChunkStore`` on PostgreSQL, one library's view.

Behaves like ``SQLiteChunkStore`` in every observable way (versions, retirement, filters,
ordering, change log, errors). Concurrency is PostgreSQL's own:

* ``replace_doc_chunks`` and ``replace_many`` share one write path (``writes.py``): one
  transaction that first takes transaction-scoped advisory locks — the library's in shared
  mode (``delete_library`` takes it exclusively), then each document's, a 64-bit hash of
  ``(library_id, doc_id)``, in ascending ``doc_id`` order — so two replaces of one document
  serialize and each sees the other's version, batches never deadlock with each other or
  with single replaces, and replaces of different documents run in parallel. Rows and
  postings go in with COPY. The change rows are appended last, under a per-library lock held
  until commit, so change sequence numbers of one library are assigned in commit order and a
  follower reading ``changes_since`` never skips a change that commits later.
* The same transaction keeps the lexical index (postings, per-library statistics) that
  :class:`~ragspine.stores.postgres.lexical.PostgresLexicalIndex` reads: what a reader sees
  committed is what it can search.
* Every read is one statement (one snapshot): a reader sees the old version or the new one,
  never both or neither. ``iter_active`` pages with one statement per page.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Sequence

from ragspine.errors import IngestError
from ragspine.retrieval.chunking.chunk_store import (
    DEFAULT_LIBRARY_ID,
    DocumentChunks,
    StoredChunk,
    check_library_id,
)
from ragspine.retrieval.chunking.chunking import Chunk
from ragspine.stores.postgres.converters import CHUNK_COLUMNS, pg_storable, row_to_stored
from ragspine.stores.postgres.database import PostgresDatabase
from ragspine.stores.postgres.engine import redact

if TYPE_CHECKING:
    from ragspine.retrieval.chunking.chunk_store import AclChange
    from ragspine.security.principals import ACL

_SELECT = "SELECT " + ", ".join(CHUNK_COLUMNS) + " FROM ragspine_chunk"
_ORDER = ' ORDER BY doc_id COLLATE "C", ordinal, version, chunk_id COLLATE "C"'

_FINGERPRINTS = (  # the latest change of each document, if the document has active rows
    "SELECT DISTINCT ON (g.doc_id) g.doc_id, g.fingerprint FROM ragspine_change g"
    " WHERE g.library_id = :library_id AND g.doc_id = ANY(CAST(:doc_ids AS text[]))"
    " AND EXISTS (SELECT 1 FROM ragspine_chunk c WHERE c.library_id = g.library_id AND c.doc_id = g.doc_id"
    " AND c.version = g.version AND c.active)"
    " ORDER BY g.doc_id, g.seq DESC"
)


class PostgresChunkStore:
    """The PostgreSQL ``ChunkStore``: one library's view of a :class:`PostgresDatabase`.

    ``PostgresChunkStore("postgresql://...", library_id="lib")`` opens (and owns) its own
    database object; passing a ``PostgresDatabase`` shares its pool between libraries.
    """

    def __init__(self, db_or_url: PostgresDatabase | str, *, library_id: str = DEFAULT_LIBRARY_ID, schema: str | None = None) -> None:
        self.library_id = check_library_id(library_id)
        self._owns_db = not isinstance(db_or_url, PostgresDatabase)
        self.db: PostgresDatabase = db_or_url if isinstance(db_or_url, PostgresDatabase) else PostgresDatabase(db_or_url, schema=schema)

    def __repr__(self) -> str:
        return f"PostgresChunkStore({redact(self.db.url)!r}, schema={self.db.schema!r}, library_id={self.library_id!r})"

    def init_schema(self) -> None:
        self.db.init_schema()

    #: How a replace inserts rows: ``"copy"`` (default) or ``"executemany"`` (benchmarks).
    bulk_method = "copy"

    def replace_doc_chunks(self, doc_id: str, chunks: Sequence[Chunk], valid_as_of: str = "") -> int:
        return self.replace_many([DocumentChunks(doc_id, chunks, valid_as_of)])

    def replace_many(self, docs: Sequence[DocumentChunks]) -> int:
        """Versioned replace of every document in one transaction: all of it becomes visible
        at commit, or none of it (a bad document raises ``IngestError`` and nothing of the
        batch is written). A ``doc_id`` may appear once per batch. Returns rows written."""
        import psycopg

        from ragspine.retrieval.chunking.chunk_store import check_batch
        from ragspine.stores.postgres.writes import replace_batch

        batch = check_batch(docs)
        if not batch:
            return 0
        self.init_schema()
        try:
            with self.db.transaction() as conn, conn.connection.driver_connection.cursor() as cur:
                written = replace_batch(cur, self.library_id, batch, bulk=self.bulk_method, keep_postings=self.db.postings)
        except (psycopg.IntegrityError, psycopg.DataError) as exc:
            # e.g. a concurrent replace of another document made one of these ids active
            detail = str(exc).strip().splitlines()[0]
            what = repr(batch[0].doc_id) if len(batch) == 1 else f"{len(batch)} documents"
            raise IngestError(f"cannot store the chunks of {what}: {detail}") from None
        except psycopg.Error as exc:
            raise self.db.error(exc, "write") from exc
        self.db.note_written(written)  # a bulk load refreshes the planner's statistics
        return written

    def fingerprints(self, doc_ids: Sequence[str]) -> dict[str, str]:
        """``{doc_id: fingerprint}`` recorded by the latest replace of each *active* document
        among ``doc_ids`` (a retired or unknown document, or one last written before
        fingerprints were recorded, is absent: it is never "already current")."""
        import sqlalchemy as sa

        wanted = sorted({d for d in doc_ids if isinstance(d, str) and d and "\x00" not in d})
        if not wanted:
            return {}
        self.init_schema()
        rows = self.db.read(sa.text(_FINGERPRINTS), {"library_id": self.library_id, "doc_ids": wanted})
        return {doc_id: fp for doc_id, fp in rows if fp}

    def iter_chunks(self, *, doc_id: str | None = None, include_inactive: bool = False) -> list[StoredChunk]:
        import sqlalchemy as sa

        self.init_schema()
        clauses = ["library_id = :library_id"]
        params: dict[str, Any] = {"library_id": self.library_id}
        if not include_inactive:
            clauses.append("active")
        if doc_id is not None:
            clauses.append("doc_id = :doc_id")
            params["doc_id"] = doc_id
        rows = self.db.read(sa.text(f"{_SELECT} WHERE {' AND '.join(clauses)}{_ORDER}"), params)
        return [row_to_stored(row) for row in rows]

    def iter_active(self, batch_size: int = 5000) -> Iterator[StoredChunk]:
        """All active chunks, streamed in pages of ``batch_size`` (keyset pagination on
        ``(doc_id, ordinal, chunk_id)`` in the column collation, so the index serves it)."""
        import sqlalchemy as sa

        if batch_size <= 0:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        self.init_schema()
        statement = sa.text(
            f"{_SELECT} WHERE library_id = :library_id AND active"
            " AND (doc_id, ordinal, chunk_id) > (:doc_id, :ordinal, :chunk_id)"
            " ORDER BY doc_id, ordinal, chunk_id LIMIT :limit"
        )
        last: dict[str, Any] = {"doc_id": "", "ordinal": -(2**31), "chunk_id": ""}
        while True:
            rows = self.db.read(statement, {"library_id": self.library_id, **last, "limit": batch_size})
            if not rows:
                return
            for row in rows:
                yield row_to_stored(row)
            tail = row_to_stored(rows[-1])
            last = {"doc_id": tail.doc_id, "ordinal": tail.ordinal, "chunk_id": tail.chunk_id}

    def active_versions(self, batch_size: int = 50_000) -> Iterator[tuple[Sequence[str], Sequence[int], Sequence[str]]]:
        """Pages of the active chunks' ``(chunk_ids, versions, sensitivities)``, by chunk id in
        the column collation (keyset pagination that the active chunk-id index serves; no text
        read). Each page is one row of three arrays, parsed by the driver, not a row per chunk."""
        if batch_size <= 0:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        self.init_schema()
        last: str | None = None
        while True:
            after = "" if last is None else " AND chunk_id > %(last)s"
            rows = self.db.query(
                "SELECT array_agg(chunk_id ORDER BY chunk_id), array_agg(version ORDER BY chunk_id),"
                " array_agg(sensitivity ORDER BY chunk_id) FROM (SELECT chunk_id, version, sensitivity FROM ragspine_chunk"
                f" WHERE library_id = %(library_id)s AND active{after} ORDER BY chunk_id LIMIT %(limit)s) AS page",
                {"library_id": self.library_id, "limit": batch_size, "last": last},
            )
            ids, versions, labels = rows[0] if rows else (None, None, None)
            if not ids:
                return
            yield ids, versions, labels
            last = ids[-1]

    def iter_active_docs(self, doc_ids: Sequence[str]) -> Iterator[StoredChunk]:
        """The active chunks of many documents (one statement per 500 documents)."""
        import sqlalchemy as sa

        self.init_schema()
        wanted = sorted({d for d in doc_ids if isinstance(d, str) and pg_storable(d)})
        statement = sa.text(
            f"{_SELECT} WHERE library_id = :library_id AND active AND doc_id = ANY(CAST(:doc_ids AS text[]))" + _ORDER
        )
        for start in range(0, len(wanted), 500):
            rows = self.db.read(statement, {"library_id": self.library_id, "doc_ids": wanted[start : start + 500]})
            yield from map(row_to_stored, rows)

    def restricted_spans(self, doc_ids: Sequence[str]) -> dict[tuple[str, int], list[tuple[int, int]]]:
        """See :class:`~ragspine.retrieval.chunking.chunk_store.RestrictedSpans` (one statement)."""
        import sqlalchemy as sa

        from ragspine.retrieval.sensitivity import is_restricted
        from ragspine.stores.postgres.writes import MAYBE_RESTRICTED_SQL

        self.init_schema()
        wanted = sorted({d for d in doc_ids if isinstance(d, str) and pg_storable(d)})
        if not wanted:
            return {}
        rows = self.db.read(sa.text(
            "SELECT doc_id, version, char_start, char_end, sensitivity FROM ragspine_chunk WHERE library_id = :library_id AND active"
            f" AND doc_id = ANY(CAST(:doc_ids AS text[])) AND {MAYBE_RESTRICTED_SQL} ORDER BY char_start, char_end"
        ), {"library_id": self.library_id, "doc_ids": wanted})
        out: dict[tuple[str, int], list[tuple[int, int]]] = {}
        for doc_id, version, c0, c1, label in rows:
            if is_restricted(label):  # the SQL's superset, decided by the one folding
                out.setdefault((doc_id, int(version)), []).append((int(c0), int(c1)))
        return out

    def get_chunks(self, chunk_ids: Sequence[str]) -> list[StoredChunk]:
        """The active rows for ``chunk_ids`` in the order asked (one statement, one snapshot)."""
        import sqlalchemy as sa

        self.init_schema()
        wanted = list(dict.fromkeys(chunk_ids))
        if not wanted:
            return []
        rows = self.db.read(
            sa.text(f"{_SELECT} WHERE library_id = :library_id AND active AND chunk_id = ANY(CAST(:ids AS text[]))"),
            {"library_id": self.library_id, "ids": wanted},
        )
        found = {chunk.chunk_id: chunk for chunk in map(row_to_stored, rows)}
        return [found[c] for c in chunk_ids if c in found]

    def doc_ids(self) -> list[str]:
        import sqlalchemy as sa

        self.init_schema()
        rows = self.db.read(
            sa.text(
                "SELECT DISTINCT doc_id COLLATE \"C\" AS doc_id FROM ragspine_chunk"
                " WHERE library_id = :library_id AND active ORDER BY 1"
            ),
            {"library_id": self.library_id},
        )
        return [r[0] for r in rows]

    def count(self, *, include_inactive: bool = False) -> int:
        import sqlalchemy as sa

        self.init_schema()
        sql = "SELECT COUNT(*) FROM ragspine_chunk WHERE library_id = :library_id"
        if not include_inactive:
            sql += " AND active"
        return int(self.db.read(sa.text(sql), {"library_id": self.library_id})[0][0])

    def change_seq(self) -> int:
        import sqlalchemy as sa

        self.init_schema()
        rows = self.db.read(
            sa.text("SELECT COALESCE(MAX(seq), 0) FROM ragspine_change WHERE library_id = :library_id"),
            {"library_id": self.library_id},
        )
        return int(rows[0][0])

    def changes_since(self, seq: int) -> tuple[int, list[str]]:
        import sqlalchemy as sa

        self.init_schema()
        rows = self.db.read(
            sa.text("SELECT seq, doc_id FROM ragspine_change WHERE library_id = :library_id AND seq > :seq ORDER BY seq"),
            {"library_id": self.library_id, "seq": int(seq)},
        )
        if not rows:
            return seq, []
        return int(rows[-1][0]), list(dict.fromkeys(r[1] for r in rows))

    def change_marker(self, seq: int) -> str | None:
        """What identifies change ``seq`` of this library in this database (its document,
        version and commit time), or ``None`` if there is no such change: an index saved at
        ``seq`` checks it, so files saved from another database's history are never adopted."""
        import sqlalchemy as sa

        self.init_schema()
        rows = self.db.read(
            sa.text("SELECT doc_id, version, changed_at FROM ragspine_change WHERE library_id = :library_id AND seq = :seq"),
            {"library_id": self.library_id, "seq": int(seq)},
        )
        if not rows:
            return None
        doc_id, version, changed_at = rows[0]
        return json.dumps([int(seq), doc_id, int(version), changed_at.isoformat()], ensure_ascii=False)

    def persist_dir(self, kind: str) -> str | None:
        """Where a derived index of ``kind`` may keep its files on this host
        (``RAGSPINE_LEXICAL_DIR``, see :meth:`PostgresDatabase.persist_dir`)."""
        return self.db.persist_dir(self.library_id, kind)

    # -- document ACLs (``DocumentAcls``) ------------------------------------------------------
    def acl_seq(self) -> int:
        from ragspine.stores.postgres import acls

        return acls.acl_seq(self.db, self.library_id)

    def document_acls(self) -> tuple[int, dict[str, ACL]]:
        from ragspine.stores.postgres import acls

        return acls.document_acls(self.db, self.library_id)

    def acl_changes_since(self, seq: int) -> tuple[int, dict[str, ACL]] | None:
        from ragspine.stores.postgres import acls

        return acls.acl_changes_since(self.db, self.library_id, seq)

    def set_acls(self, acls: Mapping[str, ACL], *, by: str) -> int:
        from ragspine.stores.postgres import acls as _acls

        return _acls.set_acls(self.db, self.library_id, acls, by=by)

    def acl_history(self, doc_id: str | None = None, *, limit: int = 100) -> list[AclChange]:
        from ragspine.stores.postgres import acls

        return acls.acl_history(self.db, self.library_id, doc_id, limit=limit)

    def execute_read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """One read-only statement with ``%s`` placeholders (see ``PostgresDatabase``)."""
        self.init_schema()
        return self.db.execute_read(sql, params)

    def close(self) -> None:
        if self._owns_db:
            self.db.close()
