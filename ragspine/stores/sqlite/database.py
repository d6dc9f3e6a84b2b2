"""``SQLiteDatabase``: one SQLite file (or ``:memory:``) — its connection, lock and transactions.

The constructor does no I/O: the file is opened on first use. One connection is shared by
every library's :class:`~ragspine.stores.sqlite.chunk_store.SQLiteChunkStore` (and the SQLite
embedding cache) under one re-entrant lock. WAL journal, so readers never block on a replace;
write transactions are ``BEGIN IMMEDIATE``, so two replaces of one document serialize.
``execute_read`` is the one read-only SQL entry point (an authorizer refuses anything else).
The library catalog's statements are in ``catalog.py``, the schema in ``schema.py``.
"""

from __future__ import annotations

import os
import sqlite3
import sys
import threading
from types import TracebackType
from typing import TYPE_CHECKING, Any, Sequence

from ragspine.deadline import check as check_deadline
from ragspine.deadline import expired as deadline_expired
from ragspine.errors import BackendError
from ragspine.retrieval.chunking.chunk_store import DEFAULT_LIBRARY_ID, LibraryInfo
from ragspine.stores.sqlite import catalog
from ragspine.stores.sqlite.schema import SCHEMA_VERSION, create_or_upgrade

if TYPE_CHECKING:
    from ragspine.config import Settings
    from ragspine.stores.registry import SpecContext, StoreSpec
    from ragspine.stores.sqlite.chunk_store import SQLiteChunkStore

_READ_ACTIONS = frozenset({sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_RECURSIVE})
_INTROSPECTION_PRAGMAS = frozenset({"table_info", "table_xinfo", "index_list", "index_info", "index_xinfo", "foreign_key_list"})


#: SQLite virtual-machine steps between two looks at the deadline (a few ms of work).
_PROGRESS_STEPS = 50_000


def _interrupt_past_deadline() -> int:
    """SQLite's progress handler: a non-zero answer interrupts the running statement."""
    return 1 if deadline_expired() else 0


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
    """One SQLite file (or ``:memory:``): a connection, a lock, the schema and the catalog."""

    #: The lexical index and embedding cache ``auto`` resolves to on this database.
    default_lexical_index = "memory"
    default_embedding_cache = "sqlite"

    @classmethod
    def auto_lexical_index(cls, settings: Settings) -> tuple[str, str]:
        """Always the in-process index (saved next to the file)."""
        return "memory", "in-process, saved next to the SQLite file"

    def __init__(self, db_path: str | os.PathLike[str] = ":memory:") -> None:
        self.path = os.fspath(db_path)
        self.lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self._closed = False
        self._schema_ready = False
        self.read_only = False  # opened read-only: the file or its directory is not writable

    @classmethod
    def parse(cls, value: str, context: SpecContext) -> StoreSpec:
        """A file path, or ``sqlite:///path`` (``sqlite:///`` alone: in memory)."""
        from ragspine.stores.registry import StoreSpec

        v = value.strip()
        if v.lower().startswith("sqlite:///"):
            return StoreSpec("sqlite", v[len("sqlite:///") :] or ":memory:")
        if v.lower().startswith("sqlite:"):
            from ragspine.errors import ConfigError

            raise ConfigError(f"RAGSPINE_CHUNK_STORE {value!r}: write sqlite:///path (three slashes) or a plain path")
        return StoreSpec("sqlite", os.path.expanduser(v))

    @classmethod
    def from_config(cls, spec: StoreSpec, settings: Settings) -> SQLiteDatabase:
        """The registry's factory (``RAGSPINE_CHUNK_STORE`` = a path or ``sqlite:///path``)."""
        return cls(spec.target or ":memory:")

    def __repr__(self) -> str:
        return f"SQLiteDatabase({self.path!r})"

    def describe(self) -> str:
        return f"sqlite ({self.path})"

    @property
    def conn(self) -> sqlite3.Connection:
        """The connection, opened on first use."""
        if self._conn is None:
            with self.lock:
                if self._conn is None:
                    self._conn = self._connect()
        return self._conn

    def _connect(self) -> sqlite3.Connection:
        if self._closed:
            raise BackendError(f"SQLite database {self.path!r} is closed")
        if self.path != ":memory:":
            parent = os.path.dirname(os.path.abspath(self.path))
            try:
                os.makedirs(parent, exist_ok=True)
            except OSError as exc:  # e.g. a file where the directory should be
                raise BackendError(f"cannot open SQLite database {self.path!r}: {exc}") from exc
        try:
            conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30.0)
        except sqlite3.Error as exc:
            raise BackendError(f"cannot open SQLite database {self.path!r}: {exc}") from exc
        try:  # e.g. "file is not a database": wrapped like a failed connect
            if self.path != ":memory:":
                conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
        except sqlite3.OperationalError as exc:
            conn.close()
            cannot_write = "readonly" in str(exc) or ("unable to open" in str(exc) and os.path.isfile(self.path))
            if not cannot_write:  # (a WAL file's index cannot be created next to it)
                raise BackendError(f"cannot open SQLite database {self.path!r}: {exc}") from exc
            conn = self._connect_read_only()
        except sqlite3.Error as exc:
            conn.close()
            raise BackendError(f"cannot open SQLite database {self.path!r}: {exc}") from exc
        conn.set_progress_handler(_interrupt_past_deadline, _PROGRESS_STEPS)
        return conn

    def _connect_read_only(self) -> sqlite3.Connection:
        """The file (or its directory) is not writable: open it read-only — queries work, a
        write says why it cannot. ``immutable`` when even the WAL index cannot be created."""
        from urllib.parse import quote

        uri = f"file:{quote(os.path.abspath(self.path))}"
        last: sqlite3.Error | None = None
        for flags in ("mode=ro", "mode=ro&immutable=1"):
            try:
                conn = sqlite3.connect(f"{uri}?{flags}", uri=True, check_same_thread=False, isolation_level=None, timeout=30.0)
                conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            except sqlite3.Error as exc:
                last = exc
                continue
            self.read_only = True
            return conn
        raise BackendError(f"cannot open SQLite database {self.path!r} read-only: {last}")

    def init_schema(self) -> None:
        """Create (or additively upgrade) the tables; idempotent, once per instance."""
        if self._schema_ready:
            return
        with self.lock:
            if not self._schema_ready:
                conn = self.conn
                if self.read_only:
                    (version,) = conn.execute("PRAGMA user_version").fetchone()
                    if version != SCHEMA_VERSION:
                        raise BackendError(
                            f"SQLite database {self.path!r} is read-only and its schema (version {version}) is not this"
                            f" RAGSpine's ({SCHEMA_VERSION}): run any command once with write access to upgrade it"
                        )
                    self._schema_ready = True
                    return
                try:
                    create_or_upgrade(conn)
                except sqlite3.Error as exc:
                    raise BackendError(f"cannot create the schema of SQLite database {self.path!r}: {exc}") from exc
                self._schema_ready = True

    def check(self) -> None:
        """Raise :class:`BackendError` unless the database answers."""
        self.query("SELECT 1")

    def transaction(self) -> _Transaction:
        """``with db.transaction() as cur:`` — ``BEGIN IMMEDIATE`` … ``COMMIT``, rolled back on error."""
        return _Transaction(self)

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self.lock:
            try:
                return self.conn.execute(sql, tuple(params)).fetchall()
            except sqlite3.Error as exc:
                check_deadline("a SQLite statement")  # interrupted by the deadline: say so
                raise BackendError(f"SQLite query failed: {exc}") from exc

    def execute_read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run one read-only statement; any write raises ``BackendError``."""
        with self.lock:
            conn = self.conn
            conn.execute("PRAGMA query_only=ON")
            # query_only alone lets BEGIN/SAVEPOINT (which would wedge the shared connection),
            # ATTACH and PRAGMA writes through: authorize plain reads only.
            conn.set_authorizer(_read_only_authorizer)
            try:
                return conn.execute(sql, tuple(params)).fetchall()
            except (sqlite3.Error, sqlite3.Warning) as exc:
                check_deadline("a SQLite statement")
                raise BackendError(f"read-only query refused or failed: {exc}") from exc
            finally:
                conn.set_authorizer(None if sys.version_info >= (3, 11) else _allow_all)
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                conn.execute("PRAGMA query_only=OFF")

    def close(self) -> None:
        with self.lock:
            self._closed = True
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    # -- the catalog (``catalog.py``) ----------------------------------------------------------
    def chunk_store(self, library_id: str = DEFAULT_LIBRARY_ID) -> SQLiteChunkStore:
        from ragspine.stores.sqlite.chunk_store import SQLiteChunkStore

        return SQLiteChunkStore(self, library_id=library_id)

    def ensure_library(self, library_id: str, description: str | None = None, tenant_id: str | None = None) -> LibraryInfo:
        """Create the library if new; a given ``description`` replaces the old one (SQLite keeps
        no owner: ``tenant_id`` is accepted for the catalog's common signature)."""
        return catalog.ensure_library(self, library_id, description)

    def get_library(self, library_id: str) -> LibraryInfo | None:
        return catalog.get_library(self, library_id)

    def descriptions(self, library_ids: Sequence[str]) -> dict[str, str]:
        return catalog.descriptions(self, library_ids)

    def list_libraries(self, library_ids: Sequence[str] | None = None) -> list[LibraryInfo]:
        return catalog.list_libraries(self, library_ids)

    def delete_library(self, library_id: str) -> bool:
        return catalog.delete_library(self, library_id)

    def library_profile(self, library_id: str) -> str | None:
        return catalog.library_profile(self, library_id)

    def set_library_profile(self, library_id: str, profile_json: str) -> None:
        catalog.set_library_profile(self, library_id, profile_json)


class _Transaction:
    """``with db.transaction() as cur:`` — BEGIN IMMEDIATE … COMMIT, ROLLBACK on error."""

    def __init__(self, db: SQLiteDatabase) -> None:
        self.db = db

    def __enter__(self) -> sqlite3.Cursor:
        conn = self.db.conn
        if self.db.read_only:
            raise BackendError(
                f"SQLite database {self.db.path!r} is read-only (no write access to it or its directory): this command"
                " writes; run it with write access, or on a copy"
            )
        self.db.lock.acquire()
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            self.db.lock.release()
            if "readonly" in str(exc):
                raise BackendError(f"SQLite database {self.db.path!r} is read-only: this command writes; run it with write"
                                   " access, or on a copy") from exc
            raise BackendError(f"cannot start a write transaction: {exc}") from exc
        return conn.cursor()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        conn = self.db.conn
        try:
            if exc_type is None:
                conn.execute("COMMIT")
            else:
                conn.execute("ROLLBACK")
        except sqlite3.Error as err:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise BackendError(f"SQLite write failed: {err}") from err
        finally:
            self.db.lock.release()
        if isinstance(exc, sqlite3.Error) and not isinstance(exc, sqlite3.IntegrityError):
            raise BackendError(f"SQLite write failed: {exc}") from exc
