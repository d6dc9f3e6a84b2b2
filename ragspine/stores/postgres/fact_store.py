"""``PostgresFactStore``: the ``FactStore`` on PostgreSQL, one library's view of a database.

Behaves like ``SQLiteFactStore`` in every observable way; the tables are ``ragspine_fact`` and
``ragspine_fact_source`` (``schema.py``, revision 0010), the statements SQLAlchemy Core with
bound parameters. A replace is one transaction that

1. takes the library's advisory lock in shared mode (``delete_library`` takes it exclusively,
   so a library is never deleted under a running replace);
2. bumps each source's version in ``ragspine_fact_source``, in ascending ``source_doc_id``
   order — the upsert's row lock serializes two replaces of one source, and the common order
   keeps two batches from deadlocking;
3. retires the sources' active facts, checks that no key is still active in another source
   (:class:`FactClashError`), and inserts the new rows.

The partial unique index on the active keys is the last word: two sources committing the same
key concurrently fail the later one. Every read is one statement (one snapshot).
"""

from __future__ import annotations

from typing import Any, Sequence

from ragspine.errors import IngestError
from ragspine.retrieval.chunking.chunk_store import DEFAULT_LIBRARY_ID, check_library_id
from ragspine.stores.postgres.database import LOCK_LIBRARY_SQL, PostgresDatabase
from ragspine.stores.postgres.engine import redact
from ragspine.structured.base import TOTAL_CHANNEL, FactClashError, FactKey, SourceFacts, StoredFact, check_sources, open_facts
from ragspine.structured.converters import FACT_COLUMNS, INSERT_COLUMNS, fact_row, row_to_fact

_HOLDER = (
    "SELECT f.metric, f.entity, f.period, f.channel, f.source_doc_id FROM ragspine_fact f"
    " JOIN unnest(CAST(:metrics AS text[]), CAST(:entities AS text[]), CAST(:periods AS text[]), CAST(:channels AS text[]))"
    " AS k(metric, entity, period, channel)"
    " ON f.metric = k.metric AND f.entity = k.entity AND f.period = k.period AND f.channel = k.channel"
    " WHERE f.library_id = :library_id AND f.active LIMIT 1"
)


class PostgresFactStore:
    """The PostgreSQL ``FactStore``: one library's view of a :class:`PostgresDatabase` (the
    chunk store's, by default). A URL opens (and owns) its own database object (``owns_db=True``:
    ``close`` closes a database passed in, too)."""

    def __init__(
        self, db_or_url: PostgresDatabase | str, *, library_id: str = DEFAULT_LIBRARY_ID, schema: str | None = None,
        owns_db: bool | None = None,
    ) -> None:
        self.library_id = check_library_id(library_id)
        self._owns_db = not isinstance(db_or_url, PostgresDatabase) if owns_db is None else owns_db
        self.db: PostgresDatabase = db_or_url if isinstance(db_or_url, PostgresDatabase) else PostgresDatabase(db_or_url, schema=schema)

    def __repr__(self) -> str:
        return f"PostgresFactStore({redact(self.db.url)!r}, schema={self.db.schema!r}, library_id={self.library_id!r})"

    def init_schema(self) -> None:
        self.db.init_schema()

    def replace_facts(self, sources: Sequence[SourceFacts]) -> int:
        import sqlalchemy as sa
        from sqlalchemy.dialects.postgresql import insert

        from ragspine.stores.postgres.schema import fact, fact_source

        batch = check_sources(sources)
        if not batch:
            return 0
        self.init_schema()
        lib = self.library_id
        upsert = insert(fact_source)
        bump = upsert.on_conflict_do_update(
            index_elements=[fact_source.c.library_id, fact_source.c.source_doc_id],
            set_={"version": fact_source.c.version + 1, "facts": upsert.excluded.facts, "changed_at": sa.func.now()},
        ).returning(fact_source.c.version)
        try:
            with self.db.transaction() as conn:
                conn.execute(sa.text(f"SELECT pg_advisory_xact_lock_shared({LOCK_LIBRARY_SQL})"), {"library_id": lib})
                versions = {}
                for source_doc_id, facts in sorted(batch, key=lambda s: s.source_doc_id):
                    params = {"library_id": lib, "source_doc_id": source_doc_id, "version": 1, "facts": len(facts)}
                    versions[source_doc_id] = conn.execute(bump, params).scalar_one()
                conn.execute(fact.update().where(
                    fact.c.library_id == lib, fact.c.source_doc_id.in_(list(versions)), fact.c.active,
                ).values(active=False))
                keys = [f.key for _, facts in batch for f in facts]
                if keys:
                    holder = conn.execute(sa.text(_HOLDER), {
                        "library_id": lib, "metrics": [k.metric for k in keys], "entities": [k.entity for k in keys],
                        "periods": [k.period for k in keys], "channels": [k.channel for k in keys],
                    }).first()
                    if holder is not None:
                        raise FactClashError(FactKey(*holder[:4]), holder[4])
                    rows = [dict(zip(INSERT_COLUMNS, fact_row(lib, versions[s], i, f, value_as_text=False), strict=False))
                            for s, facts in batch for i, f in enumerate(facts)]
                    conn.execute(fact.insert(), rows)
        except (sa.exc.IntegrityError, sa.exc.DataError) as exc:
            detail = str(exc.orig).strip().splitlines()[0] if exc.orig is not None else str(exc)
            raise IngestError(f"cannot store the facts (another write may have stored one of these keys meanwhile): {detail}") from None
        return len(keys)

    def _select(self, *where: Any, include_restricted: bool = False) -> list[StoredFact]:
        import sqlalchemy as sa

        from ragspine.stores.postgres.schema import fact

        self.init_schema()
        clauses = [fact.c.library_id == self.library_id, *where]
        if not include_restricted:
            clauses.append(sa.func.upper(sa.func.btrim(fact.c.sensitivity, " \t\n\r")) != "RESTRICTED")
        statement = sa.select(*(fact.c[name] for name in FACT_COLUMNS)).where(*clauses).order_by(
            fact.c.source_doc_id.collate("C"), fact.c.version, fact.c.ordinal,
        )
        facts = [row_to_fact(tuple(row)) for row in self.db.read(statement)]
        return facts if include_restricted else open_facts(facts)  # a lookalike label stored before ingest folded them

    def lookup(self, metric: str, entity: str, period: str, channel: str = TOTAL_CHANNEL) -> list[StoredFact]:
        from ragspine.stores.postgres.schema import fact

        c = fact.c
        return self._select(c.active, c.metric == metric, c.entity == entity, c.period == period, c.channel == channel)

    def iter_facts(
        self, *, source_doc_id: str | None = None, include_restricted: bool = False, include_inactive: bool = False
    ) -> list[StoredFact]:
        from ragspine.stores.postgres.schema import fact

        where: list[Any] = [] if include_inactive else [fact.c.active]
        if source_doc_id is not None:
            where.append(fact.c.source_doc_id == source_doc_id)
        return self._select(*where, include_restricted=include_restricted)

    def source_ids(self) -> list[str]:
        import sqlalchemy as sa

        from ragspine.stores.postgres.schema import fact

        self.init_schema()
        column = fact.c.source_doc_id.collate("C")
        statement = sa.select(column).where(fact.c.library_id == self.library_id, fact.c.active).distinct().order_by(column)
        return [row[0] for row in self.db.read(statement)]

    def count(self, *, include_inactive: bool = False) -> int:
        import sqlalchemy as sa

        from ragspine.stores.postgres.schema import fact

        self.init_schema()
        where = [fact.c.library_id == self.library_id] + ([] if include_inactive else [fact.c.active])
        return int(self.db.read(sa.select(sa.func.count()).select_from(fact).where(*where))[0][0])

    def close(self) -> None:
        if self._owns_db:
            self.db.close()
