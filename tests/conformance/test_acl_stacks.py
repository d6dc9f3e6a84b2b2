"""Document ACLs, the L-versus-L' pack, on every store layout: the embedded default, PostgreSQL 18
+ pgvector + Redis, PostgreSQL 15 + Qdrant's local mode, SQLite + Qdrant's local mode.

For each principal P, the library L with every document and the library L' holding only what P
may read answer P's questions identically in every retrieval mode — the same snippets, in the
same order, with the same scores (BM25, dense, fused) and the same dense coverage — while an
index whose statistics count every row (the leaky inverse double) fails the same comparison.
"""

from __future__ import annotations

import random

import pytest

from ragspine.config import load_settings
from ragspine.retrieval.lexical.index import InMemoryLexicalIndex
from ragspine.retrieval.request import SearchRequest
from ragspine.security.principals import ACL, ANONYMOUS, OPEN, Principal, Viewer
from ragspine.stack import Stack
from tests.conformance.test_production_stacks import STACKS, _environ
from tests.helpers import needs

WORDS = ("gearbox warranty claim repair invoice board salary merger budget audit policy leave holiday contract "
         "renewal pricing customer account server outage incident review hiring bonus travel expense").split()
GROUPS = ("hr", "board", "sales")
VIEWERS = [ANONYMOUS, Viewer(Principal.of("ann", ["hr"])), Viewer(Principal.of("bob", ["board", "sales"])),
           Viewer(Principal.of("eve", list(GROUPS)))]
QUERIES = ["gearbox warranty", "board salary merger", "customer account pricing", "audit", "holiday leave policy"]
MODES = ("hybrid", "economy", "vector")
PG_STACKS = [name for name in STACKS if name.startswith("postgres")]


def _docs(seed: int, n: int) -> list[tuple[str, str, ACL]]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        text = "\n\n".join(" ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 30))) for _ in range(rng.randint(1, 3)))
        roll = rng.random()
        acl = OPEN if roll < 0.35 else ACL.parse({"allow": [f"group:{rng.choice(GROUPS)}"], "deny": ["user:eve"] if roll > 0.9 else []})
        out.append((f"doc{i:03d}", text, acl))
    return out


def _answers(stack: Stack, library: str, viewer: Viewer) -> list:
    retriever = stack.retriever([library])
    out = []
    for q in QUERIES:
        answer = retriever.search(SearchRequest(q, top_k=8, viewer=viewer))
        out.append(([(s["chunk_id"], s["text"], s["scores"]) for s in answer.snippets], list(answer.dense_incomplete.values())))
    return out


def _build(stack: Stack, docs: list[tuple[str, str, ACL]]) -> None:
    stack.ensure_library("L")
    full = stack.pipeline("L")
    for doc_id, text, _ in docs:
        full.ingest_text(doc_id, text)
    full.store.set_acls({d: acl for d, _, acl in docs}, by="test")
    for n, viewer in enumerate(VIEWERS):
        stack.ensure_library(f"V{n}")
        mine = stack.pipeline(f"V{n}")
        for doc_id, text, acl in docs:
            if viewer.sees(acl):
                mine.ingest_text(doc_id, text)


def _pack(name: str, request, tmp_path, lexical: str | None = None) -> None:  # type: ignore[no-untyped-def]
    docs = _docs(11, 50)
    for mode in MODES:  # each mode on stores of its own (a process-local vector store lives as long as its stack)
        env = _environ(name, request, tmp_path / name / mode)
        if lexical is not None:
            env["RAGSPINE_LEXICAL_INDEX"] = lexical
        with Stack(load_settings(env), mode=mode) as stack:
            _build(stack, docs)
            if lexical == "postgres":
                assert type(stack._lexical["L"]).__name__ == "PostgresLexicalIndex"
            for n, viewer in enumerate(VIEWERS):
                got, want = _answers(stack, "L", viewer), _answers(stack, f"V{n}", viewer)
                assert got == want, (name, mode, viewer)
                readable = {d for d, _, acl in docs if viewer.sees(acl)}
                assert all(s[0].split("#")[0] in readable for hits, _ in got for s in hits)
                assert any(hits for hits, _ in got) or viewer is ANONYMOUS, (name, mode, "nothing found")


@pytest.mark.parametrize("name", STACKS)
def test_each_principal_gets_the_answers_of_the_library_of_what_it_may_read(name, request, tmp_path) -> None:
    _pack(name, request, tmp_path)


@pytest.mark.parametrize("name", PG_STACKS)
def test_the_pack_on_postgresql_postings(name, request, tmp_path) -> None:
    """The same pack with BM25 computed in SQL from PostgreSQL's postings (``RAGSPINE_LEXICAL_INDEX=postgres``)."""
    _pack(name, request, tmp_path, "postgres")


def test_the_leaky_inverse_double_fails_the_pack(request, tmp_path, monkeypatch) -> None:
    """Statistics over every row, scores only over the visible ones: what a peer that filters
    after scoring does. The pack must catch it."""
    original = InMemoryLexicalIndex.view

    def leaky(self, viewer, snapshot=None):  # type: ignore[no-untyped-def]
        view = original(self, viewer, snapshot)
        if view is None:
            return None
        n = int(self._active.sum())
        return view._replace(n=n, total_len=float(self._lengths[self._active].sum()), norms=self._norms())

    docs = _docs(11, 50)
    with Stack(load_settings(_environ("embedded", request, tmp_path)), mode="economy") as stack:
        _build(stack, docs)
        monkeypatch.setattr(InMemoryLexicalIndex, "view", leaky)
        stack.retriever(["L"])
        differ = [n for n, viewer in enumerate(VIEWERS) if _answers(stack, "L", viewer) != _answers(stack, f"V{n}", viewer)]
    assert differ, "the leaky double passed the L-versus-L' comparison"


def test_the_leaky_inverse_double_on_postgresql_postings_fails_the_pack(request, tmp_path, monkeypatch) -> None:
    """PostgreSQL's postings made leaky the same way: the whole library's BM25, the chunks the
    principal may not read dropped after scoring."""
    needs("sqlalchemy", "psycopg")
    from ragspine.stores.postgres.lexical import PostgresLexicalIndex

    original = PostgresLexicalIndex.search

    def leaky(self, query_tokens, *, metadata_filter=None, top_k=None, view=None):  # type: ignore[no-untyped-def]
        hits = original(self, query_tokens, metadata_filter=metadata_filter)
        if view is not None:
            doc_of = {c.chunk_id: c.doc_id for c in self.store.get_chunks([h.chunk_id for h in hits])}
            hits = [h for h in hits if not view.snapshot.hides(view.viewer, doc_of[h.chunk_id])]
        return hits if top_k is None else hits[:top_k]

    docs = _docs(11, 50)
    env = {**_environ(PG_STACKS[-1], request, tmp_path), "RAGSPINE_LEXICAL_INDEX": "postgres"}
    with Stack(load_settings(env), mode="economy") as stack:
        _build(stack, docs)
        monkeypatch.setattr(PostgresLexicalIndex, "search", leaky)
        differ = [n for n, viewer in enumerate(VIEWERS) if _answers(stack, "L", viewer) != _answers(stack, f"V{n}", viewer)]
    assert differ, "the leaky double passed the L-versus-L' comparison"


@pytest.mark.parametrize("name", ["embedded", "postgres18+pgvector+redis", "postgres18+pgvector+redis/postings"])
def test_an_acl_change_while_queries_run_is_seen_whole_or_not_at_all(name, request, tmp_path) -> None:
    """Two documents change ACL together (one ``set_acls``) again and again while searches run:
    every answer holds both or neither, never one — no search sees a mix of two ACL states
    (``/postings``: BM25 from PostgreSQL's postings, ``RAGSPINE_LEXICAL_INDEX=postgres``)."""
    import threading

    stack_name, _, layout = name.partition("/")
    env = _environ(stack_name, request, tmp_path / stack_name)
    if layout == "postings":
        env["RAGSPINE_LEXICAL_INDEX"] = "postgres"
    with Stack(load_settings(env), mode="hybrid") as stack:
        stack.ensure_library("L")
        p = stack.pipeline("L")
        for i in range(30):
            p.ingest_text(f"filler{i}", " ".join(random.Random(i).choice(WORDS) for _ in range(20)))
        p.ingest_text("a", "the zanzibar merger memo, first part")
        p.ingest_text("b", "the zanzibar merger memo, second part")
        board, hr = ACL.parse("group:board"), ACL.parse("group:hr")
        p.store.set_acls({"a": board, "b": board}, by="test")
        viewer = Viewer(Principal.of("bob", ["board"]))
        retriever = stack.retriever(["L"])
        stop = threading.Event()
        flips = [0]

        def flip() -> None:
            while not stop.is_set():
                acl = hr if flips[0] % 2 == 0 else board
                p.store.set_acls({"a": acl, "b": acl}, by="flipper")
                flips[0] += 1

        thread = threading.Thread(target=flip)
        thread.start()
        seen: list[frozenset[str]] = []
        try:
            for _ in range(60):
                answer = retriever.search(SearchRequest("zanzibar merger memo", top_k=5, viewer=viewer))
                seen.append(frozenset(s["doc_id"] for s in answer.snippets) & {"a", "b"})
        finally:
            stop.set()
            thread.join()
        assert flips[0] > 5
        assert all(docs in (frozenset(), frozenset({"a", "b"})) for docs in seen), seen
        assert frozenset() in seen or frozenset({"a", "b"}) in seen
