"""PostgreSQL service tables: the Alembic head (through ``0012_library_reasoning``) is what
``ragspine/service/schema.py`` says, and 0012 goes down and up keeping the libraries."""

from __future__ import annotations

from tests.helpers import needs

needs("sqlalchemy")

import sqlalchemy as sa

from ragspine.stores.postgres.engine import sqlalchemy_url
from ragspine.stores.postgres.migrate import current_revision, downgrade, upgrade

REASONING = ("query_transform", "decompose", "adaptive", "corrective", "query_fanout", "raptor")


def _engine(url: str, schema: str) -> sa.Engine:
    return sa.create_engine(sqlalchemy_url(url), connect_args={"options": f"-csearch_path={schema}"})


def _diff(engine: sa.Engine) -> list[object]:
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext

    from ragspine.service.schema import metadata

    service = set(metadata.tables)
    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), metadata)

    def tables(item: object) -> set[str]:
        objects = item if isinstance(item, tuple) else (item,)
        return {str(getattr(o, "name", None)) for o in objects} | {str(getattr(getattr(o, "table", None), "name", None)) for o in objects} | {
            str(o) for o in objects if isinstance(o, str)}

    return [d for d in diff if service & tables(d)]


def test_the_head_is_what_the_service_schema_says(pg_target) -> None:
    """``alembic revision --autogenerate`` would find nothing to add for the service tables."""
    url, schema = pg_target
    engine = _engine(url, schema)
    try:
        assert _diff(engine) == []
        with engine.begin() as conn:  # non-vacuous: a missing column is seen
            conn.exec_driver_sql("ALTER TABLE ragspine_service_library DROP COLUMN raptor")
        assert _diff(engine) != []
    finally:
        engine.dispose()


def test_0012_down_and_up_keeps_the_libraries(pg_target) -> None:
    url, schema = pg_target
    engine = _engine(url, schema)
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql(
                "INSERT INTO ragspine_service_library (library_id, tenant_id, name, created_at, query_transform, corrective)"
                " VALUES ('t/lib', 't', 'lib', 0, 'hyde', true)"
            )
        downgrade(url, "0011_raptor", schema=schema)
        assert current_revision(url, schema=schema) == "0011_raptor"
        columns = {c["name"] for c in sa.inspect(engine).get_columns("ragspine_service_library", schema=schema)}
        assert not columns & set(REASONING) and "fusion_weights" in columns
        upgrade(url, "head", schema=schema)
        with engine.connect() as conn:
            row = conn.execute(sa.text("SELECT name, query_transform, corrective, raptor FROM ragspine_service_library")).one()
        assert tuple(row) == ("lib", None, None, None)  # kept; its reasoning reads as the server's again
    finally:
        engine.dispose()
