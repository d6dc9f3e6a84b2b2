"""Engines and connection URLs for PostgreSQL (SQLAlchemy 2 over psycopg 3, pooled)."""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any

from ragspine.deadline import DeadlineExceeded, remaining
from ragspine.deadline import expired as deadline_expired
from ragspine.errors import BackendError, ConfigError, MissingDependencyError

if TYPE_CHECKING:
    import sqlalchemy as sa

_SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


def is_postgres_url(value: str) -> bool:
    return value.startswith(("postgresql://", "postgres://", "postgresql+psycopg://"))


def sqlalchemy_url(url: str) -> str:
    """``postgresql://...`` → ``postgresql+psycopg://...`` (psycopg 3)."""
    if url.startswith("postgresql+psycopg://"):
        return url
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    raise ConfigError(f"not a PostgreSQL URL: {url!r} (expected postgresql://user@host/db)")


def check_schema_name(schema: str) -> str:
    if not _SCHEMA_NAME.match(schema):
        raise ConfigError(f"PostgreSQL schema name {schema!r} must match {_SCHEMA_NAME.pattern}")
    return schema


def make_engine(url: str, *, schema: str | None = None, pool_size: int = 5, max_overflow: int = 10, **kwargs: Any) -> Any:
    """A pooled SQLAlchemy engine; ``schema`` becomes the connection's ``search_path``."""
    try:
        import sqlalchemy as sa
    except ImportError:
        raise MissingDependencyError("sqlalchemy", "pgvector", "the PostgreSQL stores") from None
    try:
        import psycopg  # noqa: F401
    except ImportError:
        raise MissingDependencyError("psycopg", "pgvector", "the PostgreSQL stores") from None
    connect_args = dict(kwargs.pop("connect_args", {}))
    if schema:
        connect_args["options"] = f"-csearch_path={check_schema_name(schema)},public"
    connect_args.setdefault("connect_timeout", 10)
    try:
        engine = sa.create_engine(
            sqlalchemy_url(url),
            pool_size=pool_size,
            max_overflow=max_overflow,
            pool_pre_ping=True,
            connect_args=connect_args,
            **kwargs,
        )
    except Exception as exc:  # bad URL syntax and the like
        raise ConfigError(f"cannot create a PostgreSQL engine for {redact(url)}: {exc}") from exc
    sa.event.listen(engine, "begin", bound_by_deadline)
    return engine


def bound_by_deadline(conn: sa.Connection) -> None:
    """At each transaction's begin: its statements may run at most the time the current
    deadline leaves (``statement_timeout``, transaction-local); nothing without a deadline."""
    left = remaining()
    if left is not None:  # rounded up, and a millisecond more: the server cancels only once the deadline has passed here too,
        # so the cancellation reads as the deadline's (wrap_error), not as a failed query
        conn.exec_driver_sql("SELECT set_config('statement_timeout', %(ms)s, true)", {"ms": str(max(1, math.ceil(left * 1000) + 1))})


def redact(url: str) -> str:
    """The URL with its password replaced by ``***``."""
    return re.sub(r"(://[^:/@]+:)[^@]*@", r"\1***@", url)


def wrap_error(exc: Exception, url: str, doing: str) -> BackendError:
    """``exc`` as a :class:`BackendError` naming the (redacted) URL — a
    :class:`DeadlineExceeded` when the statement was cancelled by the request's deadline."""
    if deadline_expired():
        return DeadlineExceeded(f"PostgreSQL {doing} at {redact(url)} ran past the request's deadline (RAGSPINE_REQUEST_TIMEOUT)")
    return BackendError(f"PostgreSQL {doing} failed at {redact(url)}: {str(exc).strip().splitlines()[0]}")
