"""PostgreSQL RAPTOR tables: revision 0011 matches ``schema.py``, goes down and up without
touching the chunks (the RaptorStore contract itself is the conformance pack's)."""

from __future__ import annotations

from ragspine.retrieval.raptor import make_raptor_store
from ragspine.stores.postgres import PostgresDatabase
from ragspine.stores.postgres.migrate import current_revision, downgrade, upgrade
from ragspine.testing.raptor_store import assert_same_tree, sample_tree
from tests.unit.stores.postgres.helpers import active, doc

RAPTOR_TABLES = {"ragspine_raptor_tree", "ragspine_raptor_node"}


def _objects(diff: object) -> list[object]:
    items = diff if isinstance(diff, list) else [diff]
    return [obj for item in items for obj in (item if isinstance(item, tuple) else (item,))]


def test_0011_is_what_schema_py_says(pg_target) -> None:
    """``alembic revision --autogenerate`` would find nothing to add for the RAPTOR tables."""
    import sqlalchemy as sa
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext

    from ragspine.stores.postgres.engine import sqlalchemy_url
    from ragspine.stores.postgres.schema import metadata

    url, schema = pg_target
    engine = sa.create_engine(sqlalchemy_url(url), connect_args={"options": f"-csearch_path={schema}"})

    def ours() -> list[object]:
        with engine.connect() as conn:
            diff = compare_metadata(MigrationContext.configure(conn), metadata)
        return [d for d in diff if RAPTOR_TABLES & {getattr(x, "name", None) for x in _objects(d)}
                or RAPTOR_TABLES & {getattr(getattr(x, "table", None), "name", None) for x in _objects(d)}]

    try:
        assert ours() == []
        with engine.begin() as conn:  # non-vacuous: a difference is seen
            conn.exec_driver_sql("DROP INDEX ragspine_raptor_node_order")
        assert ours() != []
    finally:
        engine.dispose()


def _tables(url: str, schema: str) -> set[str]:
    db = PostgresDatabase(url, schema=schema)
    try:
        return {r[0] for r in db.query("SELECT table_name::text FROM information_schema.tables WHERE table_schema = %s", [schema])}
    finally:
        db.close()


def test_0011_down_and_up_keeps_the_chunks_and_drops_only_the_trees(pg_target) -> None:
    url, schema = pg_target
    db = PostgresDatabase(url, schema=schema)
    db.chunk_store("lib").replace_doc_chunks("d", doc("d", "kept"))
    make_raptor_store("lib", database=db).save(sample_tree("lib"))
    db.close()
    downgrade(url, "0010_facts", schema=schema)
    assert current_revision(url, schema=schema) == "0010_facts"
    tables = _tables(url, schema)
    assert not RAPTOR_TABLES & tables and {"ragspine_chunk", "ragspine_fact"} <= tables
    upgrade(url, "head", schema=schema)
    again = PostgresDatabase(url, schema=schema)
    store = make_raptor_store("lib", database=again)
    assert store.info() is None  # the trees went with their tables
    assert active(again.chunk_store("lib")) == [("d#0", "kept", 1)]
    store.save(sample_tree("lib", seed=3))
    assert_same_tree(store.load(), sample_tree("lib", seed=3))
    again.close()
