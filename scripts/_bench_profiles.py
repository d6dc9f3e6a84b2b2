"""Named profiles for ``scripts/bench.py --profiles``: each profile of ``ragspine.profile.PROFILES``
on every dev set, built and queried through ``Stack`` exactly as ``ragspine --profile NAME
ingest`` / ``query`` would, next to the bm25s reference on the same queries in the same run.

* SciFact and nq-open: document level — each document (a passage) ingested with its title;
  a document ranks at its best chunk. Reference: bm25s over whole documents (title + text).
* xquad-en / xquad-zh / drcd: each article is one document; a snippet is a hit when it
  overlaps the gold paragraph by half the shorter span (``_bench_chunking.passage_hits``).
  Reference: bm25s over the hand-split paragraphs.

``queries``: the first N query ids of each set (sorted), the same for every profile and the
reference; ``skip``: ``profile@set`` pairs not run (printed as such).
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _bench_chunking import DEPTH, load_articles, passage_hits, passage_scores
from _benchlib import evaluate, load_beir, run_bm25s

DOCUMENT_SETS = ("scifact", "nq-open")


def _docs(data: Path) -> list[tuple[str, str, str]]:
    with open(data / "corpus.jsonl", encoding="utf-8") as fh:
        return [(str(r["_id"]), r.get("title", ""), r["text"]) for r in map(json.loads, fh)]


def _first(queries: dict[str, str], n: int | None) -> dict[str, str]:
    return queries if not n else {q: queries[q] for q in sorted(queries)[:n]}


def _run_profile(name: str, workdir: Path, docs: list[tuple[str, str, str]], queries: dict[str, str],
                 score: Callable[[str, list[dict[str, Any]]], Any]) -> dict[str, Any]:
    from ragspine.config import load_settings
    from ragspine.stack import Stack

    settings = load_settings({"RAGSPINE_PROFILE": name, "RAGSPINE_CHUNK_STORE": str(workdir / f"{name}.db"),
                              "RAGSPINE_CACHE_DIR": str(workdir / "cache"), "RAGSPINE_DATA_DIR": str(workdir)})
    with Stack(settings) as stack:
        stack.ensure_library("bench")
        pipe = stack.pipeline("bench")
        stack.record_profile("bench")
        t0 = time.perf_counter()
        chunks = sum(pipe.ingest_text(doc_id, text, title=title, embed=False) for doc_id, title, text in docs)
        ingest_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        embedded = pipe.sync_vectors() if pipe.embedding_backend is not None else 0
        embed_s = time.perf_counter() - t0
        retriever = stack.retriever(["bench"], retry_without_filters=False)
        t0 = time.perf_counter()
        results = {qid: score(qid, retriever.retrieve(text, top_k=DEPTH)) for qid, text in queries.items()}
        query_s = time.perf_counter() - t0
    return {"results": results, "chunks": chunks, "ingest_s": round(ingest_s, 1), "embedded": embedded, "embed_s": round(embed_s, 1),
            "query_ms": round(1000 * query_s / max(len(queries), 1), 1)}


def section(data_root: Path, profiles: list[str], sets: list[str], log: Callable[[str], None], *,
            queries: int | None = None, skip: set[str] | frozenset[str] = frozenset()) -> dict[str, Any]:
    """``{set: {"bm25s reference": figures, profile: figures | {"skipped": why}}}``."""
    out: dict[str, Any] = {}
    for set_name in sets:
        data = data_root / set_name
        if not data.exists():
            log(f"  profiles: {data} not found, skipped")
            continue
        corpus, beir_queries, qrels = load_beir(data)
        if set_name in DOCUMENT_SETS:
            docs, asked = _docs(data), _first(beir_queries, queries)
            rows: dict[str, Any] = {"bm25s reference": evaluate(run_bm25s(corpus, asked), {q: qrels[q] for q in asked})}

            def score(qid: str, snippets: list[dict[str, Any]]) -> Any:
                return list(dict.fromkeys(s["doc_id"] for s in snippets))[:DEPTH]

            def figures(results: dict[str, Any], asked: dict[str, str] = asked, qrels: dict[str, set[str]] = qrels) -> dict[str, float]:
                return evaluate(results, {q: qrels[q] for q in asked})
        else:
            articles, span_queries, gold = load_articles(data)
            asked = _first(span_queries, queries)
            para = {q: beir_queries[q] for q in asked if q in beir_queries}
            rows = {"bm25s reference": evaluate(run_bm25s(corpus, para), {q: qrels[q] for q in para})}
            docs = [(str(a["_id"]), a.get("title", ""), a["text"]) for a in articles]

            def score(qid: str, snippets: list[dict[str, Any]], gold: dict[str, Any] = gold) -> Any:
                return passage_hits(snippets, gold[qid])

            def figures(results: dict[str, Any], asked: dict[str, str] = asked) -> dict[str, float]:
                return passage_scores(list(results.values()))
        log(f"  profiles: {set_name}: {len(docs)} documents, {len(asked)} queries; bm25s nDCG@10 {rows['bm25s reference']['ndcg@10']:.4f}")
        for name in profiles:
            if f"{name}@{set_name}" in skip:
                rows[name] = {"skipped": "not run (--profile-skip)"}
                continue
            with tempfile.TemporaryDirectory(prefix="ragspine-profiles-") as tmp:
                log(f"  profiles: {set_name} {name} ...")
                run = _run_profile(name, Path(tmp), docs, asked, score)
                rows[name] = {**figures(run.pop("results")), **run}
                log(f"  profiles: {set_name} {name}: nDCG@10 {rows[name]['ndcg@10']:.4f}, R@100 {rows[name]['recall@100']:.3f}"
                    f" ({run['chunks']} chunks, embed {run['embed_s']} s, {run['query_ms']} ms/query)")
        out[set_name] = rows
    return out


def table(results: dict[str, Any]) -> list[str]:
    """Markdown: one row per profile (the bm25s reference first), one column per set (nDCG@10 / Recall@100)."""
    sets = list(results)
    names = list(dict.fromkeys(name for rows in results.values() for name in rows))
    lines = ["| profile | " + " | ".join(sets) + " |", "|---|" + "---|" * len(sets)]
    for name in names:
        cells = []
        for set_name in sets:
            figures = results[set_name].get(name)
            if figures is None or "skipped" in figures:
                cells.append("not run")
            else:
                cells.append(f"{figures['ndcg@10']:.4f} / {figures['recall@100']:.3f}")
        label = f"**{name}**" if name == "bm25s reference" else f"`{name}`"
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines
