"""Run the Alembic revisions of ``migrations/`` programmatically (``ragspine migrate``)."""

from __future__ import annotations

import functools
import threading
from pathlib import Path
from typing import Any

from ragspine.errors import ConfigError, MissingDependencyError


def migrations_dir() -> Path:
    """The Alembic script directory: installed as ``ragspine._migrations``, or the
    repository's ``migrations/`` when running from a checkout."""
    try:
        import ragspine._migrations as pkg  # mapped from migrations/ by pyproject.toml

        return Path(pkg.__file__).parent
    except ImportError:
        here = Path(__file__).resolve().parents[3] / "migrations"
        if (here / "env.py").exists():
            return here
        raise ConfigError("the Alembic migrations are not installed with ragspine") from None


def alembic_config(url: str, *, schema: str | None = None) -> Any:
    try:
        from alembic.config import Config
    except ImportError:
        raise MissingDependencyError("alembic", "pgvector", "ragspine migrate") from None
    cfg = Config()
    cfg.set_main_option("script_location", str(migrations_dir()))
    cfg.attributes["url"] = url
    cfg.attributes["schema"] = schema
    return cfg


#: Alembic keeps its migration context in module globals: one command at a time per process
#: (processes are serialized by the advisory lock env.py takes).
_ALEMBIC_LOCK = threading.Lock()


def upgrade(url: str, revision: str = "head", *, schema: str | None = None) -> None:
    from alembic import command

    with _ALEMBIC_LOCK:
        command.upgrade(alembic_config(url, schema=schema), revision)


@functools.lru_cache(maxsize=1)
def head_revision() -> str:
    """The newest revision of the migrations shipped with this RAGSpine."""
    try:
        from alembic.script import ScriptDirectory
    except ImportError:
        raise MissingDependencyError("alembic", "pgvector", "the PostgreSQL schema check") from None
    cfg = alembic_config("postgresql://unused")
    head = ScriptDirectory.from_config(cfg).get_current_head()
    if head is None:
        raise ConfigError("the Alembic migrations have no head revision")
    return str(head)


def known_revision(revision: str) -> bool:
    """Whether ``revision`` is one of the migrations shipped with this RAGSpine (else a newer
    RAGSpine migrated the database)."""
    from alembic.script import ScriptDirectory

    try:
        return ScriptDirectory.from_config(alembic_config("postgresql://unused")).get_revision(revision) is not None
    except Exception:  # alembic's "no such revision"
        return False


def downgrade(url: str, revision: str = "base", *, schema: str | None = None) -> None:
    from alembic import command

    with _ALEMBIC_LOCK:
        command.downgrade(alembic_config(url, schema=schema), revision)


def current_revision(url: str, *, schema: str | None = None) -> str | None:
    from alembic.runtime.migration import MigrationContext

    engine = _plain_engine(url, schema)
    try:
        with engine.connect() as conn:
            return MigrationContext.configure(conn, opts={"version_table_schema": schema}).get_current_revision()
    finally:
        engine.dispose()


def _plain_engine(url: str, schema: str | None) -> Any:
    import sqlalchemy as sa

    from ragspine.stores.postgres.engine import check_schema_name, sqlalchemy_url

    args = {"options": f"-csearch_path={check_schema_name(schema)},public"} if schema else {}
    return sa.create_engine(sqlalchemy_url(url), poolclass=sa.pool.NullPool, connect_args=args)


def migrate(url: str, *, schema: str | None = None, revision: str | None = None, down: bool = False) -> tuple[str | None, str | None]:
    """Upgrade (default ``head``) or downgrade (default ``base``); returns the revision
    ``(before, after)``. Alembic and driver errors become ``ConfigError`` / ``BackendError``."""
    from ragspine.errors import RagspineError
    from ragspine.stores.postgres.engine import wrap_error

    try:
        from alembic.util.exc import CommandError
    except ImportError:
        raise MissingDependencyError("alembic", "pgvector", "ragspine migrate") from None
    try:
        before = current_revision(url, schema=schema)
        if down:
            downgrade(url, revision or "base", schema=schema)
        else:
            upgrade(url, revision or "head", schema=schema)
        return before, current_revision(url, schema=schema)
    except RagspineError:
        raise
    except CommandError as exc:  # e.g. an unknown revision
        raise ConfigError(f"migration failed: {exc}") from exc
    except Exception as exc:
        raise wrap_error(exc, url, "migration") from exc
