"""The same dev set written the ways users write libraries, for ``scripts/bench.py --write-paths``.

Each set (BEIR form: a document is ``title + " " + text``, the default 480-character chunker,
economy mode: BM25 alone, where a wrong index shows undiluted) is written into an empty
library four ways, each on its own SQLite file:

* **fresh** — one bulk ingest (``LibraryPipeline.ingest_many``), the lexical index built once;
* **python, one at a time** — ``LibraryPipeline.ingest_text`` per document, the index refreshed
  after each write (what a server's queries between writes do);
* **cli, in batches** — the corpus as Markdown files in ``batches`` folders, one ``ragspine
  ingest`` per folder with a ``ragspine query`` after each (each a new process that loads the
  saved index, replays, merges and saves);
* **service upload jobs** — ``POST /v1/libraries/{name}/documents/batch`` jobs of ``upload``
  documents through the HTTP app (in-process ASGI client, the in-process job queue), a
  ``/v1/retrieve`` between jobs (the library is ``bench/<set>`` in the file: tenant ``bench``).

Every query is answered at depth 100 (a document ranks at its best chunk). Each path is read
*live* (the object or server that wrote it, where there is one) and *reopened* (a new pipeline
or a restarted app over the same file, which loads the saved index); the table gives nDCG@10,
Recall@100, the share of queries whose top 100 equals the fresh build's, and whether the
stored chunks are the fresh build's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from _benchlib import evaluate, load_beir

DEPTH = 100


def _pipeline(db: Path, library: str) -> Any:
    from ragspine.retrieval.pipeline import LibraryPipeline
    from ragspine.stores.sqlite import SQLiteChunkStore

    return LibraryPipeline(SQLiteChunkStore(db, library_id=library), mode="economy")


def _runs(search: Callable[[str], list[str]], queries: dict[str, str]) -> dict[str, list[str]]:
    return {qid: list(dict.fromkeys(search(text)))[:DEPTH] for qid, text in queries.items()}


def _pipeline_search(pipe: Any) -> Callable[[str], list[str]]:
    from ragspine.retrieval.link.narrative_link import NarrativeIndexRetriever

    retriever = NarrativeIndexRetriever(pipe, retry_without_filters=False)
    return lambda text: [s["doc_id"] for s in retriever.retrieve(text, top_k=DEPTH)]


def _chunks(db: Path, library: str) -> set[tuple[str, str]]:
    from ragspine.stores.sqlite import SQLiteChunkStore

    store = SQLiteChunkStore(db, library_id=library)
    try:
        return {(c.chunk_id, c.text) for c in store.iter_chunks()}
    finally:
        store.close()


def fresh(db: Path, library: str, corpus: dict[str, str]) -> Any:
    from ragspine.retrieval.chunking.chunk_store import DocumentChunks

    pipe = _pipeline(db, library)
    pipe.ingest_many(DocumentChunks(d, pipe.chunker.chunk(text, d, title=d)) for d, text in corpus.items())
    return pipe


def one_at_a_time(db: Path, library: str, corpus: dict[str, str]) -> Any:
    pipe = _pipeline(db, library)
    for doc_id, text in corpus.items():
        pipe.ingest_text(doc_id, text, title=doc_id)
        pipe.retriever.refresh()
    return pipe


def cli_batches(db: Path, library: str, corpus: dict[str, str], batches: int, workdir: Path, probe: str) -> None:
    items = list(corpus.items())
    size = -(-len(items) // batches)
    env = {**os.environ, "RAGSPINE_CHUNK_STORE": str(db), "RAGSPINE_RETRIEVAL_MODE": "economy"}
    cli = [sys.executable, "-m", "ragspine.cli"]
    for b in range(batches):
        folder = workdir / f"batch{b}"
        folder.mkdir()
        for i, (doc_id, text) in enumerate(items[b * size : (b + 1) * size]):
            front = f"---\ndoc_id: {json.dumps(doc_id)}\ntitle: {json.dumps(doc_id)}\n---\n"
            (folder / f"{i:06d}.md").write_text(front + text, encoding="utf-8")
        for argv in (["ingest", str(folder), "--library", library], ["query", probe, "--library", library]):
            done = subprocess.run(cli + argv, env=env, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                raise SystemExit(f"ragspine {argv[0]} failed: {done.stderr[-1000:]}")


@contextmanager
def _service(db: Path) -> Iterator[Any]:
    from fastapi.testclient import TestClient

    from ragspine.config import load_settings
    from ragspine.service.app import create_app

    settings = load_settings({
        "RAGSPINE_CHUNK_STORE": str(db), "RAGSPINE_RETRIEVAL_MODE": "economy", "RAGSPINE_EMBEDDING": "none",
        "RAGSPINE_ADMIN_TOKEN": "bench-admin",
    })
    with TestClient(create_app(settings)) as client:
        yield client


def _wait(client: Any, headers: dict[str, str], job_id: str) -> None:
    while True:
        job = client.get(f"/v1/jobs/{job_id}", headers=headers).json()
        if job["state"] == "succeeded":
            return
        if job["state"] == "failed":
            raise SystemExit(f"upload job failed: {job}")
        time.sleep(0.01)


def service_uploads(
    db: Path, library: str, corpus: dict[str, str], upload: int, queries: dict[str, str]
) -> tuple[dict[str, str], dict[str, list[str]]]:
    """Upload ``corpus`` in jobs (a query between them); ``(headers, runs)``: the tenant's key
    and every query's ranking from the server that wrote the library."""
    probe = next(iter(queries.values()))
    with _service(db) as client:
        r = client.post("/v1/admin/tenants", json={"tenant_id": "bench", "name": "Bench"}, headers={"Authorization": "Bearer bench-admin"})
        headers = {"Authorization": f"Bearer {r.json()['api_key']['key']}"}
        client.post("/v1/libraries", json={"name": library, "description": library}, headers=headers)
        items = list(corpus.items())
        for start in range(0, len(items), upload):
            docs = [{"doc_id": d, "title": d, "text": t} for d, t in items[start : start + upload]]
            r = client.post(f"/v1/libraries/{library}/documents/batch", json={"documents": docs}, headers=headers)
            _wait(client, headers, r.json()["job_id"])
            client.post("/v1/retrieve", json={"query": probe, "libraries": [library], "top_k": 10}, headers=headers)
        return headers, _service_runs(client, headers, library)(queries)


def _service_runs(client: Any, headers: dict[str, str], library: str) -> Callable[[dict[str, str]], dict[str, list[str]]]:
    def search(text: str) -> list[str]:
        r = client.post("/v1/retrieve", json={"query": text, "libraries": [library], "top_k": DEPTH}, headers=headers)
        return [s["doc_id"] for s in r.json()["snippets"]]

    return lambda queries: _runs(search, queries)


def section(data_root: Path, sets: list[str], batches: int, upload: int, log: Callable[[str], None]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in sets:
        if not (data_root / name / "corpus.jsonl").exists():
            log(f"  write paths: {name}: not found under {data_root}, skipped")
            continue
        corpus, queries, qrels = load_beir(data_root / name)
        probe = next(iter(queries.values()))
        rows: dict[str, Any] = {}
        with tempfile.TemporaryDirectory(prefix="ragspine-write-paths-") as tmp:
            work = Path(tmp)
            dbs = {p: work / f"{p}.db" for p in ("fresh", "python", "cli", "service")}
            t0 = time.perf_counter()
            base = _runs(_pipeline_search(fresh(dbs["fresh"], name, corpus)), queries)
            timings = {"fresh": time.perf_counter() - t0}
            runs: dict[str, dict[str, list[str]]] = {"fresh": base}
            t0 = time.perf_counter()
            pipe = one_at_a_time(dbs["python"], name, corpus)
            timings["python, one at a time"] = time.perf_counter() - t0
            runs["python, one at a time (live)"] = _runs(_pipeline_search(pipe), queries)
            runs["python, one at a time (reopened)"] = _runs(_pipeline_search(_pipeline(dbs["python"], name)), queries)
            t0 = time.perf_counter()
            (work / "cli").mkdir()
            cli_batches(dbs["cli"], name, corpus, batches, work / "cli", probe)
            timings[f"cli, {batches} batches"] = time.perf_counter() - t0
            runs[f"cli, {batches} batches (reopened)"] = _runs(_pipeline_search(_pipeline(dbs["cli"], name)), queries)
            t0 = time.perf_counter()
            headers, runs[f"service, jobs of {upload} (live)"] = service_uploads(dbs["service"], name, corpus, upload, queries)
            timings[f"service, jobs of {upload}"] = time.perf_counter() - t0
            with _service(dbs["service"]) as client:  # a restarted server: loads the saved index
                runs[f"service, jobs of {upload} (reopened)"] = _service_runs(client, headers, name)(queries)
            chunks = _chunks(dbs["fresh"], name)
            same_chunks = {p: _chunks(db, f"bench/{name}" if p == "service" else name) == chunks for p, db in dbs.items()}
        for label, run in runs.items():
            figures = evaluate(run, qrels)
            path = label.split(" (")[0].split(",")[0]
            rows[label] = {
                **figures,
                "same_top100_as_fresh": sum(run[q] == base[q] for q in queries) / len(queries),
                "same_chunks_as_fresh": same_chunks[path],
            }
        rows["seconds"] = {k: round(v, 1) for k, v in timings.items()}
        out[name] = rows
        log(f"  write paths: {name}: {len(corpus)} documents, {len(queries)} queries, {len(chunks)} chunks")
    return out


def table(results: dict[str, Any]) -> list[str]:
    lines = ["| set | written | nDCG@10 | Recall@100 | top 100 = fresh | same chunks |", "|---|---|---|---|---|---|"]
    for name, rows in results.items():
        for label, f in rows.items():
            if label == "seconds":
                continue
            lines.append(
                f"| {name} | {label} | {f['ndcg@10']:.4f} | {f['recall@100']:.4f} | {100 * f['same_top100_as_fresh']:.1f} % |"
                f" {'yes' if f['same_chunks_as_fresh'] else 'NO'} |"
            )
    return lines
