"""``RAGSPINE_VECTOR_STORE=pgvector`` (or ``postgresql://...``): one pgvector engine for every library.

``pgvector`` stores vectors in the chunk store's own PostgreSQL database (sharing its pool);
a ``postgresql://`` URL names another database. Light: SQLAlchemy is imported when a store
is opened.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from ragspine.errors import BackendError, ConfigError

if TYPE_CHECKING:
    from ragspine.config import Settings
    from ragspine.stores.pgvector.store import PgVectorStore
    from ragspine.stores.postgres.database import PostgresDatabase
    from ragspine.stores.registry import SpecContext, StoreSpec


class PgVectorConnector:
    """See the module docstring."""

    @classmethod
    def parse(cls, value: str, context: SpecContext) -> StoreSpec:
        from ragspine.stores.registry import StoreSpec

        if value.strip().lower() != "pgvector":
            return StoreSpec("pgvector", value.strip())
        chunk = context.chunk_store
        if chunk is None or chunk.kind != "postgresql":
            raise ConfigError(
                "RAGSPINE_VECTOR_STORE=pgvector uses the chunk store's database, but RAGSPINE_CHUNK_STORE "
                "is not PostgreSQL; set RAGSPINE_VECTOR_STORE=postgresql://... or use a PostgreSQL chunk store"
            )
        return StoreSpec("pgvector", chunk.target)

    @classmethod
    def from_config(cls, spec: StoreSpec, settings: Settings, database: object = None) -> PgVectorConnector:
        return cls(spec, settings, database)

    def __init__(self, spec: StoreSpec, settings: Settings, database: object = None) -> None:
        self.spec = spec
        self.settings = settings
        self._shared = database if _same_database(database, spec.target) else None
        self._own: PostgresDatabase | None = None
        self._lock = threading.Lock()

    def _database(self) -> Any:
        if self._shared is not None:
            return self._shared
        with self._lock:
            if self._own is None:
                from ragspine.stores.postgres.database import PostgresDatabase

                self._own = PostgresDatabase(self.spec.target or "", schema=self.settings.pg_schema,
                                             auto_migrate=self.settings.auto_migrate)
            return self._own

    def open(self, library_id: str, *, model_id: str, dim: int) -> PgVectorStore:
        from ragspine.stores.pgvector.store import PgVectorStore

        db = self._database()
        db.init_schema()  # the schema is current (or SchemaError naming `ragspine migrate`)
        s = self.settings
        return PgVectorStore(
            db.engine, library_id=library_id, model_id=model_id, dim=dim, schema=s.pg_schema,
            exact=s.vector_exact, ef_search=s.hnsw_ef_search,
        )

    def check(self) -> None:
        """The database answers and has (or can create) the pgvector extension."""
        from ragspine.stores.pgvector.provision import check_available
        from ragspine.stores.postgres.engine import redact

        database = self._database()
        database.check()
        try:
            with database.engine.connect() as conn:
                check_available(conn, redact(database.url))
        except BackendError:
            raise
        except Exception as exc:
            raise database.error(exc, "pgvector check") from exc

    def close(self) -> None:
        if self._own is not None:
            self._own.close()


def _same_database(database: object, target: str | None) -> bool:
    from ragspine.stores.postgres.database import PostgresDatabase

    return isinstance(database, PostgresDatabase) and database.url == target
