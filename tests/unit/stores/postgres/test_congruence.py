"""Congruence: one scenario replayed on SQLite (the reference) and PostgreSQL gives the same
answers — ordering of odd ids, non-string standard fields, retirement, the catalog."""

from __future__ import annotations

from typing import Any, Callable

from ragspine.retrieval.chunking.chunk_store import StoredChunk
from ragspine.stores.postgres import PostgresDatabase
from ragspine.stores.sqlite import SQLiteDatabase
from tests.helpers import make_chunk

# ids that sort differently under a natural-language collation than by code point
DOC_IDS = ["b", "B", "a-2", "a10", "a9", "Z", "é", "ä", "_x", "10", "9", "doc 1", "doc-1", "中"]
STANDARD_VALUES: list[Any] = ["sales", "Sales", "", None, True, False, 5, -3, 2.5, 1.0, "True", "5"]


def _scenario(db: Any) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    a, b = db.chunk_store("lib-a"), db.chunk_store("lib-b")
    for n, doc_id in enumerate(DOC_IDS):
        value = STANDARD_VALUES[n % len(STANDARD_VALUES)]
        meta = {"topic": value, "entity": "ACME" if n % 2 else "Beta", "year": 2000 + n}
        if n % 5 == 0:
            meta.pop("entity")  # a missing standard field
        chunks = [make_chunk(doc_id, k, f"{doc_id} text {k}", metadata=meta) for k in range(1 + n % 3)]
        out.append(("replace", a.replace_doc_chunks(doc_id, chunks, valid_as_of=f"2024-{n:02d}")))
    b.replace_doc_chunks("b", [make_chunk("b", 0, "other library", metadata={"topic": "sales"})])
    a.replace_doc_chunks("a9", [])
    a.replace_doc_chunks("B", [make_chunk("B", 0, "B again", metadata={"topic": "sales"})])
    db.ensure_library("lib-c", "registered, empty")

    queries: dict[str, Callable[[], Any]] = {
        "all": lambda: a.iter_chunks(),
        "all+inactive": lambda: a.iter_chunks(include_inactive=True),
        "doc B": lambda: a.iter_chunks(doc_id="B", include_inactive=True),
        "get": lambda: a.get_chunks(["中#0", "a9#0", "B#0", "nope", "b#1", "中#0"]),
        "doc_ids": a.doc_ids,
        "count": a.count,
        "count+inactive": lambda: a.count(include_inactive=True),
        "changes": lambda: a.changes_since(0)[1],
        "b": lambda: b.iter_chunks(),
        "active set": lambda: sorted(c.chunk_id for c in a.iter_active(batch_size=4)),
        "libraries": lambda: [(i.library_id, i.description, i.documents, i.chunks) for i in db.list_libraries()],
        "libraries named": lambda: [(i.library_id, i.documents, i.chunks) for i in db.list_libraries(["lib-c", "nope", "lib-a", "lib-a"])],
        "libraries named none": lambda: db.list_libraries([]),
        "descriptions": lambda: sorted(db.descriptions(["lib-c", "lib-a", "nope", "lib-b", "lib-a"]).items()),
    }
    for doc_id in DOC_IDS:
        queries[f"doc {doc_id!r}"] = lambda d=doc_id: a.iter_chunks(doc_id=d)
    for name, query in queries.items():
        out.append((name, _plain(query())))
    return out


def _plain(value: Any) -> Any:
    """StoredChunks without ``ingested_at`` (a clock reading)."""
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, StoredChunk):
        d = dict(value.__dict__)
        d.pop("ingested_at")
        d["metadata"] = {k: (type(v).__name__, v) for k, v in d["metadata"].items()}
        return d
    return value


def test_postgres_answers_like_sqlite(pg_db: PostgresDatabase, sqlite_db: SQLiteDatabase) -> None:
    expected = _scenario(sqlite_db)
    got = _scenario(pg_db)
    assert [name for name, _ in got] == [name for name, _ in expected]
    for (name, want), (_, have) in zip(expected, got, strict=True):
        assert have == want, f"{name}: PostgreSQL {have!r}\n  SQLite {want!r}"
