"""The one write path of ``PostgresChunkStore``: a batch of versioned replaces in one
transaction, with the lexical index kept in step (driver-level I/O, psycopg 3).

``replace_batch(cur, library_id, docs)`` runs on the psycopg cursor of a connection that
is inside a transaction (the caller commits or rolls back); ``replace_doc_chunks`` is a
batch of one. In order:

1. **Locks** (transaction-scoped advisory locks, always in this order, so no two writers
   wait on each other in a cycle): the library in shared mode (``delete_library`` takes it
   exclusively), then each document's lock in ascending ``doc_id`` order (a single replace
   takes one of them; two batches take theirs in the same order).
2. **Versions** of every document (``max(version) + 1``, retirements counted from the
   change log) and the **clash check**: a chunk id may be active in one document only.
3. **Retire** the documents' active rows (``RETURNING`` their ids and token counts) and
   delete those chunks' postings.
4. **COPY** the new chunk rows and their postings (tokens computed here with
   :func:`tokenize`; a posting carries the term frequency and the chunk's length). A
   RESTRICTED chunk gets no postings and ``n_tokens`` NULL: it is not in the lexical index and
   moves none of its statistics.
5. **Change log and statistics**, under the per-library change lock held until commit (so
   change sequence numbers follow commit order): one change row per document, with the
   :func:`fingerprint` of its input, the document frequencies of the tokens that gained or
   lost postings, and the library's ``(n_chunks, total_len)`` adjusted.

Everything becomes visible at commit, together: a new version is searchable at once, a
retired one is gone at once, and a failure anywhere leaves the previous state.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from ragspine.errors import IngestError
from ragspine.retrieval.chunking.chunk_store import (
    DocumentChunks,
    fingerprint,
)
from ragspine.retrieval.lexical.tokenizer import tokenize
from ragspine.retrieval.sensitivity import is_restricted
from ragspine.stores.postgres.acls import set_acl
from ragspine.stores.postgres.converters import (
    COPY_COLUMNS,
    chunk_copy_row,
    term_counts,
)

if TYPE_CHECKING:
    import psycopg

_LOCK_LIBRARY = "SELECT pg_advisory_xact_lock_shared(hashtextextended(%(library_id)s, 1))"
# The subquery fixes the order in which the locks are taken (ascending doc_id, as given).
_LOCK_DOCS = (
    "SELECT count(pg_advisory_xact_lock(k)) FROM ("
    " SELECT hashtextextended(d, hashtextextended(%(library_id)s, 0)) AS k"
    " FROM unnest(%(doc_ids)s::text[]) WITH ORDINALITY AS t(d, i) ORDER BY i OFFSET 0) AS ordered"
)
_LOCK_CHANGES = "SELECT pg_advisory_xact_lock(hashtextextended(%(library_id)s, 2))"
_VERSIONS = (  # a retirement writes no rows: count it from the change log
    "SELECT d, GREATEST("
    " COALESCE((SELECT MAX(version) FROM ragspine_chunk c WHERE c.library_id = %(library_id)s AND c.doc_id = d), 0),"
    " COALESCE((SELECT MAX(version) FROM ragspine_change g WHERE g.library_id = %(library_id)s AND g.doc_id = d), 0))"
    " FROM unnest(%(doc_ids)s::text[]) AS d"
)
_CLASH = (
    "SELECT chunk_id, doc_id FROM ragspine_chunk WHERE library_id = %(library_id)s AND active"
    " AND chunk_id = ANY(%(chunk_ids)s::text[]) AND doc_id <> ALL(%(doc_ids)s::text[]) LIMIT 1"
)
_RETIRE = (
    "UPDATE ragspine_chunk SET active = false"
    " WHERE library_id = %(library_id)s AND doc_id = ANY(%(doc_ids)s::text[]) AND active"
    " RETURNING chunk_id, n_tokens"
)
_DROP_POSTINGS = (
    "DELETE FROM ragspine_lex_posting WHERE library_id = %(library_id)s AND chunk_id = ANY(%(chunk_ids)s::text[])"
    " RETURNING token"
)
_TERMS = (  # document frequencies, adjusted in token order
    "INSERT INTO ragspine_lex_term AS t (library_id, token, df)"
    " SELECT %(library_id)s, tok, d FROM unnest(%(tokens)s::text[], %(deltas)s::bigint[]) AS u(tok, d) ORDER BY tok"
    " ON CONFLICT (library_id, token) DO UPDATE SET df = t.df + EXCLUDED.df"
)
_COPY_CHUNKS = f"COPY ragspine_chunk ({', '.join(COPY_COLUMNS)}) FROM STDIN"
_INSERT_CHUNK = (
    f"INSERT INTO ragspine_chunk ({', '.join(COPY_COLUMNS)})"
    f" VALUES ({', '.join('%s::jsonb' if c == 'metadata' else '%s' for c in COPY_COLUMNS)})"
)
_COPY_POSTINGS = "COPY ragspine_lex_posting (library_id, token, chunk_id, tf, dl) FROM STDIN"
_INSERT_POSTING = "INSERT INTO ragspine_lex_posting (library_id, token, chunk_id, tf, dl) VALUES (%s, %s, %s, %s, %s)"
_CHANGES = (
    "INSERT INTO ragspine_change (library_id, doc_id, version, fingerprint)"
    " SELECT %(library_id)s, d, v, f FROM unnest(%(doc_ids)s::text[], %(versions)s::int[], %(fingerprints)s::text[])"
    " WITH ORDINALITY AS t(d, v, f, i) ORDER BY i"
)
_STATS = (  # postings stay complete only while every write wrote them
    "INSERT INTO ragspine_lex_stats AS s (library_id, n_chunks, total_len, postings)"
    " VALUES (%(library_id)s, %(n)s, %(length)s, %(postings)s)"
    " ON CONFLICT (library_id) DO UPDATE SET n_chunks = s.n_chunks + EXCLUDED.n_chunks,"
    " total_len = s.total_len + EXCLUDED.total_len, postings = s.postings AND EXCLUDED.postings"
)


def replace_batch(cur: psycopg.Cursor[Any], library_id: str, batch: Sequence[DocumentChunks], *, bulk: str = "copy", keep_postings: bool = True) -> int:
    """Versioned replace of every document of a batch checked by
    :func:`~ragspine.retrieval.chunking.chunk_store.check_batch`; returns the
    number of chunk rows written. The caller owns the transaction. With ``keep_postings=False``
    (``RAGSPINE_PG_POSTINGS=off``) nothing is tokenized: the rows, the change log and the
    retired chunks' postings removed, and the library marked as having incomplete postings."""
    if not batch:
        return 0
    key = {"library_id": library_id}
    doc_ids = [d.doc_id for d in batch]
    cur.execute(_LOCK_LIBRARY, key)
    cur.execute(_LOCK_DOCS, {**key, "doc_ids": sorted(doc_ids)})
    cur.execute(_VERSIONS, {**key, "doc_ids": doc_ids})
    versions = {d: int(v) + 1 for d, v in cur.fetchall()}
    chunk_ids = [c.chunk_id for d in batch for c in d.chunks]
    if chunk_ids:
        cur.execute(_CLASH, {**key, "chunk_ids": chunk_ids, "doc_ids": doc_ids})
        clash = cur.fetchone()
        if clash:
            raise IngestError(f"chunk_id {clash[0]!r} is already active in doc {clash[1]!r}")
    for doc in batch:  # who may read a document changes with its chunks: never one without the other
        if doc.acl is not None:
            set_acl(cur, library_id, doc.doc_id, doc.acl, by="ingest")
    cur.execute(_RETIRE, {**key, "doc_ids": doc_ids})
    retired = cur.fetchall()
    df_delta: Counter[str] = Counter()
    if retired:
        cur.execute(_DROP_POSTINGS, {**key, "chunk_ids": [r[0] for r in retired]})
        df_delta.subtract(token for (token,) in cur.fetchall())
    rows: list[tuple[Any, ...]] = []
    postings: list[tuple[Any, ...]] = []
    total = 0
    indexed = 0
    for doc in batch:
        for chunk in doc.chunks:
            n_tokens: int | None = None  # a RESTRICTED chunk is not indexed (n_tokens NULL, no postings)
            if keep_postings and not is_restricted(chunk.sensitivity):
                n_tokens, counts = _postings(library_id, chunk.chunk_id, chunk.text, postings)
                total += n_tokens
                indexed += 1
                df_delta.update(counts.keys())
            rows.append(chunk_copy_row(chunk, library_id=library_id, version=versions[doc.doc_id], valid_as_of=doc.valid_as_of, n_tokens=n_tokens))
    write_rows(cur, _COPY_CHUNKS, _INSERT_CHUNK, rows, bulk)
    write_rows(cur, _COPY_POSTINGS, _INSERT_POSTING, postings, bulk)
    cur.execute(_LOCK_CHANGES, key)  # held until commit: seq order = commit order
    cur.execute(_CHANGES, {
        **key, "doc_ids": doc_ids, "versions": [versions[d] for d in doc_ids],
        "fingerprints": [fingerprint(d.chunks, d.valid_as_of) for d in batch],
    })
    changed = sorted(t for t, d in df_delta.items() if d)
    if changed:
        cur.execute(_TERMS, {**key, "tokens": changed, "deltas": [df_delta[t] for t in changed]})
    retired_indexed = [int(r[1]) for r in retired if r[1] is not None]
    cur.execute(_STATS, {**key, "n": indexed - len(retired_indexed), "length": total - sum(retired_indexed), "postings": keep_postings})
    return len(rows)


def write_rows(cur: psycopg.Cursor[Any], copy_sql: str, insert_sql: str, rows: Sequence[tuple[Any, ...]], bulk: str = "copy") -> None:
    """Insert ``rows`` with one COPY (or pipelined INSERTs, ``bulk="executemany"``)."""
    if not rows:
        return
    if bulk == "executemany":
        cur.executemany(insert_sql, rows)
        return
    with cur.copy(copy_sql) as copy:
        for row in rows:
            copy.write_row(row)


#: SQL of "this chunk row is RESTRICTED" (any spelling a row written before ingest canonicalized it has).
RESTRICTED_SQL = "upper(btrim(sensitivity, E' \\t\\n\\r')) = 'RESTRICTED'"
#: SQL of "this row may be RESTRICTED": :data:`RESTRICTED_SQL`, or a label with any character
#: but ASCII letters and digits — a superset of what :func:`is_restricted` folds to RESTRICTED
#: (a lookalike label stored before ingest folded them: ``RESTRICTED`` + a zero-width space),
#: which the caller then decides in Python.
MAYBE_RESTRICTED_SQL = f"({RESTRICTED_SQL} OR sensitivity ~ '[^A-Za-z0-9]')"


def backfill_lexical(raw: Any, batch_size: int = 2000, *, restricted: bool = False) -> None:
    """Index active chunks already stored (the 0004 upgrade): token counts and postings of
    every active chunk that is not RESTRICTED (``restricted=True``: of the RESTRICTED ones,
    which is what indexes looked like before 0005), then the document frequencies and
    per-library statistics recomputed from what is indexed. Streams the chunks with a
    server-side cursor."""
    which = RESTRICTED_SQL if restricted else f"NOT ({RESTRICTED_SQL})"
    with raw.cursor() as cur:
        cur.execute("CREATE TEMP TABLE ragspine_lex_backfill (library_id text, chunk_id text, n integer) ON COMMIT DROP")
        with raw.cursor(name="ragspine_lex_backfill_src") as src:
            src.execute(f"SELECT library_id, chunk_id, text, sensitivity FROM ragspine_chunk WHERE active AND {which}")
            while True:
                page = src.fetchmany(batch_size)
                if not page:
                    break
                lengths, postings = _index_page(_open_rows(page, restricted))
                write_rows(cur, "COPY ragspine_lex_backfill (library_id, chunk_id, n) FROM STDIN", "", lengths)
                write_rows(cur, _COPY_POSTINGS, _INSERT_POSTING, postings)
        cur.execute(
            "UPDATE ragspine_chunk c SET n_tokens = b.n FROM ragspine_lex_backfill b"
            " WHERE c.library_id = b.library_id AND c.chunk_id = b.chunk_id AND c.active"
        )
        recount_lexical(cur)


def rebuild_library_postings(raw: psycopg.Connection[Any], library_id: str, batch_size: int = 2000) -> int:
    """Rewrite one library's postings, token counts, document frequencies and statistics
    from its active chunks and mark them complete; the caller holds the library's lock
    exclusively (no replace runs meanwhile) and owns the transaction. Returns chunks indexed."""
    key = {"library_id": library_id}
    with raw.cursor() as cur:
        cur.execute("DELETE FROM ragspine_lex_posting WHERE library_id = %(library_id)s", key)
        cur.execute("DELETE FROM ragspine_lex_term WHERE library_id = %(library_id)s", key)
        cur.execute("UPDATE ragspine_chunk SET n_tokens = NULL WHERE library_id = %(library_id)s AND n_tokens IS NOT NULL", key)
        cur.execute("CREATE TEMP TABLE ragspine_lex_rebuild (library_id text, chunk_id text, n integer) ON COMMIT DROP")
        indexed = 0
        with raw.cursor(name="ragspine_lex_rebuild_src") as src:
            src.execute(
                f"SELECT library_id, chunk_id, text, sensitivity FROM ragspine_chunk WHERE library_id = %(library_id)s AND active"
                f" AND NOT ({RESTRICTED_SQL})", key,
            )
            while True:
                page = src.fetchmany(batch_size)
                if not page:
                    break
                lengths, rows = _index_page(_open_rows(page))
                indexed += len(lengths)
                write_rows(cur, "COPY ragspine_lex_rebuild (library_id, chunk_id, n) FROM STDIN", "", lengths)
                write_rows(cur, _COPY_POSTINGS, _INSERT_POSTING, rows)
        cur.execute(
            "UPDATE ragspine_chunk c SET n_tokens = b.n FROM ragspine_lex_rebuild b"
            " WHERE c.library_id = b.library_id AND c.chunk_id = b.chunk_id AND c.active"
        )
        cur.execute(
            "INSERT INTO ragspine_lex_term (library_id, token, df) SELECT library_id, token, count(*)"
            " FROM ragspine_lex_posting WHERE library_id = %(library_id)s GROUP BY library_id, token", key,
        )
        cur.execute("DELETE FROM ragspine_lex_stats WHERE library_id = %(library_id)s", key)
        cur.execute(
            "INSERT INTO ragspine_lex_stats (library_id, n_chunks, total_len, postings)"
            " SELECT %(library_id)s, count(*), COALESCE(sum(n_tokens), 0), true FROM ragspine_chunk"
            " WHERE library_id = %(library_id)s AND active AND n_tokens IS NOT NULL", key,
        )
    return indexed


def recount_lexical(cur: psycopg.Cursor[Any]) -> None:
    """Document frequencies and statistics of every library, from its postings and the token
    counts of its indexed active chunks (``n_tokens`` set)."""
    cur.execute("DELETE FROM ragspine_lex_term")
    cur.execute(
        "INSERT INTO ragspine_lex_term (library_id, token, df)"
        " SELECT library_id, token, count(*) FROM ragspine_lex_posting GROUP BY library_id, token"
    )
    cur.execute("DELETE FROM ragspine_lex_stats")
    cur.execute(
        "INSERT INTO ragspine_lex_stats (library_id, n_chunks, total_len)"
        " SELECT library_id, count(*), COALESCE(sum(n_tokens), 0) FROM ragspine_chunk"
        " WHERE active AND n_tokens IS NOT NULL GROUP BY library_id"
    )


def _open_rows(page: Sequence[tuple[str, str, str, str]], restricted: bool = False) -> list[tuple[str, str, str]]:
    """``(library_id, chunk_id, text)`` of the rows whose label :func:`is_restricted` reads as
    ``restricted`` (the SQL left out only the labels stored as ``RESTRICTED``)."""
    return [(lib, chunk_id, text) for lib, chunk_id, text, label in page if is_restricted(label) == restricted]


def _index_page(page: Iterable[tuple[str, str, str]]) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    lengths: list[tuple[Any, ...]] = []
    postings: list[tuple[Any, ...]] = []
    for library_id, chunk_id, text in page:
        length, _ = _postings(library_id, chunk_id, text, postings)
        lengths.append((library_id, chunk_id, length))
    return lengths, postings


def _postings(library_id: str, chunk_id: str, text: str, out: list[tuple[Any, ...]]) -> tuple[int, Counter[str]]:
    """Append the posting rows of one chunk to ``out``; returns its token count and term counts."""
    length, counts = term_counts(tokenize(text))
    out.extend((library_id, token, chunk_id, tf, length) for token, tf in counts.items())
    return length, counts
