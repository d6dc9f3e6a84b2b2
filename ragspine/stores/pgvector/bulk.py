"""The bulk write path of ``PgVectorStore.upsert`` (I/O, inside the caller's transaction).

A batch of :data:`COPY_MIN` rows or more is streamed with binary ``COPY`` into a temporary
staging table (``ON COMMIT DROP``), then merged with one ``INSERT ... SELECT ... ON CONFLICT
(library_id, chunk_id) DO UPDATE``: the same upsert semantics as the row path, one
statement, all or nothing with the caller's transaction.

Inserting into a live HNSW index costs far more per row than building the index over the
loaded rows. So when a batch of at least :data:`REBUILD_MIN` rows goes into a model table
holding no more rows than the batch (a first load, typically), the load runs as: ``LOCK
TABLE ... ACCESS EXCLUSIVE`` → ``DROP INDEX`` → ``COPY`` + merge → the index's own
definition (``pg_get_indexdef``, so its ``m``/``ef_construction`` are kept) → ``ANALYZE``.
Readers of that model table wait for the load to commit (they never see it without its
index); a rollback restores the old index. A table whose HNSW index was dropped on purpose
(exact search only) is not given one.

:meth:`PgVectorStore.bulk_load` stretches the same plan over many upserts (the dense leg
refilling a large first load from the embedding cache, in batches): one transaction holds
the lock from the drop (at the first write) to the rebuild, so a failure anywhere rolls the
whole load back and restores the index.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa

from ragspine.stores.pgvector.converters import COPY_COLUMNS, copy_binary

__all__ = ["COPY_MIN", "REBUILD_MIN", "copy_upsert", "drop_index", "rebuild_pays", "restore_index"]

#: Smallest batch written with COPY + staging table (smaller ones: one multi-row INSERT).
COPY_MIN = 64
#: Smallest batch for which the HNSW index is rebuilt after the load (table rows ≤ batch).
REBUILD_MIN = 10_000
_STAGE = "ragspine_vec_stage"
_MEMORY_CAP_MB = 1024  # maintenance_work_mem for a rebuild: the graph should fit in memory


def rebuild_pays(conn: sa.Connection, table: sa.Table, n_rows: int) -> bool:
    """Whether loading ``n_rows`` should drop and rebuild the HNSW index (a short read)."""
    if n_rows < REBUILD_MIN or _index_def(conn, table) is None:
        return False
    sample = sa.select(sa.literal(1)).select_from(table).limit(n_rows + 1).subquery()
    return int(conn.execute(sa.select(sa.func.count()).select_from(sample)).scalar_one()) <= n_rows


def copy_upsert(conn: Any, table: sa.Table, rows: Sequence[Mapping[str, Any]], dim: int, *, rebuild: bool) -> None:
    """Write ``rows`` (distinct chunk ids) with COPY + merge; rebuild the index if asked."""
    from psycopg import sql

    index_def = drop_index(conn, table) if rebuild else None
    columns = sql.SQL(", ").join(map(sql.Identifier, COPY_COLUMNS))
    raw = conn.connection.driver_connection
    with raw.cursor() as cur:
        cur.execute(
            sql.SQL("CREATE TEMP TABLE {} (LIKE {} INCLUDING DEFAULTS) ON COMMIT DROP").format(
                sql.Identifier(_STAGE), sql.Identifier(table.name)
            )
        )
        with cur.copy(sql.SQL("COPY {} ({}) FROM STDIN (FORMAT BINARY)").format(sql.Identifier(_STAGE), columns)) as copy:
            for piece in copy_binary(rows, dim):
                copy.write(piece)
    stage = sa.table(_STAGE, *(sa.column(c) for c in COPY_COLUMNS))
    merge = _merge(table, stage)
    conn.execute(merge)
    conn.execute(sa.text(f"DROP TABLE {_quoted(conn, _STAGE)}"))
    if index_def is not None:
        restore_index(conn, table, index_def, len(rows), dim)


def drop_index(conn: sa.Connection, table: sa.Table) -> str | None:
    """Lock the model table (readers wait for the caller's commit) and drop its HNSW index;
    returns the index's definition (``None``: it had none, dropped on purpose)."""
    conn.execute(sa.text(f"LOCK TABLE {_quoted(conn, table.name)} IN ACCESS EXCLUSIVE MODE"))
    index_def = _index_def(conn, table)
    if index_def is not None:
        conn.execute(sa.text(f"DROP INDEX {_quoted(conn, _index_name(table))}"))
    return index_def


def restore_index(conn: sa.Connection, table: sa.Table, index_def: str, n_rows: int, dim: int) -> None:
    """Build the dropped index again over the loaded rows (its own definition), then ANALYZE."""
    memory_mb = min(_MEMORY_CAP_MB, 64 + (n_rows * (4 * dim + 600)) // 2**20)
    current = conn.execute(sa.text("SELECT pg_size_bytes(current_setting('maintenance_work_mem'))")).scalar_one()
    if memory_mb * 2**20 > current:
        conn.execute(sa.select(sa.func.set_config("maintenance_work_mem", f"{memory_mb}MB", True)))
    conn.execute(sa.text(index_def))
    conn.execute(sa.text(f"ANALYZE {_quoted(conn, table.name)}"))


def _merge(table: sa.Table, stage: Any) -> Any:
    """``INSERT INTO table (...) SELECT ... FROM stage ON CONFLICT DO UPDATE`` (the row path's upsert)."""
    from sqlalchemy.dialects.postgresql import insert as pg_insert

    stmt = pg_insert(table).from_select(list(COPY_COLUMNS), sa.select(*(stage.c[c] for c in COPY_COLUMNS)))
    return stmt.on_conflict_do_update(
        index_elements=[table.c.library_id, table.c.chunk_id],
        set_={c: stmt.excluded[c] for c in ("version", "doc_id", "sensitivity", "metadata", "embedding")},
    )


def _index_name(table: sa.Table) -> str:
    return f"{table.name}_hnsw"


def _index_def(conn: sa.Connection, table: sa.Table) -> str | None:
    """``CREATE INDEX ...`` of the table's HNSW index in this schema, or None if it has none."""
    definition: str | None = conn.execute(
        sa.text("SELECT pg_get_indexdef(to_regclass(quote_ident(:name)))"), {"name": _index_name(table)}
    ).scalar()
    return definition


def _quoted(conn: Any, name: str) -> str:
    quoted: str = conn.dialect.identifier_preparer.quote_identifier(name)
    return quoted
