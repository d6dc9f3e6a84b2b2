"""``PostgresLexicalIndex``: the ``LexicalIndex`` role answered by PostgreSQL itself.

Nothing to build or follow: every replace of :class:`PostgresChunkStore` keeps, in its own
transaction, the postings ``ragspine_lex_posting (library_id, token, chunk_id, tf, dl)``
(one row per active chunk and distinct token; ``dl`` is the chunk's token count) and the
library's ``ragspine_lex_stats (n_chunks, total_len)`` (``writes.py``). So a committed
version is searchable at once and a retired one is gone at once, in every process, and
``refresh()`` only reads the change sequence (for ``seq``, which the dense leg uses).

A search is one statement (one snapshot) computing Lucene's BM25 exactly as
:func:`~ragspine.retrieval.lexical.bm25.bm25_scores` does over the library's active chunks:

* ``idf = ln(1 + (N - df + 0.5) / (df + 0.5))`` with ``N`` and ``avgdl`` from the statistics
  row and ``df`` counted from the query tokens' postings (the primary key's index-only range
  scans: ``(library_id, token) INCLUDE (tf, dl)``);
* a chunk's score is the sum over the query's tokens, a repeated token once per occurrence,
  of ``idf * tf / (tf + k1 * (1 - b + b * dl / avgdl))`` — the same IEEE double operations in
  the same order as the reference, so the scores are the reference's to the last bit
  (``ln`` is the C library's ``log``, as Python's). To keep that exact and still cheap, the
  statement sums per chunk in any order first (one hash aggregate), keeps the chunks within
  a relative ``1e-9`` of the k-th (every chunk of the true top k, and every tie with it) and
  returns their per-token terms, which :func:`exact_ranking` adds up in query order. No join
  in the statement has more than a handful of rows on both sides, so a misestimated posting
  count cannot produce a quadratic plan;
* a metadata filter is PostgreSQL's JSONB translation (``postgres/filters.py``),
  applied as a mask on the scored chunks: it narrows the result and never changes a score;
* order ``(-score, chunk_id)`` by code point (PostgreSQL's ``"C"`` collation): the reference's
  tie order.

Only ``chunk.text`` is indexed (``default_index_text``), with :func:`tokenize`; RESTRICTED
chunks are not indexed at all (no postings, ``n_tokens`` NULL, not in the statistics), so
they are never candidates and move no score.

Document ACLs (``AclViews``): :meth:`PostgresLexicalIndex.view` reads the library's ACLs (the
ACL sequence, and every document's ACL when it changed) and names the ACL texts whose
documents a viewer may not read — ``None`` when there are none, and the search is then the
statement above, unchanged. Under a view, ``search`` and ``candidates`` run in one REPEATABLE
READ snapshot: the hidden documents' indexed active chunks (one index range scan per
document) are subtracted from the statistics row (``N``, total length) and taken out of the
query tokens' postings before ``df`` is counted — by grouping the postings with them by chunk
id, an aggregate, so no plan can join two large sets — and the terms are then the same
operations as above: the scores are ``bm25_scores`` over the visible chunks to the last bit.
A view names ACL texts while the library's ACLs are those of its snapshot; after a change it
names the snapshot's hidden documents (and every document that has an ACL now and had none
then: one written since is never shown), so every leg of a search sees one ACL state. MaxScore
(:meth:`PostgresLexicalIndex._pruned_top_k`) reads the whole library's ``df`` and is not used
under a view. The cost is linear in the hidden documents' chunks.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Iterator, NamedTuple, Sequence

from ragspine.errors import ConfigError
from ragspine.retrieval.filtering.filters import MetadataFilter
from ragspine.retrieval.lexical.base import LexicalHit
from ragspine.retrieval.lexical.bm25 import DEFAULT_BM25_B, DEFAULT_BM25_K1, bm25_idf, bm25_term
from ragspine.retrieval.lexical.index import AclSnapshot
from ragspine.security.principals import ACL, Viewer
from ragspine.stores.postgres.chunk_store import PostgresChunkStore
from ragspine.stores.postgres.converters import stored_token
from ragspine.stores.postgres.filters import compile_filter, pg_storable

__all__ = ["PgView", "PostgresLexicalIndex", "exact_ranking", "search_sql"]

#: Chunks whose any-order sum is within this factor of the k-th are re-scored in query
#: order; any-order sums differ from it by ~1e-15 relative, so nothing of the top k is lost.
CANDIDATE_MARGIN = 1.0 - 1e-9

# Every join below has a handful of rows on one side (the query's tokens, the statistics
# row, the candidates): whatever the planner estimates for the materialized postings, no
# plan can join two large sets. Postings are read token by token (a LATERAL subquery per
# query token, fenced with OFFSET 0), so no join order can scan a library's postings once per
# token. Which index serves each lookup is still the planner's choice on the tables'
# statistics: a library that was empty when ANALYZE last ran is estimated at one row, and a
# plan chosen on that filters every posting of the library per lookup (minutes at 50,000
# chunks) — so bulk writes refresh them (``PostgresDatabase.note_written``; tests/unit/
# stores/postgres/test_plans.py asserts both plans).
_SCORED = """
WITH q AS (
    SELECT token, pos FROM unnest(%(tokens)s::text[]) WITH ORDINALITY AS q(token, pos)
), qt AS (
    SELECT token, count(*)::float8 AS qn FROM q GROUP BY token
), {stats_and_postings}, w AS MATERIALIZED (
    SELECT d.token, qt.qn, ln(1::float8 + ((st.n - d.df) + 0.5::float8) / (d.df + 0.5::float8)) AS idf
    FROM (SELECT token, count(*)::float8 AS df FROM p GROUP BY token) AS d JOIN qt USING (token) CROSS JOIN st
), approx AS MATERIALIZED (
    SELECT p.chunk_id,
           sum(w.qn * (w.idf * (p.tf / (p.tf + %(k1)s::float8 * ((1::float8 - %(b)s::float8) + (%(b)s::float8 * p.dl) / st.avgdl))))) AS score,
           array_agg(p.token) AS tokens,
           array_agg(w.idf * (p.tf / (p.tf + %(k1)s::float8 * ((1::float8 - %(b)s::float8) + (%(b)s::float8 * p.dl) / st.avgdl)))) AS parts
    FROM p JOIN w USING (token) CROSS JOIN st
    GROUP BY p.chunk_id
), scored AS (
    SELECT * FROM approx{mask}
)"""
_POSTINGS = """{name} AS MATERIALIZED (
    SELECT qt.token, pp.chunk_id, pp.tf::float8 AS tf, pp.dl::float8 AS dl
    FROM qt CROSS JOIN LATERAL (
        SELECT chunk_id, tf, dl FROM ragspine_lex_posting
        WHERE library_id = %(library_id)s AND token = qt.token OFFSET 0
    ) AS pp
)"""
_LIBRARY = """st AS (
    SELECT n_chunks::float8 AS n, COALESCE(NULLIF(total_len::float8 / n_chunks::float8, 0), 1::float8) AS avgdl
    FROM ragspine_lex_stats WHERE library_id = %(library_id)s AND n_chunks > 0
), """ + _POSTINGS.format(name="p")
# Under a view (a principal's): ``hd`` the documents hidden from it, ``hc`` their indexed
# active chunks (one index range scan per document, fenced); the statistics are the library's
# minus theirs, and ``p`` the query tokens' postings minus theirs — taken out by grouping the
# postings with the hidden chunks by chunk id (an aggregate: linear whatever the estimates,
# where an anti-join of two large sets could be planned as a nested loop; the FILTERs keep a
# hidden chunk's group from allocating arrays, which made the aggregate spill to disk).
_HIDDEN_BY_ACL = "SELECT doc_id FROM ragspine_document_acl WHERE library_id = %(library_id)s AND acl = ANY(%(hidden)s::text[])"
# after an ACL change: the snapshot's hidden documents, and (failing closed) every document
# that has an ACL now and had none in the snapshot — one written since with an ACL is never shown
_HIDDEN_BY_DOC = """SELECT doc_id FROM unnest(%(hidden_docs)s::text[]) AS h(doc_id)
    UNION SELECT doc_id FROM ragspine_document_acl
    WHERE library_id = %(library_id)s AND NOT (doc_id = ANY(%(known_docs)s::text[]))"""
_HIDDEN_CHUNKS = """hd AS MATERIALIZED (
    {hidden}
), hc AS MATERIALIZED (
    SELECT c.chunk_id, c.n_tokens FROM hd CROSS JOIN LATERAL (
        SELECT chunk_id, n_tokens FROM ragspine_chunk
        WHERE library_id = %(library_id)s AND doc_id = hd.doc_id AND active AND n_tokens IS NOT NULL OFFSET 0
    ) AS c
)"""
_VISIBLE = _HIDDEN_CHUNKS + """, st AS (
    SELECT (s.n_chunks - h.n)::float8 AS n,
           COALESCE(NULLIF((s.total_len - h.len)::float8 / (s.n_chunks - h.n)::float8, 0), 1::float8) AS avgdl
    FROM ragspine_lex_stats s CROSS JOIN (SELECT count(*) AS n, COALESCE(sum(n_tokens), 0) AS len FROM hc) AS h
    WHERE s.library_id = %(library_id)s AND s.n_chunks - h.n > 0
), """ + _POSTINGS.format(name="p_all") + """, p AS MATERIALIZED (
    SELECT x.token, g.chunk_id, x.tf, x.dl FROM (
        SELECT chunk_id, bool_or(token IS NULL) AS hidden, array_agg(token) FILTER (WHERE token IS NOT NULL) AS tokens,
               array_agg(tf) FILTER (WHERE token IS NOT NULL) AS tfs, array_agg(dl) FILTER (WHERE token IS NOT NULL) AS dls
        FROM (SELECT chunk_id, token, tf, dl FROM p_all
              UNION ALL SELECT chunk_id, NULL::text, NULL::float8, NULL::float8 FROM hc) AS u
        GROUP BY chunk_id
    ) AS g CROSS JOIN LATERAL unnest(g.tokens, g.tfs, g.dls) AS x(token, tf, dl)
    WHERE NOT g.hidden
)"""
_MASK = """
    WHERE chunk_id IN (SELECT c.chunk_id FROM ragspine_chunk c WHERE c.library_id = %(library_id)s AND c.active AND ({filter}))"""
_TOP_K = """, cand AS MATERIALIZED (
    SELECT * FROM scored
    WHERE score >= COALESCE((SELECT score FROM scored ORDER BY score DESC OFFSET %(k)s - 1 LIMIT 1), 0) * %(margin)s
)"""
_ALL = """, cand AS MATERIALIZED (SELECT * FROM scored)"""
_RANKED = """
SELECT cand.chunk_id, cand.tokens, cand.parts, c.version
FROM cand JOIN ragspine_chunk c ON c.library_id = %(library_id)s AND c.chunk_id = cand.chunk_id AND c.active"""


def search_sql(filter_sql: str | None, top_k: int | None, view: str | None = None) -> str:
    """The search statement (driver placeholders); ``filter_sql`` is a compiled mask or None;
    ``view``: ``None`` (every active chunk), ``"acl"`` (not the documents whose ACL text is in
    ``%(hidden)s``) or ``"doc"`` (not the documents ``%(hidden_docs)s``). It returns each
    candidate's per-token terms; :func:`exact_ranking` adds them up."""
    mask = _MASK.format(filter=filter_sql) if filter_sql else ""
    if view is None:
        head = _LIBRARY
    else:
        head = _VISIBLE.format(hidden=_HIDDEN_BY_ACL if view == "acl" else _HIDDEN_BY_DOC)
    return _SCORED.format(stats_and_postings=head, mask=mask) + (_TOP_K if top_k is not None else _ALL) + _RANKED


def exact_ranking(
    query_tokens: Sequence[str], rows: Sequence[tuple[str, Sequence[str], Sequence[float], int]], top_k: int | None
) -> list[LexicalHit]:
    """Each candidate's score as the reference adds it up — every occurrence of every query
    token, in query order, from 0.0 — then ``(-score, chunk_id)`` order and the first ``top_k``
    (the terms themselves were computed in SQL with the reference's operations)."""
    hits = []
    for chunk_id, tokens, parts, version in rows:
        term = dict(zip(tokens, parts, strict=False))
        score = 0.0
        for token in query_tokens:
            value = term.get(token)
            if value is not None:
                score += float(value)
        hits.append(LexicalHit(chunk_id, score, int(version)))
    hits.sort(key=lambda h: (-h.score, h.chunk_id.encode("utf-8", "surrogatepass")))
    return hits if top_k is None else hits[:top_k]


#: MaxScore attempts (essential tokens) before scoring every posting.
MAX_ESSENTIAL = 3

_STATS_AND_DF = """
SELECT s.n_chunks, s.total_len, t.token, t.df
FROM ragspine_lex_stats s LEFT JOIN ragspine_lex_term t
  ON t.library_id = s.library_id AND t.token = ANY(%(tokens)s::text[])
WHERE s.library_id = %(library_id)s"""
_CANDIDATES = """
WITH e AS MATERIALIZED (
    SELECT DISTINCT pp.chunk_id
    FROM unnest(%(essential)s::text[]) AS t(token) CROSS JOIN LATERAL (
        SELECT chunk_id FROM ragspine_lex_posting WHERE library_id = %(library_id)s AND token = t.token OFFSET 0
    ) AS pp
)
SELECT c.chunk_id, c.version FROM e CROSS JOIN LATERAL (
    SELECT c.chunk_id, c.version, c.metadata FROM ragspine_chunk c
    WHERE c.library_id = %(library_id)s AND c.chunk_id = e.chunk_id AND c.active OFFSET 0
) AS c{where}"""
_TERMS_OF = """
SELECT p.chunk_id, p.token, p.tf, p.dl
FROM unnest(%(chunk_ids)s::text[]) AS c(chunk_id)
JOIN ragspine_lex_posting p ON p.library_id = %(library_id)s AND p.token = ANY(%(tokens)s::text[]) AND p.chunk_id = c.chunk_id"""


_ACL_SEQ = "SELECT COALESCE(MAX(seq), 0) FROM ragspine_acl_change WHERE library_id = %(library_id)s"
_ACLS = (
    "SELECT '', (" + _ACL_SEQ + ")::text UNION ALL"
    " SELECT doc_id, acl FROM ragspine_document_acl WHERE library_id = %(library_id)s"
)
_VISIBLE_CANDIDATES = "WITH " + _HIDDEN_CHUNKS + """
SELECT chunk_id, max(version) FROM (
    SELECT chunk_id, version FROM ragspine_chunk
    WHERE library_id = %(library_id)s AND active AND n_tokens IS NOT NULL{where}
    UNION ALL SELECT chunk_id, NULL::integer FROM hc
) AS u GROUP BY chunk_id HAVING count(version) = count(*)
ORDER BY chunk_id COLLATE "C"
"""
_VIEWERS_CACHED = 4096  # viewers whose hidden ACL texts are remembered (per ACL snapshot)


class PgView(NamedTuple):
    """The rows a viewer may read under one ACL snapshot, as PostgreSQL's statements read them:
    every indexed active chunk except those of the documents whose ACL text is in ``hidden``
    (canonical JSON, as stored). The statistics (``N``, ``avgdl``, each ``df``) are computed
    over exactly those rows inside the search's own statement."""

    snapshot: AclSnapshot
    viewer: Viewer
    hidden: tuple[str, ...]

    def hidden_docs(self) -> list[str]:
        """The documents the snapshot hides from the viewer (the statements' form when the
        library's ACLs changed since the snapshot)."""
        return sorted(doc for doc, acl in self.snapshot.acls.items() if not self.viewer.sees(acl))


class PostgresLexicalIndex:
    """BM25 over one library's active chunks, computed in PostgreSQL (see the module docstring)."""

    def __init__(self, store: PostgresChunkStore, *, k1: float = DEFAULT_BM25_K1, b: float = DEFAULT_BM25_B) -> None:
        if not isinstance(store, PostgresChunkStore):
            raise ConfigError(f"PostgresLexicalIndex needs a PostgresChunkStore, got {type(store).__name__}")
        self.store = store
        self.library_id = store.library_id
        self.k1 = float(k1)
        self.b = float(b)
        self._lock = threading.Lock()
        self._seq: int | None = None
        self._size = 0
        self._acls = AclSnapshot(0, {})
        self._acl_texts: dict[ACL, tuple[str, ...]] = {}  # the stored texts of each ACL of ``_acls``
        self._hidden_for: dict[tuple[Viewer, int], tuple[str, ...]] = {}

    @classmethod
    def from_config(cls, store: object, settings: object = None) -> PostgresLexicalIndex:
        """``RAGSPINE_LEXICAL_INDEX=postgres`` (the registry's factory)."""
        if not isinstance(store, PostgresChunkStore):
            raise ConfigError("RAGSPINE_LEXICAL_INDEX=postgres needs a PostgreSQL chunk store (RAGSPINE_CHUNK_STORE=postgresql://...)")
        return cls(store)

    def __repr__(self) -> str:
        return f"PostgresLexicalIndex({self.store!r})"

    def _query(self, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        self.store.init_schema()
        return self.store.db.query(sql, {"library_id": self.library_id, **params})

    # -- the LexicalIndex role -------------------------------------------------------------
    def refresh(self) -> None:
        """Read the store's change sequence and the library's chunk count (one snapshot).
        Searches never need it: they always see what is committed."""
        ((seq, size, complete),) = self._query(
            "SELECT (SELECT COALESCE(MAX(seq), 0) FROM ragspine_change WHERE library_id = %(library_id)s),"
            " COALESCE((SELECT n_chunks FROM ragspine_lex_stats WHERE library_id = %(library_id)s), 0),"
            " COALESCE((SELECT postings FROM ragspine_lex_stats WHERE library_id = %(library_id)s), true)",
            {},
        )
        if not complete:
            raise ConfigError(
                f"library {self.library_id!r} was written with RAGSPINE_PG_POSTINGS=off, so its PostgreSQL postings are"
                f" incomplete: search it with RAGSPINE_LEXICAL_INDEX=memory, or run"
                f" `ragspine migrate --rebuild-postings {self.library_id}`"
            )
        with self._lock:
            self._seq, self._size = int(seq), int(size)

    @property
    def seq(self) -> int | None:
        """The change sequence read by the last ``refresh()`` (``None`` before the first)."""
        return self._seq

    def __len__(self) -> int:
        """Active chunks of the library as of the last ``refresh()``."""
        if self._seq is None:
            self.refresh()
        return self._size

    # -- document ACLs (``AclViews``) ---------------------------------------------------------
    def acl_snapshot(self) -> AclSnapshot:
        """The library's document ACLs now: one small read of the ACL sequence, and when it
        changed, one statement reading the sequence and every document's ACL together."""
        if self._query(_ACL_SEQ, {})[0][0] == self._acls.seq:
            return self._acls
        rows = self._query(_ACLS, {})
        seq = next(int(value) for doc_id, value in rows if doc_id == "")
        parsed: dict[str, ACL] = {}
        acls = {doc_id: parsed.setdefault(text, ACL.from_json(text)) for doc_id, text in rows if doc_id}
        texts: dict[ACL, tuple[str, ...]] = {}
        for text, acl in parsed.items():
            texts[acl] = (*texts.get(acl, ()), text)
        snapshot = AclSnapshot(seq, acls)
        with self._lock:
            self._acls, self._acl_texts = snapshot, texts
            self._hidden_for.clear()
        return snapshot

    def view(self, viewer: Viewer | None, snapshot: AclSnapshot | None = None) -> PgView | None:
        """The rows ``viewer`` may read under ``snapshot`` (the library's ACLs now by default):
        ``None`` when that is every indexed active chunk (the search is then today's statement),
        else a :class:`PgView` naming the ACL texts whose documents it may not read."""
        if viewer is None or viewer.everything:
            return None
        snapshot = snapshot if snapshot is not None else self.acl_snapshot()
        key = (viewer, snapshot.seq)
        with self._lock:
            hidden = self._hidden_for.get(key) if snapshot is self._acls else None
            texts = self._acl_texts if snapshot is self._acls else {}
        if hidden is None:
            classes = set(snapshot.acls.values())
            hidden = tuple(sorted({t for acl in classes if not viewer.sees(acl) for t in texts.get(acl, (acl.to_json(),))}))
            with self._lock:
                if snapshot is self._acls:
                    self._hidden_for[key] = hidden
                    while len(self._hidden_for) > _VIEWERS_CACHED:
                        self._hidden_for.pop(next(iter(self._hidden_for)))
        return PgView(snapshot, viewer, hidden) if hidden else None

    def _view_params(self, cur: Any, view: PgView) -> tuple[str, dict[str, Any]]:
        """How the statements of ``view`` name its hidden documents in the transaction of
        ``cur``: by ACL text while the library's ACLs are still the snapshot's, else (an ACL
        changed since the view was made) by the snapshot's documents — so every leg of a search
        sees one ACL state, the one its view and exit check were made from — and every document
        that has an ACL now but had none then (written since: hidden, failing closed)."""
        cur.execute(_ACL_SEQ, {"library_id": self.library_id})
        if int(cur.fetchone()[0]) == view.snapshot.seq:
            return "acl", {"hidden": list(view.hidden)}
        return "doc", {"hidden_docs": view.hidden_docs(), "known_docs": sorted(view.snapshot.acls)}

    # -- the LexicalIndex role -------------------------------------------------------------
    def search(
        self,
        query_tokens: Sequence[str],
        *,
        metadata_filter: MetadataFilter | None = None,
        top_k: int | None = None,
        view: PgView | None = None,
    ) -> list[LexicalHit]:
        """BM25's ranking of ``query_tokens`` over every indexed active chunk, or over ``view``'s
        with its statistics (:meth:`view`: one REPEATABLE READ snapshot, the exact statement —
        MaxScore's pruning reads the whole library's ``df`` and is not used under a view)."""
        if top_k is not None and top_k <= 0:
            return []
        tokens = [stored_token(t) for t in query_tokens if pg_storable(t)]
        if not tokens:
            return []
        filter_sql, params = compile_filter(metadata_filter)
        if top_k is not None and view is None:
            pruned = self._pruned_top_k(tokens, int(top_k), filter_sql, params)
            if pruned is not None:
                return pruned
        params.update(library_id=self.library_id, tokens=tokens, k1=self.k1, b=self.b)
        if top_k is not None:
            params.update(k=int(top_k), margin=CANDIDATE_MARGIN)
        if view is None:
            rows = self._query(search_sql(filter_sql, top_k), params)
        else:
            with self._snapshot() as cur:
                by, hidden = self._view_params(cur, view)
                cur.execute(search_sql(filter_sql, top_k, by), {**params, **hidden})
                rows = cur.fetchall()
        return exact_ranking(tokens, rows, top_k)

    def _pruned_top_k(
        self, tokens: list[str], top_k: int, filter_sql: str | None, filter_params: dict[str, Any]
    ) -> list[LexicalHit] | None:
        """The exact top ``top_k`` reading only the rarest query tokens' postings plus point
        lookups of the other tokens for those candidates (MaxScore, as in the in-process index:
        a chunk without an essential token scores at most the other tokens' idf sum), in one
        REPEATABLE READ snapshot; ``None`` when that cannot be proven (the caller then scores
        every posting in one statement)."""
        with self._snapshot() as cur:
            cur.execute(_STATS_AND_DF, {"library_id": self.library_id, "tokens": sorted(set(tokens))})
            rows = cur.fetchall()
            if not rows:
                return []
            n, total_len = int(rows[0][0]), int(rows[0][1])
            df = {token: int(d) for _, _, token, d in rows if token is not None and d}
            occurrences = [t for t in tokens if t in df]
            if not n or not occurrences:
                return []
            idf = {t: bm25_idf(d, n) for t, d in df.items()}
            avgdl = total_len / n or 1.0
            by_rarity = sorted(set(occurrences), key=lambda t: (df[t], t))
            for m in range(1, min(len(by_rarity), MAX_ESSENTIAL + 1)):
                essential = by_rarity[:m]
                if sum(df[t] for t in essential) > max(n // 10, top_k):
                    return None  # reading the candidates would cost about a full scoring
                bound = sum(idf[t] for t in occurrences if t not in essential)
                others = [t for t in by_rarity if t not in essential]
                cur.execute(
                    _CANDIDATES.format(where=f" WHERE ({filter_sql})" if filter_sql else ""),
                    {"library_id": self.library_id, "essential": essential, **filter_params},
                )
                versions = dict(cur.fetchall())
                if len(versions) < top_k:
                    continue
                cur.execute(_TERMS_OF, {"library_id": self.library_id, "chunk_ids": sorted(versions),
                                        "tokens": essential + others})
                terms: dict[str, dict[str, float]] = {}
                for chunk_id, token, tf, dl in cur.fetchall():
                    terms.setdefault(chunk_id, {})[token] = bm25_term(float(tf), float(dl), avgdl, idf[token], self.k1, self.b)
                scored = exact_ranking(
                    tokens, [(cid, list(t), list(t.values()), versions[cid]) for cid, t in terms.items()], None
                )
                kth = scored[top_k - 1].score
                if bound * (1.0 + 1e-9) < kth:
                    return scored[:top_k]
        return None

    @contextlib.contextmanager
    def _snapshot(self) -> Iterator[Any]:
        """A driver cursor in a read-only REPEATABLE READ transaction (one snapshot); driver
        errors become :class:`BackendError` (``DeadlineExceeded`` past the deadline)."""
        import psycopg
        import sqlalchemy as sa

        self.store.init_schema()
        db = self.store.db
        try:
            with db.engine.connect() as conn:
                conn = conn.execution_options(isolation_level="REPEATABLE READ")
                with conn.begin(), conn.connection.driver_connection.cursor() as cur:
                    cur.execute("SET TRANSACTION READ ONLY")
                    yield cur
        except (psycopg.Error, sa.exc.SQLAlchemyError) as exc:
            raise db.error(exc, "BM25 search") from exc

    def candidates(self, metadata_filter: MetadataFilter | None = None, view: PgView | None = None) -> list[tuple[str, int]]:
        """``(chunk_id, version)`` of every indexed active chunk (of ``view``'s) passing ``metadata_filter``."""
        filter_sql, params = compile_filter(metadata_filter)
        if view is not None:
            with self._snapshot() as cur:
                by, hidden = self._view_params(cur, view)
                sql = _VISIBLE_CANDIDATES.format(hidden=_HIDDEN_BY_ACL if by == "acl" else _HIDDEN_BY_DOC,
                                                 where=f" AND ({filter_sql})" if filter_sql else "")
                cur.execute(sql, {"library_id": self.library_id, **params, **hidden})
                return [(chunk_id, int(version)) for chunk_id, version in cur.fetchall()]
        sql = "SELECT chunk_id, version FROM ragspine_chunk WHERE library_id = %(library_id)s AND active AND n_tokens IS NOT NULL"
        if filter_sql:
            sql += f" AND ({filter_sql})"
        rows = self._query(sql + ' ORDER BY chunk_id COLLATE "C"', params)
        return [(chunk_id, int(version)) for chunk_id, version in rows]

    def version_of(self, chunk_id: str) -> int | None:
        """The active version of ``chunk_id``, or ``None`` when it is not active."""
        return self.versions([chunk_id]).get(chunk_id)

    def versions(self, chunk_ids: Sequence[str]) -> dict[str, int]:
        """``{chunk_id: active version}`` for the ids that are active (one statement)."""
        wanted = sorted({c for c in chunk_ids if isinstance(c, str) and pg_storable(c)})
        if not wanted:
            return {}
        rows = self._query(
            "SELECT chunk_id, version FROM ragspine_chunk WHERE library_id = %(library_id)s AND active AND n_tokens IS NOT NULL"
            " AND chunk_id = ANY(%(ids)s::text[])",
            {"ids": wanted},
        )
        return {chunk_id: int(version) for chunk_id, version in rows}

