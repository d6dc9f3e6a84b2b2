"""``PgVectorStore``: the ``VectorStore`` role on PostgreSQL + pgvector (I/O only).

Pure parts live next door: ``tables.py`` (per-model table + indexes), ``filters.py``
(``MetadataFilter`` → SQL), ``converters.py`` (records ↔ rows ↔ hits).

* The constructor does no I/O. The first call checks that the schema is current (when given a
  URL: a :class:`SchemaError` naming ``ragspine migrate`` otherwise; with an engine the caller
  checked, and a missing registry is a :class:`ConfigError`), creates the ``vector``
  extension, registers ``(model_id, dim, table)`` in ``ragspine_vector_space`` and creates the
  model's table. A model id registered with another dimension is a :class:`ConfigError`:
  vector spaces are never mixed.
* Every statement is scoped ``WHERE library_id = :library_id``.
* Approximate mode (default) orders by ``embedding <=> :q`` so the HNSW index serves it, with
  ``hnsw.ef_search``, ``hnsw.iterative_scan`` (so a selective filter still fills ``top_k``) and
  optionally ``hnsw.max_scan_tuples`` set per transaction; ``relaxed_order`` may return
  slightly unordered rows, so the query fetches ``OVERFETCH * top_k`` rows, re-sorts them by
  ``(-score, id)`` and keeps ``top_k``. Whether the index or an exact scan of the library
  serves a query is the planner's choice (:meth:`explain` shows it): a library or filter
  matching few rows is cheaper to scan exactly, which is also exact.
* Bulk writes (``bulk.py``): binary ``COPY`` into a staging table + one ``INSERT ... ON
  CONFLICT``; a large first load rebuilds the HNSW index after the rows are in, also when
  it comes as many upserts (:meth:`PgVectorStore.bulk_load`).
* ``exact=True`` orders by an expression the index cannot serve (a sequential or btree scan
  and an exact top-k sort): results equal :class:`InProcessVectorStore`'s.
* Driver errors become :class:`BackendError` (with the URL's password redacted).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Collection, Iterator, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert as pg_insert

from ragspine.errors import ConfigError
from ragspine.retrieval.filtering.filters import MetadataFilter
from ragspine.retrieval.vector.vector_store import VectorHit, VectorRecord
from ragspine.stores.pgvector import bulk
from ragspine.stores.pgvector.converters import (
    is_zero,
    rank_hits,
    record_to_row,
    row_to_hit,
    unit_vector,
)
from ragspine.stores.pgvector.provision import check_embedding_column, provision
from ragspine.stores.pgvector.tables import check_dim, table_name_for, vector_table
from ragspine.stores.postgres.engine import make_engine, redact, wrap_error
from ragspine.stores.postgres.filters import filter_clause, pg_storable

__all__ = ["ITERATIVE_SCANS", "PgVectorStore"]

ITERATIVE_SCANS = ("off", "strict_order", "relaxed_order")
#: Approximate queries fetch this many times ``top_k`` rows and keep the nearest ``top_k``:
#: an iterative ``relaxed_order`` scan stops at the first rows that pass the filter, not the
#: nearest ones (recall@10 at 1 % selectivity on the HNSW path: 0.95 → 0.99, see docs/benchmarks.md).
OVERFETCH = 2


class PgVectorStore:
    """Vectors of one library in the pgvector table of one embedding model (see the module docstring).

    ``engine_or_url``: a ``postgresql://`` URL (the store builds its own pool with
    ``search_path`` = ``schema``, migrates on first use, and :meth:`close` disposes of it) or an
    SQLAlchemy ``Engine`` that is already migrated and whose ``search_path`` decides the
    schema (``schema`` is then ignored). ``ef_search`` is raised to ``top_k`` per query (at most
    1000); ``max_scan_tuples`` ``None`` keeps the server's default (20,000).
    """

    process_local = False

    def __init__(
        self,
        engine_or_url: Any,
        *,
        library_id: str,
        model_id: str,
        dim: int,
        schema: str | None = None,
        exact: bool = False,
        ef_search: int = 100,
        iterative_scan: str = "relaxed_order",
        max_scan_tuples: int | None = None,
        hnsw_m: int = 16,
        hnsw_ef_construction: int = 64,
    ) -> None:
        for what, text in (("library_id", library_id), ("model_id", model_id)):
            if not isinstance(text, str) or not text or not pg_storable(text):
                raise ConfigError(f"{what} must be a non-empty string without NUL characters, got {text!r}")
        _check_int("ef_search", ef_search, 1, 1000)
        _check_int("hnsw_m", hnsw_m, 2, 100)
        _check_int("hnsw_ef_construction", hnsw_ef_construction, 4, 1000)
        if max_scan_tuples is not None:
            _check_int("max_scan_tuples", max_scan_tuples, 1, 2**31 - 1)
        if iterative_scan not in ITERATIVE_SCANS:
            raise ConfigError(f"iterative_scan must be one of {', '.join(ITERATIVE_SCANS)}, got {iterative_scan!r}")
        self.library_id = library_id
        self.model_id = model_id
        self.dim = check_dim(dim)
        self.exact = bool(exact)
        self.ef_search = ef_search
        self.iterative_scan = iterative_scan
        self.max_scan_tuples = max_scan_tuples
        self.hnsw_m = hnsw_m
        self.hnsw_ef_construction = hnsw_ef_construction
        self.table_name = table_name_for(model_id)  # the registry's name wins once connected
        self._schema = schema
        if isinstance(engine_or_url, str):
            self._url: str | None = engine_or_url
            self._engine = make_engine(engine_or_url, schema=schema)  # no connection yet
            self._where = redact(engine_or_url)
        elif isinstance(engine_or_url, sa.engine.Engine):
            self._url = None
            self._engine = engine_or_url
            self._where = engine_or_url.url.render_as_string(hide_password=True)
        else:
            raise ConfigError(f"PgVectorStore needs a postgresql:// URL or an SQLAlchemy Engine, got {type(engine_or_url).__name__}")
        self.pgvector_version: str | None = None
        self._table: sa.Table | None = None
        self._lock = threading.Lock()
        self._bulk = threading.local()  # this thread's bulk_load: .conn, .dropped, .index_def

    def __repr__(self) -> str:
        mode = "exact" if self.exact else f"hnsw ef_search={self.ef_search} iterative_scan={self.iterative_scan}"
        return f"PgVectorStore({self._where}, library_id={self.library_id!r}, model_id={self.model_id!r}, dim={self.dim}, {mode})"

    def close(self) -> None:
        """Dispose of the connection pool if this store created it (from a URL)."""
        if self._url is not None:
            self._engine.dispose()

    # -- setup (first use) ----------------------------------------------------------------
    @contextlib.contextmanager
    def _transaction(self, doing: str) -> Iterator[Any]:
        try:
            with self._engine.begin() as conn:
                yield conn
        except (sa.exc.SQLAlchemyError, _driver_error()) as exc:
            cause = exc.orig if isinstance(exc, sa.exc.DBAPIError) and isinstance(exc.orig, Exception) else exc
            assert isinstance(cause, Exception)
            raise wrap_error(cause, self._where, doing) from exc

    def ensure_ready(self) -> sa.Table:
        """Do the first-use setup now (migrate, extension, registry, table); returns the table."""
        return self._ready()

    def _ready(self) -> sa.Table:
        table = self._table
        if table is None:
            with self._lock:
                if self._table is None:
                    self._table = self._setup()
                table = self._table
        return table

    def _setup(self) -> sa.Table:
        if self._url is not None:  # its own engine: check the schema is current (`ragspine migrate`)
            from ragspine.stores.postgres.database import PostgresDatabase

            PostgresDatabase(self._url, engine=self._engine, schema=self._schema).init_schema()
        with self._transaction("pgvector setup") as conn:
            self.pgvector_version, name = provision(
                conn, model_id=self.model_id, dim=self.dim, where=self._where,
                iterative=self.iterative_scan != "off" or self.max_scan_tuples is not None,
            )
            table = vector_table(name, self.dim, hnsw_m=self.hnsw_m, hnsw_ef_construction=self.hnsw_ef_construction)
            table.create(conn, checkfirst=True)
            check_embedding_column(conn, table.name, self.dim, self._where)
        self.table_name = name
        return table

    # -- the VectorStore role -------------------------------------------------------------
    def upsert(self, records: Sequence[VectorRecord]) -> None:
        """Insert or replace records by id, all or nothing; large batches go through COPY
        (and, loaded into a near-empty table, rebuild the HNSW index afterwards: ``bulk.py``)."""
        rows = {}
        for record in records:  # validate everything before any I/O; the last duplicate wins
            rows[record.id] = record_to_row(record, self.library_id, self.dim)
        if not rows:
            return
        table = self._ready()
        batch = list(rows.values())
        loading = getattr(self._bulk, "conn", None)
        if loading is not None:  # inside this thread's bulk_load: its transaction, no index to keep up
            if not self._bulk.dropped:  # the first write locks the table and drops the index
                self._bulk.index_def, self._bulk.dropped = bulk.drop_index(loading, table), True
            self._write(loading, table, batch, rebuild=False)
            return
        rebuild = False
        if len(batch) >= bulk.REBUILD_MIN:
            with self._transaction("pgvector bulk-load check") as conn:
                rebuild = bulk.rebuild_pays(conn, table, len(batch))
        with self._transaction("pgvector upsert") as conn:
            self._write(conn, table, batch, rebuild=rebuild)

    def _write(self, conn: Any, table: sa.Table, batch: list[dict[str, Any]], *, rebuild: bool) -> None:
        if len(batch) >= bulk.COPY_MIN:
            bulk.copy_upsert(conn, table, batch, self.dim, rebuild=rebuild)
            return
        stmt = pg_insert(table)
        stmt = stmt.on_conflict_do_update(
            index_elements=[table.c.library_id, table.c.chunk_id],
            set_={c: stmt.excluded[c] for c in ("version", "doc_id", "sensitivity", "metadata", "embedding")},
        )
        conn.execute(stmt, batch)

    @contextlib.contextmanager
    def bulk_load(self, expected: int) -> Iterator[None]:
        """This thread's upserts inside the block are one load of about ``expected`` vectors.
        Into a model table holding no more rows than that (a first load), the HNSW index is
        dropped at the first upsert and built once over the loaded rows at the end, all in one
        transaction: inserting a million vectors into a live index ran at ~480 rows/s.
        Readers of the model table wait for the load to commit, so the block should only
        write (the dense leg puts its cached vectors here, never a model's batches); an error
        anywhere rolls all of it back (the index too); a block that writes nothing locks and
        rebuilds nothing. Otherwise (a small load, a full table) upserts go as usual."""
        if expected < bulk.REBUILD_MIN or getattr(self._bulk, "conn", None) is not None:
            yield
            return
        table = self._ready()
        with self._transaction("pgvector bulk-load check") as conn:
            pays = bulk.rebuild_pays(conn, table, expected)
        if not pays:
            yield
            return
        with self._transaction("pgvector bulk load") as conn:
            self._bulk.conn, self._bulk.dropped, self._bulk.index_def = conn, False, None
            try:
                yield
            finally:
                self._bulk.conn = None
            if self._bulk.index_def is not None:
                bulk.restore_index(conn, table, self._bulk.index_def, expected, self.dim)

    def query(
        self,
        vector: Sequence[float],
        *,
        top_k: int = 10,
        where: MetadataFilter | None = None,
        ids: Collection[str] | None = None,
    ) -> list[VectorHit]:
        q = unit_vector(vector, self.dim, "query vector")
        id_list = _storable_ids(ids) if ids is not None else None
        if top_k <= 0 or id_list == []:
            return []
        stmt = self._query_statement(self._ready(), q, top_k, where, id_list)
        with self._transaction("pgvector query") as conn:
            if not self.exact:
                conn.execute(self._search_settings(top_k))
            rows = conn.execute(stmt).mappings().all()
        return rank_hits((row_to_hit(r) for r in rows), top_k)

    def explain(self, vector: Sequence[float], *, top_k: int = 10, where: MetadataFilter | None = None) -> str:
        """The server's ``EXPLAIN`` of :meth:`query` under this store's search settings (shows
        whether the HNSW index, ``<table>_hnsw``, serves the query or an exact scan does)."""
        stmt = self._query_statement(self._ready(), unit_vector(vector, self.dim, "query vector"), max(top_k, 1), where, None)
        with self._transaction("pgvector explain") as conn:
            if not self.exact:
                conn.execute(self._search_settings(top_k))
            sql = stmt.compile(conn, compile_kwargs={"literal_binds": True})
            return "\n".join(row[0] for row in conn.exec_driver_sql(f"EXPLAIN {sql}"))

    def _query_statement(
        self, table: sa.Table, q: list[float], top_k: int, where: MetadataFilter | None, ids: list[str] | None
    ) -> Any:
        """``SELECT chunk_id, distance, payload ... ORDER BY ... LIMIT top_k`` in the library."""
        chunk_order = sa.collate(table.c.chunk_id, "C")
        if is_zero(q):  # no direction: every score is 0, ties by id (as in-process)
            distance: Any = sa.null()
            order: list[Any] = [chunk_order]
        else:
            from pgvector.sqlalchemy import Vector

            vec = sa.cast(sa.bindparam("q", q, type_=Vector(self.dim)), Vector(self.dim))
            distance = table.c.embedding.cosine_distance(vec)
            if self.exact:  # the HNSW index cannot serve this ORDER BY: exact scan + top-k sort
                distance = sa.func.coalesce(sa.func.nullif(distance, sa.cast(sa.literal("NaN"), sa.Float)), 1.0)
            # approximate: "embedding <=> :q" leads, so the HNSW index serves it (ties: incremental sort)
            order = [distance, chunk_order]
        columns = (table.c.doc_id, table.c.version, table.c.sensitivity, table.c.metadata)
        return (
            sa.select(table.c.chunk_id, distance.label("distance"), *columns)
            .where(self._scope(table, where, ids))
            .order_by(*order)
            .limit(top_k if self.exact else OVERFETCH * top_k)
        )

    def _search_settings(self, top_k: int) -> Any:
        settings = {
            "hnsw.ef_search": str(min(1000, max(self.ef_search, top_k))),
            "hnsw.iterative_scan": self.iterative_scan,
        }
        if self.max_scan_tuples is not None:
            settings["hnsw.max_scan_tuples"] = str(self.max_scan_tuples)
        return sa.select(
            *(sa.func.set_config(sa.literal(k), sa.literal(v), sa.true()) for k, v in settings.items())
        )

    def _scope(self, table: sa.Table, where: MetadataFilter | None, ids: list[str] | None) -> Any:
        clauses = [table.c.library_id == self.library_id, filter_clause(table.c.metadata, where)]
        if ids is not None:
            clauses.append(table.c.chunk_id == sa.any_(_text_array(ids)))
        return sa.and_(*clauses)

    def delete(self, ids: Sequence[str] = (), *, doc_ids: Sequence[str] = ()) -> int:
        id_list, doc_list = _storable_ids(ids), _storable_ids(doc_ids)
        if not id_list and not doc_list:
            return 0
        table = self._ready()
        which = sa.or_(table.c.chunk_id == sa.any_(_text_array(id_list)), table.c.doc_id == sa.any_(_text_array(doc_list)))
        with self._transaction("pgvector delete") as conn:
            return int(conn.execute(sa.delete(table).where(table.c.library_id == self.library_id, which)).rowcount)

    def clear(self) -> int:
        table = self._ready()
        with self._transaction("pgvector clear") as conn:
            return int(conn.execute(sa.delete(table).where(table.c.library_id == self.library_id)).rowcount)

    def count(self, where: MetadataFilter | None = None) -> int:
        table = self._ready()
        with self._transaction("pgvector count") as conn:
            return int(conn.execute(sa.select(sa.func.count()).where(self._scope(table, where, None))).scalar_one())

    def versions(self, ids: Sequence[str]) -> dict[str, int]:
        id_list = _storable_ids(ids)
        if not id_list:
            return {}
        table = self._ready()
        stmt = sa.select(table.c.chunk_id, table.c.version).where(self._scope(table, None, id_list))
        with self._transaction("pgvector versions") as conn:
            return {chunk_id: int(version) for chunk_id, version in conn.execute(stmt)}


def _check_int(name: str, value: object, lo: int, hi: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ConfigError(f"{name} must be an integer in [{lo}, {hi}], got {value!r}")


def _storable_ids(ids: Collection[str] | None) -> list[str]:
    """Sorted distinct ids; ones PostgreSQL cannot store cannot be stored, so cannot match."""
    return sorted({i for i in ids or () if isinstance(i, str) and pg_storable(i)})


def _text_array(values: list[str]) -> Any:
    from sqlalchemy.dialects.postgresql import ARRAY

    return sa.bindparam(None, values, type_=ARRAY(sa.Text))


def _driver_error() -> type[BaseException]:
    try:
        import psycopg

        return psycopg.Error
    except ImportError:  # pragma: no cover - psycopg is what make_engine requires
        return sa.exc.SQLAlchemyError
