"""What document ACLs cost at scale, for ``scripts/bench_scale.py --acl`` (issue 29).

On a library kept by an earlier ``bench_scale.py --keep DIR`` run (a copy is fine: this
phase writes ACLs into it), in one process:

1. **no ACLs** (a library left with ACLs by an interrupted run is opened first): ``--queries`` queries through the stack's retriever (economy: tokenize,
   BM25, RRF, fetch, both RESTRICTED exits) as a principal, on the library as it is — p50/p99;
2. **ACLs set**: every document gets one of ``classes`` ACLs (``allow: group:g0000`` ...,
   documents spread round-robin), in one ``set_acls`` transaction (its time is reported);
3. the same queries as principals in 1, 10 and 100 of those groups (each principal's first
   query, which computes its view, apart) — p50/p99 and the ratio to step 1;
4. **an ACL change on 10,000 documents** (one ``set_acls``) and the next query's latency
   (it reads the new ACLs and computes the view again), then p50 again; then a second change
   on 10,000 other documents with its two parts apart: the index's ``refresh`` (reading the
   ACLs) and the next query (placing the rows, the view);
5. **a write of 100 new documents with ACLs** (one ``replace_many``), the index's refresh and
   the next query apart (the rows it adds placed in their classes);
6. resident memory after each step; every document is open again at the end (the written ones
   deleted).

``scripts/bench_scale.py --acl [CLASSES]`` runs it after the other phases, in a fresh process.
"""

from __future__ import annotations

import random
import statistics
import time
from pathlib import Path
from typing import Any

from _benchlib import percentile


def _timed(retriever: Any, qs: list[str], viewer: Any) -> list[float]:
    from ragspine.retrieval.request import SearchRequest

    out = []
    for q in qs:
        t = time.perf_counter()
        retriever.search(SearchRequest(q, top_k=10, viewer=viewer))
        out.append(time.perf_counter() - t)
    return out


def _pct(xs: list[float], p: float) -> float:
    return round(1000 * percentile(xs, p), 2)


def phase_acl(workdir: Path, n_queries: int, *, classes: int = 1000, group_counts: tuple[int, ...] = (1, 10, 100),
              change_docs: int = 10_000) -> dict[str, Any]:
    from bench_scale import LIBRARY, open_stack, peak_rss_mb, queries, rss_mb

    from ragspine.retrieval.chunking.chunk_store import DocumentChunks
    from ragspine.security.principals import ACL, OPEN, Principal, Viewer

    stack = open_stack(workdir, None, "memory")
    retriever = stack.retriever([LIBRARY])
    pipeline = stack.index(LIBRARY)
    store, index = pipeline.store, pipeline.retriever.index
    index.refresh()
    qs = queries(n_queries)
    rng = random.Random(29)
    groups = [f"g{i:04d}" for i in range(classes)]
    group_counts = tuple(g for g in group_counts if g <= classes) or (1,)
    principals = {g: Viewer(Principal.of(f"user{g}", rng.sample(groups, g))) for g in group_counts}
    out: dict[str, Any] = {"chunks": len(index), "classes": classes, "queries": len(qs)}
    docs = store.doc_ids()
    out["documents"] = len(docs)
    if store.document_acls()[1]:  # a library a run stopped half-way left with ACLs: back to none
        store.set_acls(dict.fromkeys(docs, OPEN), by="bench")
        index.refresh()
    _timed(retriever, qs[:10], principals[group_counts[0]])  # warm-up
    base = _timed(retriever, qs, principals[group_counts[0]])
    out["no_acl"] = {"p50_ms": _pct(base, 50), "p99_ms": _pct(base, 99), "rss_mb": round(rss_mb(), 1)}
    acls = [ACL.parse(f"group:{g}") for g in groups]
    t = time.perf_counter()
    store.set_acls({d: acls[i % classes] for i, d in enumerate(docs)}, by="bench")
    out["set_all_s"] = round(time.perf_counter() - t, 1)
    for g, viewer in principals.items():
        t = time.perf_counter()
        _timed(retriever, qs[:1], viewer)
        first = time.perf_counter() - t
        _timed(retriever, qs[1:6], viewer)
        times = _timed(retriever, qs, viewer)
        visible = index.view(viewer)
        out[f"groups_{g}"] = {
            "first_query_ms": round(1000 * first, 1), "p50_ms": _pct(times, 50), "p99_ms": _pct(times, 99),
            "mean_ms": round(1000 * statistics.mean(times), 2), "ratio_p50": round(percentile(times, 50) / percentile(base, 50), 2),
            "ratio_p99": round(percentile(times, 99) / percentile(base, 99), 2), "visible_chunks": visible.n if visible else len(index),
            "rss_mb": round(rss_mb(), 1),
        }
    moved = rng.sample(docs, min(change_docs, len(docs)))
    t = time.perf_counter()
    store.set_acls({d: acls[(i * 7 + 3) % classes] for i, d in enumerate(moved)}, by="bench")
    change_s = time.perf_counter() - t
    viewer = principals[group_counts[1] if len(group_counts) > 1 else group_counts[0]]
    t = time.perf_counter()
    _timed(retriever, qs[:1], viewer)
    after_first = time.perf_counter() - t
    after = _timed(retriever, qs, viewer)
    out["change"] = {"documents": len(moved), "set_acls_s": round(change_s, 2), "next_query_ms": round(1000 * after_first, 1),
                     "p50_ms_after": _pct(after, 50), "p99_ms_after": _pct(after, 99)}
    again = rng.sample(sorted(set(docs) - set(moved)), min(change_docs, len(docs) - len(moved)))
    t = time.perf_counter()
    store.set_acls({d: acls[(i * 11 + 5) % classes] for i, d in enumerate(again)}, by="bench")
    change_s = time.perf_counter() - t
    out["change_again"] = {"documents": len(again), "set_acls_s": round(change_s, 2), **_refresh_then_query(index, retriever, qs[0], viewer)}
    out["write"] = _write(store, index, retriever, qs, viewer, acls, rng)
    out["peak_rss_mb"] = round(peak_rss_mb(), 1)
    t = time.perf_counter()
    store.replace_many([DocumentChunks(d, [], "", OPEN) for d in out["write"].pop("doc_ids")])  # the written ones go
    store.set_acls(dict.fromkeys(docs, OPEN), by="bench")  # the library as it was: every document open
    out["reset_s"] = round(time.perf_counter() - t, 1)
    stack.close()
    return out


def _write(store: Any, index: Any, retriever: Any, qs: list[str], viewer: Any, acls: list[Any], rng: random.Random,
           n_docs: int = 100) -> dict[str, Any]:
    """A write of ``n_docs`` new documents, each with an ACL of the library's classes (one
    ``replace_many``), then the index's refresh and the next query, timed apart: the rows the
    write adds are placed in their classes (alone, or every row again)."""
    from ragspine.retrieval.chunking.chunk_store import DocumentChunks
    from ragspine.retrieval.chunking.chunking import chunk_document

    doc_ids = [f"bench-write-{i:04d}" for i in range(n_docs)]
    written = [DocumentChunks(d, chunk_document(" ".join(rng.sample(qs, 3)), d), "", rng.choice(acls)) for d in doc_ids]
    t = time.perf_counter()
    store.replace_many(written)
    write_s = time.perf_counter() - t
    return {"documents": n_docs, "write_s": round(write_s, 2), **_refresh_then_query(index, retriever, qs[0], viewer), "doc_ids": doc_ids}


def _refresh_then_query(index: Any, retriever: Any, query: str, viewer: Any) -> dict[str, float]:
    """The index's refresh (reading what changed) and the next query (placing rows, the view), timed apart."""
    t = time.perf_counter()
    index.refresh()
    refresh_s = time.perf_counter() - t
    t = time.perf_counter()
    _timed(retriever, [query], viewer)
    return {"refresh_ms": round(1000 * refresh_s, 1), "next_query_ms": round(1000 * (time.perf_counter() - t), 1)}


def table(r: dict[str, Any]) -> str:
    rows = [f"ACLs at {r['chunks']:,} chunks ({r['documents']:,} documents, {r['classes']:,} ACL classes, {r['queries']} queries)",
            "| principal | p50 ms | p99 ms | x p50 | x p99 | first query ms | visible chunks | RSS MB |", "|---|---|---|---|---|---|---|---|",
            f"| no ACLs | {r['no_acl']['p50_ms']} | {r['no_acl']['p99_ms']} | 1.00 | 1.00 | — | {r['chunks']:,} | {r['no_acl']['rss_mb']} |"]
    for key, v in r.items():
        if key.startswith("groups_"):
            rows.append(f"| in {key.split('_')[1]} group(s) | {v['p50_ms']} | {v['p99_ms']} | {v['ratio_p50']} | {v['ratio_p99']} |"
                        f" {v['first_query_ms']} | {v['visible_chunks']:,} | {v['rss_mb']} |")
    c = r["change"]
    rows.append(f"\nSetting every document's ACL: {r['set_all_s']} s. An ACL change on {c['documents']:,} documents: {c['set_acls_s']} s;"
                f" the next query {c['next_query_ms']} ms; then p50 {c['p50_ms_after']} ms, p99 {c['p99_ms_after']} ms. Peak RSS {r['peak_rss_mb']} MB.")
    a = r.get("change_again")
    if a:
        rows.append(f"Another change on {a['documents']:,} documents: {a['set_acls_s']} s; the index's refresh {a['refresh_ms']} ms,"
                    f" then the next query {a['next_query_ms']} ms.")
    w = r.get("write")
    if w:
        rows.append(f"A write of {w['documents']} new documents with ACLs: {w['write_s']} s; the index's refresh {w['refresh_ms']} ms,"
                    f" then the next query {w['next_query_ms']} ms.")
    return "\n".join(rows)


if __name__ == "__main__":
    import argparse
    import json
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workdir", type=Path, help="a directory kept by bench_scale.py --keep (a copy: ACLs are written into it)")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--classes", type=int, default=1000)
    args = parser.parse_args()
    result = phase_acl(args.workdir, args.queries, classes=args.classes)
    print(json.dumps(result, indent=1))
    print(table(result))
