"""``PostgresChunkStore``: the versioned ``ChunkStore`` on PostgreSQL, one library's view.

Behaves like ``SQLiteChunkStore`` in every observable way (versions, retirement, filters,
ordering, change log, errors). Concurrency is PostgreSQL's own:

* ``replace_doc_chunks`` is one transaction. It first takes transaction-scoped advisory
  locks — the library's in shared mode (``delete_library`` takes it exclusively), then the
  document's, a 64-bit hash of ``(library_id, doc_id)`` — so two replaces of one document
  serialize and each sees the other's version; replaces of different documents run in
  parallel. The change row is appended last, under a per-library lock held until commit,
  so change sequence numbers of one library are assigned in commit order and a follower
  reading ``changes_since`` never skips a change that commits later.
* Every read is one statement (one snapshot): a reader sees the old version or the new one,
  never both or neither. ``iter_active`` pages with one statement per page.
"""

from __future__ import annotations

from typing import Any, Iterator, Sequence

from ragspine.errors import IngestError
from ragspine.retrieval.chunking.chunk_store import (
    DEFAULT_LIBRARY_ID,
    StoredChunk,
    check_library_id,
    check_replace_input,
)
from ragspine.retrieval.chunking.chunking import Chunk
from ragspine.retrieval.metadata import STANDARD_FIELDS
from ragspine.stores.postgres.converters import (
    CHUNK_COLUMNS,
    chunk_to_row,
    nul_field,
    row_to_stored,
)
from ragspine.stores.postgres.database import (
    LOCK_CHANGES_SQL,
    LOCK_DOC_SQL,
    LOCK_LIBRARY_SQL,
    PostgresDatabase,
)
from ragspine.stores.postgres.engine import redact

_SELECT = "SELECT " + ", ".join(CHUNK_COLUMNS) + " FROM ragspine_chunk"
_ORDER = ' ORDER BY doc_id COLLATE "C", ordinal, version, chunk_id COLLATE "C"'
#: A standard field as ``iter_chunks`` compares it: the metadata value as SQLite's text
#: column holds it (``str(value)``: ``True`` → ``'True'``, missing or null → ``''``).
_FIELD_TEXT = (
    "CASE jsonb_typeof(metadata -> CAST(:{k} AS text))"
    " WHEN 'boolean' THEN initcap(metadata ->> CAST(:{k} AS text))"
    " ELSE COALESCE(metadata ->> CAST(:{k} AS text), '') END"
)

_LOCK = f"SELECT pg_advisory_xact_lock_shared({LOCK_LIBRARY_SQL}), pg_advisory_xact_lock({LOCK_DOC_SQL})"
_CURRENT_VERSION = (  # a retirement writes no rows: count it from the change log
    "SELECT GREATEST("
    " COALESCE((SELECT MAX(version) FROM ragspine_chunk WHERE library_id = :library_id AND doc_id = :doc_id), 0),"
    " COALESCE((SELECT MAX(version) FROM ragspine_change WHERE library_id = :library_id AND doc_id = :doc_id), 0))"
)
_CLASH = (  # a chunk id names one active chunk per library
    "SELECT chunk_id, doc_id FROM ragspine_chunk WHERE library_id = :library_id AND active"
    " AND doc_id <> :doc_id AND chunk_id = ANY(CAST(:ids AS text[])) LIMIT 1"
)
_RETIRE = "UPDATE ragspine_chunk SET active = false WHERE library_id = :library_id AND doc_id = :doc_id AND active"
_INSERT_COLUMNS = [c for c in CHUNK_COLUMNS if c not in ("metadata", "ingested_at")]
_INSERT = (
    f"INSERT INTO ragspine_chunk ({', '.join(_INSERT_COLUMNS)}, metadata)"
    f" VALUES ({', '.join(':' + c for c in _INSERT_COLUMNS)}, CAST(:metadata_json AS jsonb))"
)
_LOCK_CHANGES = f"SELECT pg_advisory_xact_lock({LOCK_CHANGES_SQL})"
_CHANGE = "INSERT INTO ragspine_change (library_id, doc_id, version) VALUES (:library_id, :doc_id, :version)"


class PostgresChunkStore:
    """The PostgreSQL ``ChunkStore``: one library's view of a :class:`PostgresDatabase`.

    ``PostgresChunkStore("postgresql://...", library_id="lib")`` opens (and owns) its own
    database object; passing a ``PostgresDatabase`` shares its pool between libraries.
    """

    def __init__(self, db_or_url: PostgresDatabase | str, *, library_id: str = DEFAULT_LIBRARY_ID, schema: str | None = None) -> None:
        self.library_id = check_library_id(library_id)
        self._owns_db = not isinstance(db_or_url, PostgresDatabase)
        self.db = PostgresDatabase(db_or_url, schema=schema) if self._owns_db else db_or_url  # type: ignore[arg-type]

    def __repr__(self) -> str:
        return f"PostgresChunkStore({redact(self.db.url)!r}, schema={self.db.schema!r}, library_id={self.library_id!r})"

    def init_schema(self) -> None:
        self.db.init_schema()

    def replace_doc_chunks(self, doc_id: str, chunks: Sequence[Chunk], valid_as_of: str = "") -> int:
        import sqlalchemy as sa

        chunks = list(chunks)
        check_replace_input(doc_id, chunks)
        for chunk in chunks:
            bad = nul_field(chunk)
            if bad:
                raise IngestError(f"chunk {chunk.chunk_id!r}: {bad} contains a NUL character, which PostgreSQL cannot store")
        self.init_schema()
        key = {"library_id": self.library_id, "doc_id": doc_id}
        try:
            with self.db.transaction() as conn:
                conn.execute(sa.text(_LOCK), key)
                version = int(conn.execute(sa.text(_CURRENT_VERSION), key).scalar_one()) + 1
                clash = conn.execute(sa.text(_CLASH), {**key, "ids": [c.chunk_id for c in chunks]}).first()
                if clash:
                    raise IngestError(f"chunk_id {clash[0]!r} is already active in doc {clash[1]!r}")
                conn.execute(sa.text(_RETIRE), key)
                if chunks:
                    rows = [chunk_to_row(c, library_id=self.library_id, version=version, valid_as_of=valid_as_of) for c in chunks]
                    conn.execute(sa.text(_INSERT), rows)
                conn.execute(sa.text(_LOCK_CHANGES), key)  # held until commit: seq order = commit order
                conn.execute(sa.text(_CHANGE), {**key, "version": version})
        except (sa.exc.IntegrityError, sa.exc.DataError) as exc:
            # e.g. a concurrent replace of another document made one of these ids active
            detail = str(getattr(exc, "orig", exc)).strip().splitlines()[0]
            raise IngestError(f"cannot store the chunks of {doc_id!r}: {detail}") from None
        return len(chunks)

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
        import sqlalchemy as sa

        self.init_schema()
        clauses = ["library_id = :library_id"]
        params: dict[str, Any] = {"library_id": self.library_id}
        if not include_inactive:
            clauses.append("active")
        if doc_id is not None:
            clauses.append("doc_id = :doc_id")
            params["doc_id"] = doc_id
        values = dict(zip(STANDARD_FIELDS, (topic, entity, geography, period, language)))
        for i, (name, value) in enumerate(values.items()):
            if value is not None:  # field names and values are both bound, never interpolated
                clauses.append(_FIELD_TEXT.format(k=f"f{i}") + f" = :v{i}")
                params[f"f{i}"], params[f"v{i}"] = name, value
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

    def execute_read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """One read-only statement with ``%s`` placeholders (see ``PostgresDatabase``)."""
        self.init_schema()
        return self.db.execute_read(sql, params)

    def close(self) -> None:
        if self._owns_db:
            self.db.close()
