"""A re-ingest is never observed as "neither version", in any mode override, on SQLite and PostgreSQL.

Four writer threads re-ingest their documents again and again (each version with its own
marker in every paragraph and its own number of chunks), the way the service writes
(``LibraryPipeline.replace_docs``); meanwhile four reader threads query every document by its
own term through the link exit, each with a mode override (economy, hybrid, vector: the
``Stack``'s pipelines of one library share its lexical index and vector store, as the
service's are). Every answer must hold the document — never missing — and its snippets must
all be chunks of one version (each text that version's).
"""

from __future__ import annotations

import random
import re
import threading
import time
from typing import Any

import pytest

from ragspine.config import load_settings
from ragspine.retrieval.link.narrative_link import NarrativeIndexRetriever
from ragspine.stack import Stack

WRITERS = READERS = 4
DOCS = 12
SECONDS = 4.0
MODES = ("economy", "hybrid", "vector")
MARKER = re.compile(r"qv(\d{4})q")
FILLER = "The inspection covers the blades, the bearing and the gearbox oil; findings are logged. "


def term(doc: int) -> str:
    return f"zeta{doc:02d}kilo"


def version_text(doc: int, v: int) -> str:
    paragraphs = 1 + v % 3
    return "\n\n".join(f"qv{v:04d}q " + f"{term(doc)} " * 8 + f"part {i + 1}. " + FILLER * 3 for i in range(paragraphs))


def _environ(kind: str, request: Any, tmp_path: Any) -> dict[str, str]:
    env = {"RAGSPINE_EMBEDDING": "deterministic", "RAGSPINE_DATA_DIR": str(tmp_path / "data"),
           "RAGSPINE_RETRIEVAL_MODE": "hybrid", "RAGSPINE_CHUNK_CHARS": "400"}
    if kind == "sqlite":
        env["RAGSPINE_CHUNK_STORE"] = str(tmp_path / "chunks.db")
    else:
        url, schema = request.getfixturevalue("pg_schema")
        env.update(RAGSPINE_CHUNK_STORE=url, RAGSPINE_PG_SCHEMA=schema, RAGSPINE_VECTOR_STORE="pgvector")
    return env


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_reingested_document_is_always_seen_in_exactly_one_version(kind, request, tmp_path):
    stack = Stack(load_settings(_environ(kind, request, tmp_path)))
    try:
        stack.ensure_library("conc", "turbines")
        writer_pipeline = stack.pipeline("conc")
        for v in (1, 2, 3):  # every document is found at every length, in every mode, when nobody writes
            for d in range(DOCS):
                writer_pipeline.ingest_text(f"doc{d:02d}", version_text(d, v), title=f"doc {d}")
            for mode in MODES:
                retriever = NarrativeIndexRetriever(stack.pipeline("conc", mode=mode))
                for d in range(DOCS):
                    snippets = retriever.search(term(d), top_k=3).snippets
                    assert {s["version"] for s in snippets if s["doc_id"] == f"doc{d:02d}"} == {v}, (mode, d, v)
        version = [3] * DOCS
        stop = threading.Event()
        errors: list[str] = []
        seen: list[int] = [0]

        def write(w: int) -> None:
            mine = [d for d in range(DOCS) if d % WRITERS == w]
            while not stop.is_set():
                for d in mine:
                    v = version[d] + 1
                    stack.pipeline("conc").ingest_text(f"doc{d:02d}", version_text(d, v), title=f"doc {d}")
                    version[d] = v

        def read(r: int) -> None:
            rng = random.Random(r)
            while not stop.is_set():
                d = rng.randrange(DOCS)
                mode = MODES[rng.randrange(len(MODES))]
                answer = NarrativeIndexRetriever(stack.pipeline("conc", mode=mode)).search(term(d), top_k=rng.choice((1, 3)))
                mine = [s for s in answer.snippets if s["doc_id"] == f"doc{d:02d}"]
                versions = {s["version"] for s in mine}
                markers = {int(m) for s in mine for m in MARKER.findall(s["text"])}
                seen[0] += 1
                if not mine:
                    errors.append(f"{mode}: doc{d:02d} missing from {[s['doc_id'] for s in answer.snippets]}")
                elif len(versions) != 1 or len(markers) != 1:
                    errors.append(f"{mode}: doc{d:02d} in versions {sorted(versions)}, markers {sorted(markers)}")

        threads = [threading.Thread(target=write, args=(w,)) for w in range(WRITERS)]
        threads += [threading.Thread(target=read, args=(r,)) for r in range(READERS)]
        for t in threads:
            t.start()
        time.sleep(SECONDS)
        stop.set()
        for t in threads:
            t.join(60)
        assert seen[0] > 50 and min(version) > 3, (seen, version)
        by_mode = {m: sum(e.startswith(m + ":") for e in errors) for m in MODES}
        assert not errors, f"{len(errors)} of {seen[0]} reads {by_mode}: {errors[:5]}"
    finally:
        stack.close()


@pytest.mark.parametrize("mode", MODES)
def test_the_last_attempt_shows_a_document_every_attempt_saw_replaced(sqlite_db, monkeypatch, mode):
    """Deterministic form of the worst case: a writer commits a new version of the document
    between every ranking and its fetch, so every attempt is stale — the last one still shows
    the document, in one version (never none)."""
    from ragspine.retrieval.chunk_cache import ChunkCache
    from ragspine.retrieval.pipeline import LibraryPipeline
    from ragspine.retrieval.vector.embedding_backends import DeterministicEmbeddingBackend

    store = sqlite_db.chunk_store("lib")
    backend = DeterministicEmbeddingBackend() if mode != "economy" else None
    pipeline = LibraryPipeline(store, embedding_backend=backend, mode=mode, chunk_chars=400,
                               chunk_cache=ChunkCache(0))  # every text from the store
    for d in range(DOCS):
        pipeline.ingest_text(f"doc{d:02d}", version_text(d, 1), title=f"doc {d}")  # store version = marker
    fetch, versions = store.get_chunks, iter(range(2, 1000))
    racing: list[int] = []

    def racing_fetch(chunk_ids):
        if any(c.startswith("doc01#") for c in chunk_ids) and not racing:
            racing.append(next(versions))
            pipeline.ingest_text("doc01", version_text(1, racing[-1]), title="doc 1")  # committed at the worst moment
            racing.pop()
        return fetch(chunk_ids)

    monkeypatch.setattr(store, "get_chunks", racing_fetch)
    answer = NarrativeIndexRetriever(pipeline).search(term(1), top_k=3)
    mine = [s for s in answer.snippets if s["doc_id"] == "doc01"]
    assert mine, [s["doc_id"] for s in answer.snippets]
    (v,) = {s["version"] for s in mine}
    assert all(MARKER.findall(s["text"]) and {int(m) for m in MARKER.findall(s["text"])} == {v} for s in mine)
