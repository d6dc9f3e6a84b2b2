"""RAPTOR for ``scripts/bench.py --raptor``: nDCG@10 and Recall@100 with and without RAPTOR's
ranking, the tree's build time and size, on the article form of a passage set (default
xquad-en: 48 articles cut by the default chunker, 480/80) with the packaged MiniLM (ONNX).

Each article is one document; a snippet is a hit when it overlaps the query's gold paragraph
by half the shorter span (``_bench_chunking.passage_hits``). Hybrid mode; a seeded sample of
``--raptor-queries`` queries, the same for every row. A tree is built per threshold
(``RAGSPINE_RAPTOR_THRESHOLD``; extractive texts, the other options at their defaults) with
``rebuild`` and searched through ``make_raptor_retriever`` — what ``ragspine raptor build`` and
``query --raptor`` do. Small on purpose: the machine has two cores and other benchmarks run
next to it, so the times are those of a shared machine.
"""

from __future__ import annotations

import os
import random
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _bench_chunking import load_articles, passage_hits, passage_scores

DEPTH = 100


def _library(workdir: Path, name: str, backend: Any, articles: list[dict[str, Any]], log: Callable[[str], None]) -> Any:
    from ragspine.retrieval.pipeline import LibraryPipeline
    from ragspine.stores.sqlite import SQLiteChunkStore

    pipe = LibraryPipeline(SQLiteChunkStore(workdir / f"{name}-{os.getpid()}.db", library_id=name), mode="hybrid",
                           embedding_backend=backend)
    t0 = time.perf_counter()
    chunks = sum(pipe.ingest_text(str(a["_id"]), a["text"], title=a.get("title", ""), source=str(a["_id"]), embed=False)
                 for a in articles)
    pipe.retriever.refresh()
    pipe.sync_vectors()
    log(f"  raptor: {name}: {len(articles)} articles, {chunks} chunks, embedded in {time.perf_counter() - t0:.1f}s")
    pipe.chunks = chunks  # type: ignore[attr-defined]
    return pipe


def _score(retriever: Any, queries: dict[str, str], gold: dict[str, Any]) -> dict[str, Any]:
    t0 = time.perf_counter()
    relevance = [passage_hits(retriever.retrieve(text, top_k=DEPTH), gold[qid]) for qid, text in queries.items()]
    ms = 1000 * (time.perf_counter() - t0) / max(len(queries), 1)
    return {**passage_scores(relevance), "query_ms": round(ms, 1)}


def _synthesis_share(pipe: Any, queries: dict[str, str]) -> float:
    """The share of queries whose dense top 10 (the collapsed tree's) holds a leaf that came
    through a synthesis node — how often RAPTOR changed what the dense leg ranks."""
    from ragspine.retrieval.raptor.retriever import raptor_leg

    leg = raptor_leg(pipe)
    assert leg is not None
    hit = sum(1 for text in queries.values() if any(node is not None for _, _, node in leg.collapse(text, None, 10)))
    return round(hit / max(len(queries), 1), 3)


def section(data_root: Path, sets: list[str], thresholds: list[float], n_queries: int, log: Callable[[str], None]) -> dict[str, Any]:
    from ragspine.config import load_settings
    from ragspine.retrieval.link.narrative_link import NarrativeIndexRetriever
    from ragspine.retrieval.raptor import RaptorOptions, make_raptor_retriever, make_raptor_store, rebuild
    from ragspine.retrieval.vector.embedding_backends import make_embedding_backend

    backend = make_embedding_backend("onnx", settings=load_settings())
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="ragspine-raptor-") as tmp:
        for name in sets:
            data = data_root / name
            if not (data / "articles.jsonl").exists():
                log(f"  raptor: {data} has no articles.jsonl, skipped")
                continue
            articles, queries, gold = load_articles(data)
            ids = sorted(queries)
            sample = sorted(random.Random(0).sample(ids, min(n_queries, len(ids))))
            asked = {qid: queries[qid] for qid in sample}
            pipe = _library(Path(tmp), name, backend, articles, log)
            rows: dict[str, Any] = {"hybrid (RAPTOR off)": {**_score(NarrativeIndexRetriever(pipe, retry_without_filters=False), asked, gold),
                                                           "chunks": pipe.chunks}}
            log(f"  raptor: {name} off: nDCG@10 {rows['hybrid (RAPTOR off)']['ndcg@10']:.4f}")
            trees = make_raptor_store(name, database=pipe.store.db)
            for threshold in thresholds:
                options = RaptorOptions(threshold=threshold)
                t0 = time.perf_counter()
                tree, _ = rebuild(pipe, trees, options=options, force=True)
                build_s = time.perf_counter() - t0
                assert tree is not None
                levels = {level: sum(1 for n in tree.nodes if n.level == level) for level in sorted({n.level for n in tree.nodes})}
                covered = len({leaf.chunk_id for n in tree.nodes if n.level == 1 for leaf in n.leaves})
                label = f"hybrid + RAPTOR (threshold {threshold:g})"
                rows[label] = {**_score(make_raptor_retriever(pipe, options=options, retry_without_filters=False), asked, gold),
                               "build_s": round(build_s, 2), "nodes": len(tree.nodes), "nodes_per_level": levels,
                               "chunks_in_a_cluster": covered, "chunks": pipe.chunks,
                               "synthesis_in_dense_top10": _synthesis_share(pipe, asked)}
                log(f"  raptor: {name} {label}: nDCG@10 {rows[label]['ndcg@10']:.4f}, {len(tree.nodes)} nodes {levels},"
                    f" built in {build_s:.1f}s")
            out[f"{name} ({len(asked)} queries)"] = rows
            pipe.store.close()
    return out


def table(results: dict[str, Any]) -> list[str]:
    lines = ["| set | configuration | nDCG@10 | Recall@100 | ms/query | build s | nodes (per level) | chunks clustered"
             " | queries with a synthesis hit in the dense top 10 |", "|---|---|---|---|---|---|---|---|---|"]
    for name, rows in results.items():
        for label, f in rows.items():
            nodes = f"{f['nodes']} {f['nodes_per_level']}" if "nodes" in f else ""
            clustered = f"{f['chunks_in_a_cluster']}/{f['chunks']}" if "nodes" in f else f"{f['chunks']} chunks"
            lines.append(f"| {name} | {label} | {f['ndcg@10']:.4f} | {f['recall@100']:.3f} | {f['query_ms']} | {f.get('build_s', '')} |"
                         f" {nodes} | {clustered} | {f.get('synthesis_in_dense_top10', '')} |")
    return lines
