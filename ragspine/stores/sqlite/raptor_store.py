"""``SQLiteRaptorStore``: a library's RAPTOR tree in the SQLite chunk store's file.

Tables ``raptor_tree`` (one row per library: what the tree was built from) and
``raptor_node`` (its synthesis nodes) of ``schema.py`` — apart from ``narrative_chunk``, so no
chunk query, lexical index or vector store ever sees a synthesis node. A save is one
``BEGIN IMMEDIATE`` transaction (the old tree goes, the new one comes); reads are one
statement each. Rows are converted by :mod:`ragspine.retrieval.raptor.codec`.
"""

from __future__ import annotations

import os

from ragspine.retrieval.chunking.chunk_store import DEFAULT_LIBRARY_ID, check_library_id
from ragspine.retrieval.raptor.base import RaptorTree, TreeInfo
from ragspine.retrieval.raptor.codec import NODE_COLUMNS, TREE_COLUMNS, info_row, node_row, row_to_info, row_to_node
from ragspine.stores.sqlite.database import SQLiteDatabase

_INSERT_TREE = f"INSERT INTO raptor_tree ({', '.join(TREE_COLUMNS)}) VALUES ({', '.join('?' * len(TREE_COLUMNS))})"
_INSERT_NODE = f"INSERT INTO raptor_node ({', '.join(NODE_COLUMNS)}) VALUES ({', '.join('?' * len(NODE_COLUMNS))})"
_SELECT_TREE = f"SELECT {', '.join(TREE_COLUMNS)} FROM raptor_tree WHERE library_id = ?"
_SELECT_NODES = f"SELECT {', '.join(NODE_COLUMNS)} FROM raptor_node WHERE library_id = ? ORDER BY ordinal"


class SQLiteRaptorStore:
    """One library's view of a :class:`SQLiteDatabase` (the chunk store's, by default);
    ``SQLiteRaptorStore("chunks.db")`` opens and owns the file."""

    def __init__(
        self, db: SQLiteDatabase | str | os.PathLike[str] = ":memory:", *, library_id: str = DEFAULT_LIBRARY_ID,
        owns_db: bool | None = None,
    ) -> None:
        self.library_id = check_library_id(library_id)
        self._owns_db = not isinstance(db, SQLiteDatabase) if owns_db is None else owns_db
        self.db = db if isinstance(db, SQLiteDatabase) else SQLiteDatabase(db)

    def __repr__(self) -> str:
        return f"SQLiteRaptorStore({self.db.path!r}, library_id={self.library_id!r})"

    def save(self, tree: RaptorTree) -> None:
        if tree.info.library_id != self.library_id:
            from ragspine.errors import ConfigError

            raise ConfigError(f"a tree of library {tree.info.library_id!r} cannot be saved as {self.library_id!r}'s")
        self.db.init_schema()
        info = info_row(tree.info)
        nodes = [node_row(self.library_id, i, n) for i, n in enumerate(tree.nodes)]
        with self.db.transaction() as cur:
            cur.execute("DELETE FROM raptor_node WHERE library_id = ?", (self.library_id,))
            cur.execute("DELETE FROM raptor_tree WHERE library_id = ?", (self.library_id,))
            cur.execute(_INSERT_TREE, [info[c] for c in TREE_COLUMNS])
            cur.executemany(_INSERT_NODE, [[row[c] for c in NODE_COLUMNS] for row in nodes])

    def info(self) -> TreeInfo | None:
        self.db.init_schema()
        rows = self.db.query(_SELECT_TREE, (self.library_id,))
        return row_to_info(rows[0]) if rows else None

    def load(self) -> RaptorTree | None:
        self.db.init_schema()
        for _ in range(3):  # the header and the nodes of one tree: read again if a save came in between
            info = self.info()
            if info is None:
                return None
            nodes = tuple(row_to_node(r) for r in self.db.query(_SELECT_NODES, (self.library_id,)))
            if self.info() == info:
                return RaptorTree(info, nodes)
        from ragspine.errors import BackendError

        raise BackendError(f"library {self.library_id!r}'s RAPTOR tree changed while it was read, three times: try again")

    def delete(self) -> bool:
        self.db.init_schema()
        with self.db.transaction() as cur:
            cur.execute("DELETE FROM raptor_node WHERE library_id = ?", (self.library_id,))
            cur.execute("DELETE FROM raptor_tree WHERE library_id = ?", (self.library_id,))
            return bool(cur.rowcount)

    def close(self) -> None:
        if self._owns_db:
            self.db.close()
