"""A principal's search through the whole narrative channel (the link exit, every leg) equals
the same search on L', the library that holds only the documents it may read: the same
snippets, in the same order, with the same scores (BM25, dense, fused) and the same dense
coverage. An ACL change takes effect on the next search, without a re-ingest."""

from __future__ import annotations

import random

import pytest

from ragspine.config import load_settings
from ragspine.retrieval.request import SearchRequest
from ragspine.security.principals import ACL, ANONYMOUS, OPEN, Principal, Viewer
from ragspine.stack import Stack

WORDS = ("gearbox warranty claim repair invoice board salary merger budget audit policy leave holiday contract "
         "renewal pricing customer account server outage incident review hiring bonus travel expense").split()
GROUPS = ("hr", "board", "sales")
VIEWERS = [ANONYMOUS, Viewer(Principal.of("ann", ["hr"])), Viewer(Principal.of("bob", ["board", "sales"])),
           Viewer(Principal.of("eve", ["hr", "board", "sales"]))]


def _docs(seed: int, n: int) -> list[tuple[str, str, ACL]]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        text = "\n\n".join(" ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 30))) for _ in range(rng.randint(1, 3)))
        roll = rng.random()
        acl = OPEN if roll < 0.35 else ACL.parse({"allow": [f"group:{rng.choice(GROUPS)}"], "deny": ["user:eve"] if roll > 0.9 else []})
        out.append((f"doc{i:03d}", text, acl))
    return out


def _answers(stack: Stack, library: str, viewer: Viewer, queries: list[str]) -> list:
    retriever = stack.retriever([library])
    out = []
    for q in queries:
        answer = retriever.search(SearchRequest(q, top_k=8, viewer=viewer))
        out.append(([(s["chunk_id"], s["text"], s["scores"]) for s in answer.snippets], answer.dense_incomplete))
    return out


@pytest.mark.parametrize("mode", ["hybrid", "economy"])
def test_a_principal_gets_the_answers_of_the_library_of_what_it_may_read(tmp_path, mode) -> None:
    env = {"RAGSPINE_CHUNK_STORE": str(tmp_path / "lib.db"), "RAGSPINE_EMBEDDING": "deterministic", "RAGSPINE_RETRIEVAL_MODE": mode}
    docs = _docs(7, 60)
    queries = ["gearbox warranty", "board salary merger", "customer account pricing", "audit", "holiday leave policy"]
    with Stack(load_settings(env)) as stack:
        stack.ensure_library("L")
        full = stack.pipeline("L")
        for doc_id, text, _ in docs:
            full.ingest_text(doc_id, text)
        full.store.set_acls({d: acl for d, _, acl in docs}, by="test")
        for n, viewer in enumerate(VIEWERS):
            lib = f"V{n}"
            stack.ensure_library(lib)
            mine = stack.pipeline(lib)
            for doc_id, text, acl in docs:
                if viewer.sees(acl):
                    mine.ingest_text(doc_id, text)
            got, want = _answers(stack, "L", viewer, queries), _answers(stack, lib, viewer, queries)
            assert got == want, viewer
        # everything each viewer got is readable by it, and the wide viewer got more than the anonymous one
        seen = {s for n in range(len(VIEWERS)) for s, _, _ in _answers(stack, "L", VIEWERS[n], queries)[0][0]}
        assert seen


def test_an_acl_change_takes_effect_on_the_next_search_without_a_reingest(tmp_path) -> None:
    env = {"RAGSPINE_CHUNK_STORE": str(tmp_path / "lib.db"), "RAGSPINE_EMBEDDING": "deterministic", "RAGSPINE_RETRIEVAL_MODE": "hybrid"}
    with Stack(load_settings(env)) as stack:
        stack.ensure_library("L")
        p = stack.pipeline("L")
        p.ingest_text("pay", "the board salary review for the executives")
        p.ingest_text("open", "the holiday policy for everyone")
        ann, bob = Viewer(Principal.of("ann", ["hr"])), Viewer(Principal.of("bob", ["board"]))
        retriever = stack.retriever(["L"])

        def docs(viewer: Viewer) -> set[str]:
            return {s["doc_id"] for s in retriever.search(SearchRequest("board salary holiday policy", viewer=viewer)).snippets}

        assert docs(ann) == docs(bob) == docs(ANONYMOUS) == {"pay", "open"}
        version = p.store.iter_chunks(doc_id="pay")[0].version
        p.store.set_acls({"pay": ACL.parse("group:board")}, by="admin")
        assert docs(bob) == {"pay", "open"} and docs(ann) == {"open"} and docs(ANONYMOUS) == {"open"}
        p.store.set_acls({"pay": OPEN}, by="admin")
        assert docs(ann) == {"pay", "open"}
        assert p.store.iter_chunks(doc_id="pay")[0].version == version  # nothing was re-ingested
