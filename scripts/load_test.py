#!/usr/bin/env python3
"""A bounded loopback load test of `ragspine serve`: retrieval QPS and latency percentiles.

Starts the server on 127.0.0.1 (a temporary SQLite file, in-process jobs), creates a tenant
and a library, ingests a synthetic corpus through the API (single-paragraph documents, so
``--chunks`` documents give exactly that many chunks), then sends ``POST /v1/retrieve`` (or
Dify's ``/retrieval``) from ``--concurrency`` client threads until ``--requests`` requests
or ``--duration`` seconds, whichever comes first. Prints QPS and p50/p90/p99. Traffic goes to
127.0.0.1 only, and the server is stopped at the end.

    .venv/bin/python scripts/load_test.py --mode economy
    .venv/bin/python scripts/load_test.py --mode hybrid          # deterministic embeddings
    .venv/bin/python scripts/load_test.py --concurrency 8 --chunks 20000 \\
        --chunk-store postgresql://127.0.0.1/load --vector-store postgresql://127.0.0.1/load --mode hybrid
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def vocabulary(rng: random.Random, size: int) -> list[str]:
    syllables = ["ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "ze", "pa", "qu", "dor", "lin", "mar", "tek", "gro"]
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def zipf_sampler(rng: random.Random, words: list[str]):
    cum = list(itertools.accumulate(1.0 / (rank + 1) for rank in range(len(words))))
    return lambda k: rng.choices(words, cum_weights=cum, k=k)


def corpus(n: int, seed: int) -> tuple[Callable[[], Iterator[dict]], list[str]]:
    """``(documents, queries)``: ``documents()`` streams the ``n`` single-paragraph documents
    (the same ones on every call), the queries are drawn from the same vocabulary."""
    words = vocabulary(random.Random(seed), 5000)

    def documents() -> Iterator[dict]:
        rng = random.Random(seed)
        vocabulary(rng, 5000)  # the same stream as the vocabulary's
        sample = zipf_sampler(rng, words)
        for i in range(n):
            text = " ".join(sample(rng.randint(45, 60))).capitalize() + "."
            yield {"doc_id": f"doc-{i:07d}", "title": f"Document {i}", "text": text[:470],
                   "metadata": {"year": 2015 + i % 10, "group": f"g{i % 7}"}}

    rng = random.Random(seed + 1)
    sample = zipf_sampler(rng, words)
    return documents, [" ".join(sample(rng.randint(2, 5))) for _ in range(500)]


def server_env(mode: str, workdir: str, admin: str, args: argparse.Namespace) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGSPINE_")}
    env.update({
        "RAGSPINE_CHUNK_STORE": args.chunk_store or os.path.join(workdir, "load.db"),
        "RAGSPINE_VECTOR_STORE": args.vector_store or "memory",
        "RAGSPINE_LEXICAL_INDEX": args.lexical_index,
        "RAGSPINE_AUTO_MIGRATE": "1",
        "RAGSPINE_CACHE_DIR": os.path.join(workdir, "cache"),
        "RAGSPINE_REQUEST_TIMEOUT": "120",
        "RAGSPINE_EMBEDDING": "deterministic" if mode != "economy" else "none",
        "RAGSPINE_RETRIEVAL_MODE": mode,
        "RAGSPINE_ADMIN_TOKEN": admin,
        "RAGSPINE_JOB_QUEUE": "inprocess",
        "RAGSPINE_DATA_DIR": workdir,
    })
    return env


def reuse_in_mode(env: dict[str, str], shown: dict, mode: str) -> None:
    """A library is created with the server's mode and embedding model and keeps them; a
    reused one made by a run in another mode is switched in the service catalog (this
    benchmark's own database), so a hybrid run over an economy run's library is hybrid."""
    embedding = env["RAGSPINE_EMBEDDING"]
    if shown["retrieval_mode"] == mode and shown["embedding_model"] == embedding:
        return
    import sqlalchemy as sa

    from ragspine.config import load_settings
    from ragspine.stack import Stack

    with Stack(load_settings(env)) as stack:
        from ragspine.service.schema import service_library
        from ragspine.service.store import ServiceStore

        store = ServiceStore.for_stack(stack)
        try:
            with store._write() as conn:
                conn.execute(sa.update(service_library).where(service_library.c.library_id == "load/load")
                             .values(retrieval_mode=mode, embedding=embedding))
        finally:
            store.close()
    print(f"reused library switched to mode={mode} embedding={embedding} (it was {shown['retrieval_mode']}/{shown['embedding_model']})")


def preload(env: dict[str, str], library_id: str, documents: Iterable[dict], n: int) -> float:
    """Write the corpus straight through the stack (``NarrativeIndex.ingest_many``, then
    ``sync_vectors`` when the mode has a dense leg): what a bulk load does, minutes at 1M
    chunks where the API's jobs would take hours. The server, already running, follows."""
    from tqdm import tqdm

    from ragspine.config import load_settings
    from ragspine.retrieval.chunking.chunk_store import DocumentChunks
    from ragspine.stack import Stack

    start = time.perf_counter()
    with Stack(load_settings(env)) as stack:
        index = stack.index(library_id)
        chunker = stack.chunker()

        def stream() -> Iterator[DocumentChunks]:
            for d in documents:
                yield DocumentChunks(d["doc_id"], chunker.chunk(d["text"], d["doc_id"], title=d["title"], metadata=d["metadata"]))

        with tqdm(total=n, unit="chunk", desc=f"preload {n:,}", mininterval=10, disable=None) as bar:
            index.ingest_many(stream(), progress=lambda docs, chunks: bar.update(chunks))
        if env["RAGSPINE_RETRIEVAL_MODE"] != "economy":
            with tqdm(total=n, unit="vector", desc="vectors", mininterval=10, disable=None) as bar:
                index.sync_vectors(progress=bar.update)
    return time.perf_counter() - start


def start_server(port: int, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "ragspine.cli", "serve", "--host", "127.0.0.1", "--port", str(port)],
        env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )


def wait_ready(base: str, server: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit("the server exited during start-up")
        try:
            if httpx.get(f"{base}/readyz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise SystemExit("the server did not become ready")


def ingest(http: httpx.Client, docs: Iterable[dict], batch: int) -> float:
    start = time.perf_counter()
    jobs = []
    it = iter(docs)
    while chunk := list(itertools.islice(it, batch)):
        r = http.post("/v1/libraries/load/documents/batch", json={"documents": chunk})
        r.raise_for_status()
        jobs.append(r.json()["job_id"])
    for job_id in jobs:
        while True:
            asked = time.perf_counter()
            reply = http.get(f"/v1/jobs/{job_id}")
            if reply.status_code != 200:
                raise SystemExit(f"GET /v1/jobs/{job_id}: {reply.status_code} after {time.perf_counter() - asked:.1f} s: {reply.text[:300]}")
            job = reply.json()
            if job["state"] == "failed":
                raise SystemExit(f"ingest job failed: {job['error']}")
            if job["state"] == "succeeded":
                break
            time.sleep(0.2)
    return time.perf_counter() - start


def load(base: str, headers: dict, queries: list[str], args: argparse.Namespace) -> tuple[list[float], int, float]:
    latencies: list[float] = []
    errors = 0
    lock = threading.Lock()
    sent = 0
    stop_at = time.monotonic() + args.duration

    def body(q: str) -> tuple[str, dict]:
        if args.endpoint == "dify":
            return "/retrieval", {"knowledge_id": "load", "query": q, "retrieval_setting": {"top_k": args.top_k, "score_threshold": 0}}
        return "/v1/retrieve", {"query": q, "libraries": ["load"], "top_k": args.top_k}

    def client(worker: int) -> None:
        nonlocal sent, errors
        rng = random.Random(worker)
        with httpx.Client(base_url=base, headers=headers, timeout=30) as http:
            while True:
                with lock:
                    if sent >= args.requests or time.monotonic() >= stop_at:
                        return
                    sent += 1
                path, payload = body(rng.choice(queries))
                t0 = time.perf_counter()
                r = http.post(path, json=payload)
                elapsed = time.perf_counter() - t0
                with lock:
                    if r.status_code == 200:
                        latencies.append(elapsed)
                    else:
                        errors += 1

    start = time.perf_counter()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(args.concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return latencies, errors, time.perf_counter() - start


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", default="economy", choices=["economy", "hybrid", "vector"])
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--requests", type=int, default=2000, help="at most this many requests")
    parser.add_argument("--duration", type=float, default=60.0, help="at most this many seconds of load")
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--top-k", type=int, default=10)
    parser.add_argument("--endpoint", default="retrieve", choices=["retrieve", "dify"])
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--chunk-store", help="postgresql://... (an empty database) instead of a temporary SQLite file")
    parser.add_argument("--vector-store", help="postgresql://... (pgvector) or qdrant URL instead of the in-process store")
    parser.add_argument("--lexical-index", default="auto", help="auto | postgres | memory (RAGSPINE_LEXICAL_INDEX)")
    parser.add_argument("--preload", action="store_true",
                        help="write the corpus straight through the stack before the load (a bulk load: for 100k+ chunks) instead of the API's jobs")
    parser.add_argument("--reuse", action="store_true",
                        help="with --chunk-store: keep a library an earlier run left there (tenant 'load', same --chunks) instead of writing it again")
    parser.add_argument("--json", help="append the figures as one JSON line to this file")
    parser.add_argument("--profile", help="record the server with py-spy while the load runs: a flame graph (.svg) or collapsed stacks (other names)")
    args = parser.parse_args()
    if args.requests <= 0 or args.duration <= 0 or args.concurrency <= 0:
        parser.error("--requests, --duration and --concurrency must be positive")

    if args.reuse and not args.chunk_store:
        parser.error("--reuse needs --chunk-store (a temporary SQLite file holds nothing from an earlier run)")
    documents, queries = corpus(args.chunks, args.seed)
    admin = secrets.token_hex(16)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory(prefix="ragspine-load-") as workdir:
        env = server_env(args.mode, workdir, admin, args)
        server = start_server(port, env)
        try:
            wait_ready(base, server)
            with httpx.Client(base_url=base, timeout=300) as http:
                admin_auth = {"Authorization": f"Bearer {admin}"}
                r = http.post("/v1/admin/tenants", json={"tenant_id": "load"}, headers=admin_auth)
                if r.status_code == 409 and args.reuse:
                    r = http.post("/v1/admin/tenants/load/keys", json={}, headers=admin_auth)
                    r.raise_for_status()
                    key = r.json()["key"]
                else:
                    r.raise_for_status()
                    key = r.json()["api_key"]["key"]
                headers = {"Authorization": f"Bearer {key}"}
                http.headers.update(headers)
                r = http.post("/v1/libraries", json={"name": "load", "description": "synthetic"})
                if not (r.status_code == 409 and args.reuse):
                    r.raise_for_status()
                shown = http.get("/v1/libraries/load").json()
                chunks = shown["chunks"]
                if args.reuse:
                    reuse_in_mode(env, shown, args.mode)
                how = "through the API"
                if args.reuse and chunks == args.chunks:
                    ingest_s, how = 0.0, "reused"
                    if args.mode != "economy":  # vectors an economy run did not write
                        ingest_s = preload(env, "load/load", iter(()), 0)
                elif args.preload:
                    ingest_s, how = preload(env, "load/load", documents(), args.chunks), "preloaded"
                else:
                    ingest_s = ingest(http, documents(), args.batch)
                chunks = http.get("/v1/libraries/load").json()["chunks"]
                opened = time.perf_counter()
                http.post("/v1/retrieve", json={"query": queries[0], "libraries": ["load"], "top_k": args.top_k}).raise_for_status()
                open_s = time.perf_counter() - opened
                for q in queries[1 : args.warmup]:
                    http.post("/v1/retrieve", json={"query": q, "libraries": ["load"], "top_k": args.top_k}).raise_for_status()
            spy = None
            if args.profile:
                here = Path(sys.executable).with_name("py-spy")
                spy = subprocess.Popen([str(here) if here.exists() else "py-spy", "record", "--pid", str(server.pid), "--output", args.profile,
                                        "--format", "flamegraph" if args.profile.endswith(".svg") else "raw", "--subprocesses"],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                time.sleep(1.0)
            latencies, errors, wall = load(base, headers, queries, args)
            if spy is not None:
                spy.send_signal(2)
                spy.wait(60)
        finally:
            server.terminate()
            try:
                server.wait(15)
            except subprocess.TimeoutExpired:
                server.kill()
    if not latencies:
        raise SystemExit(f"no successful request ({errors} errors)")
    ms = [x * 1000 for x in latencies]
    rate = f"{chunks / ingest_s:.0f} chunks/s {how}" if ingest_s else how
    print(f"mode={args.mode} endpoint={args.endpoint} chunks={chunks} ingest={ingest_s:.1f}s ({rate}); first query {open_s:.1f}s")
    print(f"requests={len(latencies)} errors={errors} concurrency={args.concurrency} wall={wall:.1f}s")
    print(f"QPS={len(latencies) / wall:.1f}  p50={statistics.median(ms):.1f}ms  p90={percentile(ms, 0.90):.1f}ms  "
          f"p99={percentile(ms, 0.99):.1f}ms  max={max(ms):.1f}ms")
    if args.json:
        import json

        figures = {"mode": args.mode, "chunk_store": "postgresql" if args.chunk_store else "sqlite",
                   "vector_store": (args.vector_store or "memory").split(":")[0], "lexical_index": args.lexical_index,
                   "chunks": chunks, "ingest": how, "ingest_s": round(ingest_s, 1), "first_query_s": round(open_s, 2), "concurrency": args.concurrency,
                   "requests": len(latencies), "errors": errors, "qps": round(len(latencies) / wall, 1),
                   "p50_ms": round(statistics.median(ms), 1), "p90_ms": round(percentile(ms, 0.90), 1),
                   "p99_ms": round(percentile(ms, 0.99), 1)}
        with open(args.json, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(figures) + "\n")
    return 1 if errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
