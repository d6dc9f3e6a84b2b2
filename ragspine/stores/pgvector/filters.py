"""Kept import path: the JSONB filter translation is PostgreSQL's (``stores/postgres/filters.py``)."""

from ragspine.stores.postgres.filters import (
    HANDLERS,
    condition_clause,
    filter_clause,
    pg_storable,
    storable_bound,
)

__all__ = ["HANDLERS", "condition_clause", "filter_clause", "pg_storable", "storable_bound"]
