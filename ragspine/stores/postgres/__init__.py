"""PostgreSQL: the versioned ChunkStore and library catalog (SQLAlchemy 2 + psycopg 3)."""
