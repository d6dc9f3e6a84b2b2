"""PostgreSQL service tables: the Alembic head (through ``0013_library_profile``) is what
``ragspine/service/schema.py`` says; 0012 goes down and up keeping the libraries, and 0013
converts a library's fourteen recipe columns into its ``profile`` JSON and back, unchanged."""

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
            conn.exec_driver_sql("ALTER TABLE ragspine_service_library DROP COLUMN profile")
        assert _diff(engine) != []
    finally:
        engine.dispose()


def test_0012_down_and_up_keeps_the_libraries(pg_target) -> None:
    url, schema = pg_target
    engine = _engine(url, schema)
    try:
        downgrade(url, "0012_library_reasoning", schema=schema)
        with engine.begin() as conn:
            conn.exec_driver_sql(
                "INSERT INTO ragspine_service_library (library_id, tenant_id, name, created_at, query_transform, corrective)"
                " VALUES ('t/lib', 't', 'lib', 0, 'hyde', true)"
            )
        downgrade(url, "0011_raptor", schema=schema)
        assert current_revision(url, schema=schema) == "0011_raptor"
        columns = {c["name"] for c in sa.inspect(engine).get_columns("ragspine_service_library", schema=schema)}
        assert not columns & set(REASONING) and "fusion_weights" in columns
        upgrade(url, "0012_library_reasoning", schema=schema)
        with engine.connect() as conn:
            row = conn.execute(sa.text("SELECT name, query_transform, corrective, raptor FROM ragspine_service_library")).one()
        assert tuple(row) == ("lib", None, None, None)  # kept; its reasoning reads as the server's again
    finally:
        engine.dispose()


OLD_ROWS = (  # (columns at 0012, the profile JSON 0013 makes of them)
    ("INSERT INTO ragspine_service_library (library_id, tenant_id, name, created_at, embedding, retrieval_mode)"
     " VALUES ('t/old', 't', 'old', 0, 'onnx', 'hybrid')",  # older than the chunking and ranking columns: their fixed defaults
     {"mode": "hybrid", "embedding": "onnx", "chunker": "default", "contextual": "none",
      "ranking": {"reranker": "none", "rerank_depth": 50, "postprocessor": "none", "fusion_weights": None}}),
    ("INSERT INTO ragspine_service_library (library_id, tenant_id, name, created_at, embedding, retrieval_mode, chunker, contextual,"
     " reranker, rerank_depth, postprocessor, fusion_weights, query_transform, corrective, query_fanout, raptor)"
     " VALUES ('t/new', 't', 'new', 0, 'none', 'economy', 'layout', 'header', 'colbert', 20, 'mmr', 'zscore', 'hyde', false, 2, true)",
     {"mode": "economy", "embedding": "none", "chunker": "layout", "contextual": "header",
      "ranking": {"reranker": "colbert", "rerank_depth": 20, "postprocessor": "mmr", "fusion_weights": "zscore"},
      "reasoning": {"transform": "hyde", "corrective": False, "fanout": 2}, "raptor": True}),
)


def test_0013_folds_the_recipe_columns_into_one_json_value_and_back(pg_target) -> None:
    import json

    url, schema = pg_target
    engine = _engine(url, schema)
    try:
        downgrade(url, "0012_library_reasoning", schema=schema)
        with engine.begin() as conn:
            for insert, _ in OLD_ROWS:
                conn.exec_driver_sql(insert)
            before = [tuple(r) for r in conn.exec_driver_sql("SELECT * FROM ragspine_service_library ORDER BY library_id")]
        upgrade(url, "head", schema=schema)
        columns = {c["name"] for c in sa.inspect(engine).get_columns("ragspine_service_library", schema=schema)}
        assert "profile" in columns and not columns & {"embedding", "reranker", "query_transform", "raptor"}
        with engine.connect() as conn:
            stored = dict(conn.execute(sa.text("SELECT library_id, profile FROM ragspine_service_library")).all())
        assert {k: json.loads(v) for k, v in stored.items()} == {"t/old": OLD_ROWS[0][1], "t/new": OLD_ROWS[1][1]}
        from ragspine.service.store import Library

        new = Library("t/new", "t", "new", "", 0.0, stored["t/new"])
        assert (new.ranking.reranker, new.reasoning["transform"], new.reasoning["decompose"], new.raptor) == ("colbert", "hyde", None, True)
        downgrade(url, "0012_library_reasoning", schema=schema)
        with engine.connect() as conn:
            after = [tuple(r) for r in conn.exec_driver_sql("SELECT * FROM ragspine_service_library ORDER BY library_id")]
        old_defaults = {"chunker": "default", "contextual": "none", "reranker": "none", "rerank_depth": 50, "postprocessor": "none"}
        # the row older than the columns comes back with the defaults its NULLs meant; the other exactly as it was
        names = [c["name"] for c in sa.inspect(engine).get_columns("ragspine_service_library", schema=schema)]
        was = {row[0]: dict(zip(names, row, strict=True)) for row in before}
        now = {row[0]: dict(zip(names, row, strict=True)) for row in after}
        assert now["t/new"] == was["t/new"]
        assert now["t/old"] == {**was["t/old"], **old_defaults}
        upgrade(url, "head", schema=schema)
    finally:
        engine.dispose()
