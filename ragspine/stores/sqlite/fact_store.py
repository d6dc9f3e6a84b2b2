"""``SQLiteFactStore``: the zero-service default ``FactStore``, one library's view of a database.

The tables are ``structured_fact`` and ``structured_source`` of the SQLite schema
(``schema.py``); the contract is :class:`~ragspine.structured.base.FactStore`. A replace is one
``BEGIN IMMEDIATE`` transaction: bump each source's version, retire its active facts, check
that no key is still active in another source, insert the new rows. Reads are one statement.
"""

from __future__ import annotations

import os
import sqlite3
from typing import Any, Sequence

from ragspine.errors import IngestError
from ragspine.retrieval.chunking.chunk_store import DEFAULT_LIBRARY_ID, check_library_id
from ragspine.stores.sqlite.catalog import utc_now
from ragspine.stores.sqlite.database import SQLiteDatabase
from ragspine.structured.base import TOTAL_CHANNEL, FactClashError, FactKey, SourceFacts, StoredFact, check_sources, open_facts
from ragspine.structured.converters import FACT_COLUMNS, INSERT_COLUMNS, fact_row, row_to_fact

_SELECT = "SELECT " + ", ".join(FACT_COLUMNS) + " FROM structured_fact"
_ORDER = " ORDER BY source_doc_id, version, ordinal"
#: The SQL half of "RESTRICTED": what ingest stores; a lookalike label stored before ingest
#: folded labels is dropped by :func:`open_facts` (the Python half) after the statement.
_RESTRICTED = "upper(trim(sensitivity, ' ' || char(9, 10, 13))) = 'RESTRICTED'"
_INSERT = f"INSERT INTO structured_fact ({', '.join(INSERT_COLUMNS)}, ingested_at) VALUES ({', '.join('?' * len(INSERT_COLUMNS))}, ?)"
_BUMP = (
    "INSERT INTO structured_source (library_id, source_doc_id, version, facts, changed_at) VALUES (?, ?, 1, ?, ?)"
    " ON CONFLICT (library_id, source_doc_id) DO UPDATE SET version = version + 1, facts = excluded.facts,"
    " changed_at = excluded.changed_at RETURNING version"
)
_HOLDER = (
    "SELECT source_doc_id FROM structured_fact WHERE library_id = ? AND active = 1"
    " AND metric = ? AND entity = ? AND period = ? AND channel = ? LIMIT 1"
)


class SQLiteFactStore:
    """The default ``FactStore``: one library's view of a :class:`SQLiteDatabase` (shared with
    the chunk store of the same file); ``SQLiteFactStore("facts.db")`` opens and owns the file
    (``owns_db=True``: ``close`` closes a database passed in, too)."""

    def __init__(
        self, db: SQLiteDatabase | str | os.PathLike[str] = ":memory:", *, library_id: str = DEFAULT_LIBRARY_ID,
        owns_db: bool | None = None,
    ) -> None:
        self.library_id = check_library_id(library_id)
        self._owns_db = not isinstance(db, SQLiteDatabase) if owns_db is None else owns_db
        self.db = db if isinstance(db, SQLiteDatabase) else SQLiteDatabase(db)

    def __repr__(self) -> str:
        return f"SQLiteFactStore({self.db.path!r}, library_id={self.library_id!r})"

    def init_schema(self) -> None:
        self.db.init_schema()

    def replace_facts(self, sources: Sequence[SourceFacts]) -> int:
        batch = check_sources(sources)
        if not batch:
            return 0
        self.init_schema()
        now = utc_now()
        lib = self.library_id
        with self.db.transaction() as cur:
            versions = {}
            for source_doc_id, facts in batch:
                (versions[source_doc_id],) = cur.execute(_BUMP, (lib, source_doc_id, len(facts), now)).fetchone()
                cur.execute("UPDATE structured_fact SET active = 0 WHERE library_id = ? AND source_doc_id = ? AND active = 1",
                            (lib, source_doc_id))
            rows: list[tuple[Any, ...]] = []
            for source_doc_id, facts in batch:
                for ordinal, fact in enumerate(facts):
                    holder = cur.execute(_HOLDER, (lib, *fact.key)).fetchone()
                    if holder:  # retired above if it were in the batch: another source holds the key
                        raise FactClashError(fact.key, holder[0])
                    rows.append((*fact_row(lib, versions[source_doc_id], ordinal, fact, value_as_text=True), now))
            try:
                cur.executemany(_INSERT, rows)
            except sqlite3.IntegrityError as exc:
                raise IngestError(f"cannot store the facts: {exc}") from None
        return len(rows)

    def lookup(self, metric: str, entity: str, period: str, channel: str = TOTAL_CHANNEL) -> list[StoredFact]:
        self.init_schema()
        key = FactKey(metric, entity, period, channel)
        rows = self.db.query(
            f"{_SELECT} WHERE library_id = ? AND active = 1 AND metric = ? AND entity = ? AND period = ? AND channel = ?"
            f" AND NOT ({_RESTRICTED}){_ORDER}", (self.library_id, *key),
        )
        return open_facts(row_to_fact(r) for r in rows)

    def iter_facts(
        self, *, source_doc_id: str | None = None, include_restricted: bool = False, include_inactive: bool = False
    ) -> list[StoredFact]:
        self.init_schema()
        clauses, params = ["library_id = ?"], [self.library_id]
        if not include_inactive:
            clauses.append("active = 1")
        if not include_restricted:
            clauses.append(f"NOT ({_RESTRICTED})")
        if source_doc_id is not None:
            clauses.append("source_doc_id = ?")
            params.append(source_doc_id)
        rows = self.db.query(f"{_SELECT} WHERE {' AND '.join(clauses)}{_ORDER}", params)
        facts = [row_to_fact(r) for r in rows]
        return facts if include_restricted else open_facts(facts)

    def source_ids(self) -> list[str]:
        self.init_schema()
        rows = self.db.query(
            "SELECT DISTINCT source_doc_id FROM structured_fact WHERE library_id = ? AND active = 1 ORDER BY source_doc_id",
            (self.library_id,),
        )
        return [r[0] for r in rows]

    def count(self, *, include_inactive: bool = False) -> int:
        self.init_schema()
        sql = "SELECT COUNT(*) FROM structured_fact WHERE library_id = ?" + ("" if include_inactive else " AND active = 1")
        return int(self.db.query(sql, (self.library_id,))[0][0])

    def close(self) -> None:
        if self._owns_db:
            self.db.close()
