"""PostgreSQL: the database behind :class:`PostgresChunkStore` and the library catalog.

The counterpart of ``SQLiteDatabase``: one database (optionally one schema of it) holds many
libraries. The constructor does no I/O; the pooled engine is created on first use.

Schema changes happen only through ``ragspine migrate`` (the Alembic revisions in
``migrations/``): ``init_schema()`` checks once per instance that the database is at the
revision this RAGSpine needs and raises :class:`SchemaError` naming the command otherwise.
``auto_migrate=True`` (``RAGSPINE_AUTO_MIGRATE=1``, e.g. for a single service container)
upgrades instead. ``check()`` (``ragspine config``, the service's health, an ingest's
pre-check) runs the same revision check, so a database never migrated is reported with the fix
before its first use fails.

SQL passed to :meth:`PostgresDatabase.query` and :meth:`PostgresDatabase.execute_read` uses
the driver's placeholders: ``%s`` with a sequence of parameters, ``%(name)s`` with a mapping.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import threading
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Sequence

from ragspine.deadline import DeadlineExceeded
from ragspine.errors import BackendError, ConfigError, SchemaError
from ragspine.retrieval.chunking.chunk_store import (
    DEFAULT_LIBRARY_ID,
    DERIVED_KINDS,
    LibraryInfo,
    check_library_id,
)
from ragspine.stores.postgres.converters import timestamp_text
from ragspine.stores.postgres.engine import (
    check_schema_name,
    is_postgres_url,
    make_engine,
    redact,
    wrap_error,
)

if TYPE_CHECKING:
    from sqlalchemy.sql.expression import Executable

    from ragspine.config import Settings
    from ragspine.stores.postgres.chunk_store import PostgresChunkStore
    from ragspine.stores.registry import SpecContext, StoreSpec

_HINT = "is the server running, and are the URL and credentials right? (RAGSPINE_CHUNK_STORE)"

#: Advisory lock keys (64-bit, in one transaction). Order of acquisition, always:
#: library (shared by writers, exclusive by delete_library) → documents (ascending doc_id;
#: key ``hashtextextended(doc_id, hashtextextended(library_id, 0))``) → change log. The
#: writers' statements are in ``writes.py``.
LOCK_LIBRARY_SQL = "hashtextextended(:library_id, 1)"
LOCK_CHANGES_SQL = "hashtextextended(:library_id, 2)"

_LIBRARIES = """
WITH libs AS (
    SELECT library_id, description, created_at FROM ragspine_library
    UNION ALL
    SELECT DISTINCT c.library_id, '', NULL::timestamptz FROM ragspine_chunk c
    WHERE NOT EXISTS (SELECT 1 FROM ragspine_library l WHERE l.library_id = c.library_id)
), counts AS (
    SELECT library_id, COUNT(DISTINCT doc_id) AS documents, COUNT(*) AS chunks
    FROM ragspine_chunk WHERE active GROUP BY library_id
)
SELECT l.library_id, l.description, l.created_at,
       COALESCE(c.documents, 0), COALESCE(c.chunks, 0)
FROM libs l LEFT JOIN counts c ON c.library_id = l.library_id
"""
_ORDER = ' ORDER BY l.library_id COLLATE "C"'


class PostgresDatabase:
    """One PostgreSQL database (and schema): a pooled engine, the schema check, the catalog."""

    #: The lexical index and embedding cache ``auto`` resolves to on this database.
    default_lexical_index = "postgres"
    default_embedding_cache = "memory"

    @classmethod
    def auto_lexical_index(cls, settings: Settings) -> tuple[str, str]:
        """``warm`` (the in-process index, saved per host; PostgreSQL's postings answer while a
        host builds it) when ``RAGSPINE_LEXICAL_DIR`` is writable, else ``postgres``."""
        from ragspine.retrieval.lexical.warm import writable_dir

        where = settings.lexical_dir
        if writable_dir(where):
            return "warm", f"in-process, saved under {where}; PostgreSQL's postings answer while a host builds it"
        why = "RAGSPINE_LEXICAL_DIR is none" if not where else f"RAGSPINE_LEXICAL_DIR {where} is not writable"
        return "postgres", f"{why}, so BM25 runs on PostgreSQL's postings (slow past ~100k chunks: set a writable directory)"

    @classmethod
    def parse(cls, value: str, context: SpecContext) -> StoreSpec:
        from ragspine.stores.registry import StoreSpec

        return StoreSpec("postgresql", value.strip())

    @classmethod
    def from_config(cls, spec: StoreSpec, settings: Settings) -> PostgresDatabase:
        postings = settings.pg_postings == "on" or (settings.pg_postings == "auto" and settings.lexical_index != "memory")
        return cls(spec.target or "", schema=settings.pg_schema, auto_migrate=settings.auto_migrate,
                   persist_root=settings.lexical_dir, postings=postings)

    def __init__(
        self,
        url: str | None = None,
        *,
        schema: str | None = None,
        engine: Any = None,
        pool_size: int = 5,
        auto_migrate: bool = False,
        persist_root: str | None = None,
        postings: bool = True,
    ) -> None:
        if engine is None and not (isinstance(url, str) and is_postgres_url(url)):
            raise ConfigError(f"not a PostgreSQL URL: {redact(str(url))!r} (expected postgresql://user@host/db)")
        self.url: str = url or engine.url.render_as_string(hide_password=False)
        self.schema = check_schema_name(schema) if schema else None
        self.pool_size = pool_size
        self.auto_migrate = auto_migrate
        #: where derived in-process indexes of this database's libraries are saved, on this
        #: host (``RAGSPINE_LEXICAL_DIR``; ``None``: nowhere)
        self.persist_root = persist_root
        #: whether writes keep the PostgreSQL postings (``RAGSPINE_PG_POSTINGS``); off, a
        #: library written is marked incomplete for ``RAGSPINE_LEXICAL_INDEX=postgres``
        self.postings = postings
        self._engine = engine
        self._owns_engine = engine is None
        self._lock = threading.RLock()  # init_schema holds it while the engine is made
        self._schema_ready = False
        self._written = 0  # chunk rows written through this object since its last ANALYZE
        self._analyzed_rows = 0.0  # ragspine_chunk's row estimate at that ANALYZE

    def __repr__(self) -> str:
        return f"PostgresDatabase({redact(self.url)!r}, schema={self.schema!r})"

    def describe(self) -> str:
        return f"postgresql ({redact(self.url)})" + (f", schema {self.schema}" if self.schema else "")

    @property
    def engine(self) -> Any:
        """The pooled SQLAlchemy engine (created on first use; no connection until then)."""
        if self._engine is None:
            with self._lock:
                if self._engine is None:
                    self._engine = make_engine(self.url, schema=self.schema, pool_size=self.pool_size)
        return self._engine

    def error(self, exc: Exception, doing: str) -> BackendError:
        """``exc`` as a :class:`BackendError` naming the (redacted) URL, with a hint for
        connection failures."""
        import sqlalchemy as sa

        err = wrap_error(exc, self.url, doing)
        if isinstance(err, DeadlineExceeded):
            return err
        if isinstance(exc, (sa.exc.OperationalError, sa.exc.InterfaceError, sa.exc.TimeoutError)):
            err = BackendError(f"{err}; {_HINT}")
        return err

    def init_schema(self) -> None:
        """Check (once per instance) that the schema is at the head revision — or, with
        ``auto_migrate``, upgrade it there. Raises :class:`SchemaError` naming ``ragspine
        migrate`` when the database is behind (or ahead: a newer RAGSpine migrated it)."""
        if self._schema_ready:
            return
        from ragspine.stores.postgres.migrate import head_revision, upgrade

        with self._lock:
            if self._schema_ready:
                return
            try:
                if self.auto_migrate:
                    upgrade(self.url, "head", schema=self.schema)
                else:
                    current, head = self.schema_revision(), head_revision()
                    if current != head:
                        raise SchemaError(self._schema_problem(current, head))
            except BackendError:
                raise
            except Exception as exc:
                raise self.error(exc, "schema check" if not self.auto_migrate else "migration (alembic upgrade head)") from exc
            self._schema_ready = True

    def _schema_problem(self, current: str | None, head: str) -> str:
        """What is wrong with a schema at revision ``current`` (not ``head``), and the fix."""
        from ragspine.stores.postgres.migrate import known_revision

        where = redact(self.url) + (f" (schema {self.schema})" if self.schema else "")
        fix = "run `ragspine migrate" + (f" --schema {self.schema}" if self.schema else "") + "` (or set RAGSPINE_AUTO_MIGRATE=1)"
        if current is None:
            return (f"the PostgreSQL schema at {where} is missing (revision none (empty): never migrated), this RAGSpine"
                    f" needs {head}: {fix}")
        if known_revision(current):
            return f"the PostgreSQL schema at {where} is behind: at revision {current}, this RAGSpine needs {head}: {fix}"
        return (f"the PostgreSQL schema at {where} is at revision {current}, which this RAGSpine does not know (a newer RAGSpine"
                f" migrated it); this RAGSpine needs {head}: use the RAGSpine that migrated it")

    def schema_revision(self) -> str | None:
        """The Alembic revision the database is at (``None``: never migrated)."""
        import sqlalchemy as sa

        table = f'"{self.schema}".alembic_version' if self.schema else "public.alembic_version"  # a checked name
        try:
            with self.engine.connect() as conn:
                if conn.execute(sa.text("SELECT to_regclass(:t)"), {"t": table}).scalar() is None:
                    return None
                revision: str | None = conn.execute(sa.text(f"SELECT version_num FROM {table}")).scalar()
                return revision
        except sa.exc.SQLAlchemyError as exc:
            raise self.error(exc, "schema check") from exc

    #: Rows a process writes before it refreshes the planner's statistics; and then only once
    #: they are also this share of the rows the statistics knew.
    ANALYZE_AFTER_ROWS = 5000
    ANALYZE_GROWTH = 0.2

    def note_written(self, rows: int) -> bool:
        """Count rows a committed write added; past the thresholds, ANALYZE the tables a search
        plans over (``True`` when it did). Statistics taken while a library was small or absent
        make PostgreSQL plan its first queries after a bulk load as if it had one row — minutes
        per query — and autovacuum comes a minute later or not at all inside a bulk load."""
        with self._lock:
            self._written += rows
            due = self._written >= max(self.ANALYZE_AFTER_ROWS, self.ANALYZE_GROWTH * self._analyzed_rows)
            if due:
                self._written = 0
        if due:
            self.analyze()
        return due

    def analyze(self) -> None:
        """Refresh the planner's statistics of the chunk and lexical tables (failures are
        logged: they never fail the write that triggered them)."""
        import logging

        import sqlalchemy as sa

        try:
            with self.engine.begin() as conn:
                conn.exec_driver_sql("ANALYZE ragspine_chunk, ragspine_lex_posting, ragspine_lex_term, ragspine_lex_stats")
                rows = conn.execute(sa.text("SELECT reltuples FROM pg_class WHERE oid = 'ragspine_chunk'::regclass")).scalar()
            with self._lock:
                self._analyzed_rows = max(float(rows or 0), 0.0)
        except sa.exc.SQLAlchemyError as exc:
            logging.getLogger(__name__).warning("ANALYZE after a bulk write failed (%s); autovacuum will catch up", exc)

    def check(self) -> None:
        """Raise :class:`BackendError` unless the database answers, and :class:`SchemaError`
        naming ``ragspine migrate`` unless its schema is at the revision this RAGSpine needs
        (reads only; with ``auto_migrate`` a schema behind is fine: its first use upgrades it)."""
        self.query("SELECT 1")
        if not self.auto_migrate:
            self.init_schema()  # without auto_migrate: the revision check, nothing written

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        """``with db.transaction() as conn:`` — one transaction, committed on success.

        Driver errors become :class:`BackendError`, except ``IntegrityError`` and
        ``DataError`` (bad input: the caller maps them) and errors raised by the caller.
        """
        import sqlalchemy as sa

        try:
            with self.engine.begin() as conn:
                yield conn
        except (sa.exc.IntegrityError, sa.exc.DataError):
            raise
        except sa.exc.SQLAlchemyError as exc:
            raise self.error(exc, "write") from exc

    def read(self, statement: Executable, params: Mapping[str, Any] | None = None) -> list[Any]:
        """Run one SQLAlchemy statement (Core or ``text()``) and return its rows."""
        import sqlalchemy as sa

        try:
            with self.engine.connect() as conn:
                return list(conn.execute(statement, params or {}).all())
        except sa.exc.SQLAlchemyError as exc:
            raise self.error(exc, "query") from exc

    def query(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> list[tuple[Any, ...]]:
        """Run one statement of driver SQL (``%s`` placeholders) in its own transaction."""
        import sqlalchemy as sa

        try:
            with self.engine.begin() as conn, conn.connection.driver_connection.cursor() as cur:
                cur.execute(sql, _driver_params(params))  # no params: a literal % needs no escaping
                return [tuple(r) for r in cur.fetchall()] if cur.description else []
        except sa.exc.SQLAlchemyError as exc:
            raise self.error(exc, "query") from exc
        except Exception as exc:  # the driver's own errors (psycopg.Error, bad placeholders)
            raise wrap_error(exc, self.url, "query") from exc

    def execute_read(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> list[tuple[Any, ...]]:
        """Run one read-only statement; any write (or a second statement) raises BackendError.

        The statement runs alone in a ``READ ONLY`` transaction that is always rolled back
        (so ``set_config`` and the like do not outlive it), as a prepared statement (so
        ``SELECT 1; DELETE ...`` is refused), and session advisory locks it took are released.
        """
        import sqlalchemy as sa

        try:
            with self.engine.connect() as conn:
                raw = conn.connection.driver_connection
                try:
                    with raw.cursor() as cur:
                        cur.execute("SET TRANSACTION READ ONLY")
                        cur.execute(sql, _driver_params(params), prepare=True)
                        rows = [tuple(r) for r in cur.fetchall()] if cur.description else []
                except Exception as exc:
                    raise BackendError(f"read-only query refused or failed: {str(exc).strip().splitlines()[0]}") from exc
                finally:
                    raw.rollback()
                    with raw.cursor() as cur:
                        cur.execute("SELECT pg_advisory_unlock_all()")
                    raw.rollback()
                return rows
        except BackendError:
            raise
        except Exception as exc:
            if isinstance(exc, sa.exc.SQLAlchemyError):
                raise self.error(exc, "read-only query") from exc
            raise BackendError(f"read-only query failed at {redact(self.url)}: {exc}") from exc

    def close(self) -> None:
        """Close the pool's connections (an engine passed in is left to its owner)."""
        if self._engine is not None and self._owns_engine:
            self._engine.dispose()

    # -- catalog ------------------------------------------------------------------------
    def chunk_store(self, library_id: str = DEFAULT_LIBRARY_ID) -> "PostgresChunkStore":
        from ragspine.stores.postgres.chunk_store import PostgresChunkStore

        return PostgresChunkStore(self, library_id=library_id)

    def ensure_library(self, library_id: str, description: str | None = None, tenant_id: str | None = None) -> LibraryInfo:
        """Create the library if new; a given ``description`` replaces the old one. A library
        belongs to one tenant: claiming one that another tenant owns raises ConfigError."""
        import sqlalchemy as sa

        check_library_id(library_id)
        self.init_schema()
        params = {"library_id": library_id, "description": description or "", "tenant_id": tenant_id or ""}
        with self.transaction() as conn:
            conn.execute(sa.text(
                "INSERT INTO ragspine_library (library_id, description, tenant_id)"
                " VALUES (:library_id, :description, :tenant_id) ON CONFLICT (library_id) DO NOTHING"
            ), params)
            (owner,) = conn.execute(sa.text(
                "SELECT tenant_id FROM ragspine_library WHERE library_id = :library_id FOR UPDATE"
            ), params).one()
            if tenant_id and owner and owner != tenant_id:
                raise ConfigError(f"library {library_id!r} belongs to another tenant")
            if tenant_id and not owner:
                conn.execute(sa.text("UPDATE ragspine_library SET tenant_id = :tenant_id WHERE library_id = :library_id"), params)
            if description is not None:
                conn.execute(sa.text("UPDATE ragspine_library SET description = :description WHERE library_id = :library_id"), params)
        info = self.get_library(library_id)
        assert info is not None
        return info

    def library_profile(self, library_id: str) -> str | None:
        import sqlalchemy as sa

        self.init_schema()
        rows = self.read(sa.text("SELECT profile FROM ragspine_library WHERE library_id = :library_id"), {"library_id": library_id})
        return str(rows[0][0]) if rows and rows[0][0] else None

    def set_library_profile(self, library_id: str, profile_json: str) -> None:
        import sqlalchemy as sa

        check_library_id(library_id)
        self.init_schema()
        with self.transaction() as conn:
            conn.execute(sa.text(
                "INSERT INTO ragspine_library (library_id, profile) VALUES (:library_id, :profile)"
                " ON CONFLICT (library_id) DO UPDATE SET profile = EXCLUDED.profile"
            ), {"library_id": library_id, "profile": profile_json})

    def get_library(self, library_id: str) -> LibraryInfo | None:
        import sqlalchemy as sa

        self.init_schema()
        rows = self.read(sa.text(_LIBRARIES + " WHERE l.library_id = :library_id"), {"library_id": library_id})
        return _library_info(rows[0]) if rows else None

    def descriptions(self, library_ids: Sequence[str]) -> dict[str, str]:
        import sqlalchemy as sa

        self.init_schema()
        ids = list(dict.fromkeys(library_ids))
        rows = self.read(sa.text(
            "SELECT u.id, COALESCE(l.description, '') FROM unnest(CAST(:ids AS text[])) AS u(id)"
            " LEFT JOIN ragspine_library l ON l.library_id = u.id"
            " WHERE l.library_id IS NOT NULL OR EXISTS (SELECT 1 FROM ragspine_chunk c WHERE c.library_id = u.id)"
        ), {"ids": ids})
        return {r[0]: r[1] for r in rows}

    def list_libraries(self, library_ids: Sequence[str] | None = None) -> list[LibraryInfo]:
        """Every library: catalog rows, and libraries that only have chunks; with
        ``library_ids``, only those (counted alone: never the whole database)."""
        import sqlalchemy as sa

        self.init_schema()
        if library_ids is None:
            return [_library_info(row) for row in self.read(sa.text(_LIBRARIES + _ORDER))]
        ids = sorted(set(library_ids))
        if not ids:
            return []
        sql = _LIBRARIES + " WHERE l.library_id = ANY(CAST(:ids AS text[]))" + _ORDER
        return [_library_info(row) for row in self.read(sa.text(sql), {"ids": ids})]

    def persist_dir(self, library_id: str, kind: str) -> str | None:
        """Where a derived index of ``kind`` over ``library_id`` may keep its files on this host:
        ``<persist root>/<kind>/<database hash>/<library hash>/``. The database hash is of the
        server, database, user and schema; what the files reflect is checked against the change
        log (``change_marker``), so a recreated database never adopts another's files."""
        if not self.persist_root:
            return None
        from sqlalchemy.engine import make_url

        url = make_url(self.url)
        where = json.dumps([url.host, url.port, url.database, url.username, self.schema or "public"])
        db_hash = hashlib.sha256(where.encode("utf-8")).hexdigest()[:16]
        lib_hash = hashlib.sha256(library_id.encode("utf-8")).hexdigest()[:16]
        return os.path.join(self.persist_root, kind, db_hash, lib_hash)

    def postings_complete(self, library_id: str) -> bool:
        """Whether every write of ``library_id`` kept its PostgreSQL postings."""
        import sqlalchemy as sa

        self.init_schema()
        rows = self.read(sa.text("SELECT postings FROM ragspine_lex_stats WHERE library_id = :library_id"), {"library_id": library_id})
        return not rows or bool(rows[0][0])

    def rebuild_postings(self, library_id: str) -> int:
        """Rewrite ``library_id``'s PostgreSQL postings from its chunks and mark them complete
        (``ragspine migrate --rebuild-postings LIB``), holding the library's lock exclusively:
        replaces wait, searches go on. Returns the chunks indexed."""
        import sqlalchemy as sa

        from ragspine.stores.postgres.writes import rebuild_library_postings

        self.init_schema()
        with self.transaction() as conn:
            conn.execute(sa.text(f"SELECT pg_advisory_xact_lock({LOCK_LIBRARY_SQL})"), {"library_id": library_id})
            n = rebuild_library_postings(conn.connection.driver_connection, library_id)
        self.note_written(n)
        return n

    def delete_library(self, library_id: str) -> bool:
        """Delete a library's chunks, lexical index, facts, RAPTOR tree and catalog row (waits for its running
        replaces)."""
        import sqlalchemy as sa

        self.init_schema()
        params = {"library_id": library_id}
        with self.transaction() as conn:
            conn.execute(sa.text(f"SELECT pg_advisory_xact_lock({LOCK_LIBRARY_SQL})"), params)
            n_chunks = conn.execute(sa.text("DELETE FROM ragspine_chunk WHERE library_id = :library_id"), params).rowcount
            conn.execute(sa.text("DELETE FROM ragspine_lex_posting WHERE library_id = :library_id"), params)
            conn.execute(sa.text("DELETE FROM ragspine_lex_stats WHERE library_id = :library_id"), params)
            conn.execute(sa.text("DELETE FROM ragspine_lex_term WHERE library_id = :library_id"), params)
            n_facts = conn.execute(sa.text("DELETE FROM ragspine_fact WHERE library_id = :library_id"), params).rowcount
            conn.execute(sa.text("DELETE FROM ragspine_fact_source WHERE library_id = :library_id"), params)
            conn.execute(sa.text("DELETE FROM ragspine_raptor_node WHERE library_id = :library_id"), params)
            conn.execute(sa.text("DELETE FROM ragspine_raptor_tree WHERE library_id = :library_id"), params)
            conn.execute(sa.text("DELETE FROM ragspine_document_acl WHERE library_id = :library_id"), params)
            conn.execute(sa.text("DELETE FROM ragspine_acl_change WHERE library_id = :library_id"), params)
            n_lib = conn.execute(sa.text("DELETE FROM ragspine_library WHERE library_id = :library_id"), params).rowcount
            conn.execute(sa.text(f"SELECT pg_advisory_xact_lock({LOCK_CHANGES_SQL})"), params)
            conn.execute(sa.text(
                "INSERT INTO ragspine_change (library_id, doc_id, version) VALUES (:library_id, '', 0)"
            ), params)
        for kind in DERIVED_KINDS:  # this host's derived files could never be used again anyway
            saved = self.persist_dir(library_id, kind)
            if saved:
                shutil.rmtree(saved, ignore_errors=True)
        return bool(n_chunks or n_facts or n_lib)


def _library_info(row: Sequence[Any]) -> LibraryInfo:
    return LibraryInfo(row[0], row[1] or "", timestamp_text(row[2]), int(row[3]), int(row[4]))


def _driver_params(params: Sequence[Any] | Mapping[str, Any] | None) -> Any:
    if not params:
        return None  # the driver parses no placeholders
    return dict(params) if isinstance(params, Mapping) else tuple(params)
