"""Alembic environment for RAGSpine.

The URL comes from (first found): ``config.attributes["url"]`` (``ragspine migrate``),
``-x url=...``, ``sqlalchemy.url`` in alembic.ini, or ``RAGSPINE_CHUNK_STORE``. An optional
schema (``config.attributes["schema"]`` or ``-x schema=...``) holds the tables and the
version table; it is created if missing.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context

from ragspine.service.schema import metadata as service_metadata
from ragspine.stores.postgres.engine import check_schema_name, sqlalchemy_url
from ragspine.stores.postgres.schema import metadata as store_metadata

target_metadata = [store_metadata, service_metadata]  # what `alembic revision --autogenerate` compares with

config = context.config


def _url() -> str:
    xargs = context.get_x_argument(as_dictionary=True)
    url = config.attributes.get("url") or xargs.get("url") or config.get_main_option("sqlalchemy.url")
    if not url:
        from ragspine.config import load_settings

        url = load_settings().chunk_store
    return sqlalchemy_url(url)


def _schema() -> str | None:
    schema = config.attributes.get("schema") or context.get_x_argument(as_dictionary=True).get("schema")
    return check_schema_name(schema) if schema else None


def run_migrations_offline() -> None:
    context.configure(url=_url(), target_metadata=target_metadata, literal_binds=True, version_table_schema=_schema())
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    schema = _schema()
    engine = sa.create_engine(_url(), poolclass=sa.pool.NullPool)
    with engine.connect() as connection:
        if schema:
            connection.execute(sa.text(f'CREATE SCHEMA IF NOT EXISTS "{schema}"'))
            connection.execute(sa.text(f'SET search_path TO "{schema}", public'))
            connection.commit()
        # one migrator at a time, whoever runs it (several workers may start together)
        connection.execute(sa.text("SELECT pg_advisory_lock(hashtext('ragspine-migrate'))"))
        try:
            context.configure(connection=connection, target_metadata=target_metadata, version_table_schema=schema)
            with context.begin_transaction():
                context.run_migrations()
            connection.commit()
        finally:
            connection.execute(sa.text("SELECT pg_advisory_unlock(hashtext('ragspine-migrate'))"))
            connection.commit()
    engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
