"""An ACL change takes effect on the next search through the whole narrative channel, without a
re-ingest (the L-versus-L' equality itself is tests/conformance/test_acl_stacks.py's, on every
store layout)."""

from __future__ import annotations

from ragspine.config import load_settings
from ragspine.retrieval.request import SearchRequest
from ragspine.security.principals import ACL, ANONYMOUS, OPEN, Principal, Viewer
from ragspine.stack import Stack


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
