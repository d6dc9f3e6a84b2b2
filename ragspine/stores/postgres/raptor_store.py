"""``PostgresRaptorStore``: a library's RAPTOR tree in the PostgreSQL chunk store's database.

Tables ``ragspine_raptor_tree`` and ``ragspine_raptor_node`` (``schema.py``, revision 0011),
apart from ``ragspine_chunk``: no chunk query, posting list or vector table ever holds a
synthesis node. A save is one transaction holding the library's advisory lock in shared mode
(``delete_library`` takes it exclusively) and the tree's own lock, so two saves of one
library take turns; statements are SQLAlchemy Core with bound
parameters; rows are converted by :mod:`ragspine.retrieval.raptor.codec`.
"""

from __future__ import annotations

from typing import Any

from ragspine.retrieval.chunking.chunk_store import DEFAULT_LIBRARY_ID, check_library_id
from ragspine.retrieval.raptor.base import RaptorTree, TreeInfo
from ragspine.retrieval.raptor.codec import NODE_COLUMNS, TREE_COLUMNS, info_row, node_row, row_to_info, row_to_node
from ragspine.stores.postgres.database import LOCK_LIBRARY_SQL, PostgresDatabase
from ragspine.stores.postgres.engine import redact

#: Serializes two saves of one library's tree (taken after the library's shared lock).
_LOCK_TREE_SQL = "hashtextextended(:library_id, 3)"


class PostgresRaptorStore:
    """One library's view of a :class:`PostgresDatabase` (the chunk store's, by default); a
    URL opens (and owns) its own database object."""

    def __init__(
        self, db_or_url: PostgresDatabase | str, *, library_id: str = DEFAULT_LIBRARY_ID, schema: str | None = None,
        owns_db: bool | None = None,
    ) -> None:
        self.library_id = check_library_id(library_id)
        self._owns_db = not isinstance(db_or_url, PostgresDatabase) if owns_db is None else owns_db
        self.db: PostgresDatabase = db_or_url if isinstance(db_or_url, PostgresDatabase) else PostgresDatabase(db_or_url, schema=schema)

    def __repr__(self) -> str:
        return f"PostgresRaptorStore({redact(self.db.url)!r}, schema={self.db.schema!r}, library_id={self.library_id!r})"

    def save(self, tree: RaptorTree) -> None:
        import sqlalchemy as sa

        from ragspine.stores.postgres.schema import raptor_node, raptor_tree

        if tree.info.library_id != self.library_id:
            from ragspine.errors import ConfigError

            raise ConfigError(f"a tree of library {tree.info.library_id!r} cannot be saved as {self.library_id!r}'s")
        self.db.init_schema()
        lib = self.library_id
        nodes = [node_row(lib, i, n, json_as_text=False) for i, n in enumerate(tree.nodes)]
        with self.db.transaction() as conn:
            conn.execute(sa.text(f"SELECT pg_advisory_xact_lock_shared({LOCK_LIBRARY_SQL})"), {"library_id": lib})
            conn.execute(sa.text(f"SELECT pg_advisory_xact_lock({_LOCK_TREE_SQL})"), {"library_id": lib})  # one save at a time
            conn.execute(raptor_node.delete().where(raptor_node.c.library_id == lib))
            conn.execute(raptor_tree.delete().where(raptor_tree.c.library_id == lib))
            conn.execute(raptor_tree.insert(), [info_row(tree.info, json_as_text=False)])
            if nodes:
                conn.execute(raptor_node.insert(), nodes)

    def _read(self, statement: Any) -> list[Any]:
        self.db.init_schema()
        return self.db.read(statement)

    def info(self) -> TreeInfo | None:
        import sqlalchemy as sa

        from ragspine.stores.postgres.schema import raptor_tree

        rows = self._read(sa.select(*(raptor_tree.c[c] for c in TREE_COLUMNS)).where(raptor_tree.c.library_id == self.library_id))
        return row_to_info(tuple(rows[0])) if rows else None

    def load(self) -> RaptorTree | None:
        import sqlalchemy as sa

        from ragspine.stores.postgres.schema import raptor_node

        statement = sa.select(*(raptor_node.c[c] for c in NODE_COLUMNS)).where(
            raptor_node.c.library_id == self.library_id).order_by(raptor_node.c.ordinal)
        for _ in range(3):  # the header and the nodes of one tree: read again if a save came in between
            info = self.info()
            if info is None:
                return None
            nodes = tuple(row_to_node(tuple(r)) for r in self._read(statement))
            if self.info() == info:
                return RaptorTree(info, nodes)
        from ragspine.errors import BackendError

        raise BackendError(f"library {self.library_id!r}'s RAPTOR tree changed while it was read, three times: try again")

    def delete(self) -> bool:
        import sqlalchemy as sa

        from ragspine.stores.postgres.schema import raptor_node, raptor_tree

        self.db.init_schema()
        with self.db.transaction() as conn:
            conn.execute(sa.text(f"SELECT pg_advisory_xact_lock_shared({LOCK_LIBRARY_SQL})"), {"library_id": self.library_id})
            conn.execute(raptor_node.delete().where(raptor_node.c.library_id == self.library_id))
            return bool(conn.execute(raptor_tree.delete().where(raptor_tree.c.library_id == self.library_id)).rowcount)

    def close(self) -> None:
        if self._owns_db:
            self.db.close()
