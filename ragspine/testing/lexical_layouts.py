"""The lexical layouts a history is replayed against, and the child process that reopens one.

A :class:`LexicalLayout` says how to open one library's chunk store over a *new* database
connection (what another process would do), how to open the layout's ``LexicalIndex`` over
it, and what a child process needs to do the same (``child``: a JSON-able spec for
:func:`child_main`, run as ``python -m ragspine.testing.lexical_layouts SPEC.json``).

* :func:`sqlite_layout` — the in-process index over a SQLite file, saved next to it
  (``kernel``: ``numba`` for the compiled top-k kernel, ``numpy`` for its fallback);
* :func:`postgres_layout` — over PostgreSQL: ``index="memory"`` is the in-process index
  following the change log (saved under ``persist_root``), ``index="postgres"`` the postings
  kept in PostgreSQL (``PostgresLexicalIndex``), ``index="warm"`` the in-process index
  answered for by the postings while it builds (``WarmingLexicalIndex``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragspine.retrieval.chunking.chunk_store import ChunkStore
from ragspine.retrieval.lexical.base import LexicalIndex

Hit = tuple[str, float, int]


@dataclass
class LexicalLayout:
    """One lexical layout over one kind of store (see the module docstring)."""

    name: str
    #: ``library_id -> (store, close)``: the library over a new database connection
    open_store: Callable[[str], tuple[Any, Callable[[], None]]]
    open_index: Callable[[ChunkStore], LexicalIndex]
    #: what :func:`child_main` needs to open the same store and index in another process
    child: dict[str, Any] = field(default_factory=dict)
    #: whether the layout saves its index for the next process (then a child must load it)
    saves: bool = False

    def run_child(self, library_id: str, queries: Sequence[Sequence[str]], top_k: int | None) -> dict[str, Any]:
        """Open the library and its index in a new Python process, run ``queries`` and return
        ``{"origin", "rejections", "results": [[chunk_id, score, version], ...] per query}``."""
        spec = {**self.child, "library": library_id, "queries": [list(q) for q in queries], "top_k": top_k}
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "spec.json")
            with open(path, "w", encoding="utf-8") as fh:
                json.dump(spec, fh)
            done = subprocess.run(
                [sys.executable, "-m", "ragspine.testing.lexical_layouts", path],
                capture_output=True, text=True, timeout=900, check=False,
            )
        if done.returncode != 0:
            raise AssertionError(f"the child process failed ({done.returncode}): {done.stderr[-2000:]}")
        out: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        out["results"] = [[(cid, float.fromhex(score), version) for cid, score, version in hits] for hits in out["results"]]
        return out


def close_index(index: LexicalIndex) -> None:
    """Stop what ``index`` runs in the background (a warm index's build reads through the
    store's connection pool): before its store's database is closed."""
    close = getattr(index, "close", None)
    if callable(close):
        close()


def _memory_index(kernel: str) -> Callable[[ChunkStore], LexicalIndex]:
    def make(store: ChunkStore) -> LexicalIndex:
        from ragspine.retrieval.lexical.index import InMemoryLexicalIndex

        return InMemoryLexicalIndex(store, kernel=kernel)  # type: ignore[arg-type]

    return make


def sqlite_layout(path: str, *, kernel: str = "auto") -> LexicalLayout:
    """The in-process index over the SQLite file ``path`` (saved next to it)."""

    def open_store(library_id: str) -> tuple[Any, Callable[[], None]]:
        from ragspine.stores.sqlite import SQLiteDatabase

        db = SQLiteDatabase(path)
        db.init_schema()
        return db.chunk_store(library_id), db.close

    child = {"db": "sqlite", "path": path, "index": "memory", "kernel": kernel}
    return LexicalLayout(f"memory-sqlite-{kernel}", open_store, _memory_index(kernel), child, saves=True)


def postgres_layout(url: str, schema: str, *, index: str = "memory", persist_root: str | None = None, kernel: str = "auto") -> LexicalLayout:
    """``index="memory"``: the in-process index following PostgreSQL (saved under
    ``persist_root``); ``index="postgres"``: PostgreSQL's own postings."""

    def open_store(library_id: str) -> tuple[Any, Callable[[], None]]:
        from ragspine.stores.postgres import PostgresDatabase

        db = PostgresDatabase(url, schema=schema, pool_size=4, persist_root=persist_root)
        db.init_schema()
        return db.chunk_store(library_id), db.close

    if index == "memory":
        child = {"db": "postgres", "url": url, "schema": schema, "persist_root": persist_root, "index": "memory", "kernel": kernel}
        return LexicalLayout(f"memory-postgres-{kernel}", open_store, _memory_index(kernel), child, saves=persist_root is not None)

    def postings(store: ChunkStore) -> LexicalIndex:
        from ragspine.stores.postgres.lexical import PostgresLexicalIndex

        return PostgresLexicalIndex(store)  # type: ignore[arg-type]

    def warm(store: ChunkStore) -> LexicalIndex:
        from ragspine.retrieval.lexical.index import InMemoryLexicalIndex
        from ragspine.retrieval.lexical.warm import WarmingLexicalIndex

        return WarmingLexicalIndex(InMemoryLexicalIndex(store, kernel=kernel), postings(store))  # type: ignore[arg-type]

    child = {"db": "postgres", "url": url, "schema": schema, "persist_root": persist_root, "index": index, "kernel": kernel}
    if index == "warm":  # which of the two answers depends on timing: no claim about loading
        return LexicalLayout("warm", open_store, warm, child)
    return LexicalLayout("postgres-postings", open_store, postings, child)


def _open_from_spec(spec: dict[str, Any]) -> tuple[Any, Any, Callable[[], None]]:
    if spec["db"] == "sqlite":
        layout = sqlite_layout(spec["path"], kernel=spec.get("kernel", "auto"))
    else:
        layout = postgres_layout(spec["url"], spec["schema"], index=spec["index"], persist_root=spec.get("persist_root"),
                                 kernel=spec.get("kernel", "auto"))
    store, close = layout.open_store(spec["library"])
    return store, layout.open_index(store), close


def child_main(argv: Sequence[str]) -> int:
    """The child process: open the store and index a spec names, refresh, run its queries,
    print one JSON line (scores as ``float.hex``, bit for bit)."""
    from ragspine.retrieval.lexical import verify

    with open(argv[0], encoding="utf-8") as fh:
        spec = json.load(fh)
    store, index, close = _open_from_spec(spec)
    try:
        index.refresh()
        results = [
            [[h.chunk_id, float(h.score).hex(), h.version] for h in index.search(q, top_k=spec["top_k"])]
            for q in spec["queries"]
        ]
        origin = getattr(index, "origin", None)
    finally:
        close_index(index)
        close()
    print(json.dumps({"origin": origin, "rejections": verify.saved_index_rejections(), "results": results}))
    return 0


if __name__ == "__main__":  # pragma: no cover - run by LexicalLayout.run_child
    raise SystemExit(child_main(sys.argv[1:]))
