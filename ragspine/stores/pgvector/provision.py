"""First-use provisioning of pgvector (I/O, inside the caller's transaction).

The extension is created ``WITH SCHEMA public`` when missing (visible on the default
``search_path`` and on the one :func:`make_engine` sets); the model is registered in the
Alembic-owned ``ragspine_vector_space``; a dimension that disagrees with the registry or with
an existing table is a :class:`ConfigError`. One advisory lock serializes concurrent setups.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert as pg_insert

from ragspine.errors import BackendError, ConfigError
from ragspine.stores.pgvector.tables import table_name_for
from ragspine.stores.postgres.schema import vector_space

__all__ = ["check_available", "check_embedding_column", "provision"]

SETUP_LOCK = "ragspine-vector-space"
INSTALL_HINT = (
    "install the pgvector extension on the server (https://github.com/pgvector/pgvector; the "
    "pgvector/pgvector Docker images ship it), or choose RAGSPINE_VECTOR_STORE=memory or qdrant"
)
_EXTVERSION = sa.text("SELECT extversion FROM pg_extension WHERE extname = 'vector'")


def provision(conn: sa.Connection, *, model_id: str, dim: int, where: str, iterative: bool) -> tuple[str, str]:
    """Check the registry, ensure the extension, register the model → ``(pgvector version, table)``."""
    if conn.execute(sa.select(sa.func.to_regclass(vector_space.name))).scalar() is None:
        raise ConfigError(
            f"the {vector_space.name} table is missing at {where}: run `ragspine migrate` "
            "(or pass a postgresql:// URL and the store migrates itself)"
        )
    conn.execute(sa.select(sa.func.pg_advisory_xact_lock(sa.func.hashtext(SETUP_LOCK))))
    version = ensure_extension(conn, where)
    if iterative and _version_tuple(version) < (0, 8, 0):
        raise BackendError(
            f"pgvector {version} at {where} has no iterative index scans: run "
            "ALTER EXTENSION vector UPDATE (pgvector >= 0.8.0), or pass iterative_scan='off'"
        )
    return version, register_model(conn, model_id, dim, where)


def check_available(conn: sa.Connection, where: str) -> None:
    """Raise :class:`BackendError` (with the fix) unless the extension is installed in this
    database or can be (a read-only probe: ``ragspine config``, ``migrate``, ``/readyz`` and
    every ingest's pre-check)."""
    if conn.execute(_EXTVERSION).first() is None:
        _require_available(conn, where)


def _require_available(conn: sa.Connection, where: str) -> None:
    if conn.execute(sa.text("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")).first() is None:
        server = conn.execute(sa.text("SHOW server_version")).scalar()
        raise BackendError(
            f"pgvector is not available on the PostgreSQL {server} server at {where} "
            f"(no 'vector' extension): {INSTALL_HINT}"
        )


def ensure_extension(conn: sa.Connection, where: str) -> str:
    row = conn.execute(_EXTVERSION).first()
    if row is None:
        _require_available(conn, where)
        try:
            with conn.begin_nested():
                conn.execute(sa.text("CREATE EXTENSION IF NOT EXISTS vector WITH SCHEMA public"))
        except sa.exc.DBAPIError as exc:
            raise BackendError(
                f"cannot create the pgvector extension at {where} ({str(exc.orig).strip().splitlines()[0]}): "
                "ask a superuser to run CREATE EXTENSION vector in this database"
            ) from exc
        row = conn.execute(_EXTVERSION).one()
    if conn.execute(sa.text("SELECT to_regtype('vector')")).scalar() is None:
        raise ConfigError(
            f"pgvector is installed at {where} in a schema that is not on this connection's search_path; "
            "add that schema to search_path"
        )
    return str(row[0])


def register_model(conn: sa.Connection, model_id: str, dim: int, where: str) -> str:
    """Insert ``(model_id, dim, table)`` unless present; the registered dimension must be ``dim``."""
    conn.execute(
        pg_insert(vector_space)
        .values(model_id=model_id, dim=dim, table_name=table_name_for(model_id))
        .on_conflict_do_nothing(index_elements=["model_id"])
    )
    registered, name = conn.execute(
        sa.select(vector_space.c.dim, vector_space.c.table_name).where(vector_space.c.model_id == model_id)
    ).one()
    if registered != dim:
        raise ConfigError(
            f"embedding model {model_id!r} is registered at {where} with dimension {registered} "
            f"(table {name}), but this store was configured with dimension {dim}; vectors of "
            "different spaces are never mixed: use the model's real dimension, or another model_id"
        )
    return str(name)


def check_embedding_column(conn: sa.Connection, table_name: str, dim: int, where: str) -> None:
    declared = conn.execute(
        sa.text(
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
            "WHERE attrelid = to_regclass(quote_ident(:t)) AND attname = 'embedding' AND NOT attisdropped"
        ),
        {"t": table_name},
    ).scalar()
    if declared != f"vector({dim})":
        raise ConfigError(
            f"table {table_name} at {where} holds {declared} embeddings, not vector({dim}); "
            "the registry and the table disagree: drop the table or fix ragspine_vector_space"
        )


def _version_tuple(version: str) -> tuple[int, ...]:
    parts = []
    for part in version.split("."):
        digits = "".join(ch for ch in part if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)
