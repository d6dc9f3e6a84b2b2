"""pgvector: the ``VectorStore`` role on PostgreSQL (``PgVectorStore``).

``store.py`` does the I/O; ``filters.py`` (MetadataFilter → SQL), ``converters.py`` (rows ↔
hits) and ``tables.py`` (per-model table) are pure. Import ``PgVectorStore`` from
``ragspine.stores.pgvector.store``; this package does not import SQLAlchemy by itself.
"""
