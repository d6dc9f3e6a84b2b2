"""Chunking quality for ``scripts/bench.py --chunkers``: every chunker, with and without the
contextual header, economy and hybrid, on SciFact (document level) and the article forms of
xquad-en, xquad-zh and drcd (passage level), next to bm25s on the same tokens.

* SciFact: each document is ingested with its ``title`` as the title and its abstract as the
  text (as the API and ``ragspine ingest`` take them); a document ranks at its best chunk.
  Reference: bm25s over whole documents (title + text), docs/benchmarks.md's 0.665.
* xquad-en / xquad-zh / drcd: each article (``articles.jsonl``: the paragraphs joined by blank
  lines) is one document. A snippet is a hit when its span (``source_locator``) overlaps the
  query's gold paragraph (``qrels/spans.tsv``) by at least half of the shorter of the two;
  the gold paragraph counts once (binary relevance, one relevant item per query). Reference:
  bm25s over the hand-split paragraphs (``corpus.jsonl``, title + text), docs/benchmarks.md's figures.

The retrieval goes through the project's API (``LibraryPipeline`` → ``NarrativeIndexRetriever``
in economy or hybrid mode, the chunker made by ``make_chunker``, the index text by
``make_index_text_fn``), so what is measured is what a user gets.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _benchlib import evaluate, load_beir, run_bm25s

PASSAGE_SETS = ("xquad-en", "xquad-zh", "drcd")
DEPTH = 100


def load_articles(data: Path) -> tuple[list[dict[str, Any]], dict[str, str], dict[str, tuple[str, int, int]]]:
    """``(articles, queries, gold)``: gold = ``{query id: (article id, start, end)}``."""
    with open(data / "articles.jsonl", encoding="utf-8") as fh:
        articles = [json.loads(line) for line in fh]
    gold: dict[str, tuple[str, int, int]] = {}
    with open(data / "qrels" / "spans.tsv", encoding="utf-8") as fh:
        for line in fh:
            parts = line.rstrip("\n").split("\t")
            if parts[0] == "query-id":
                continue
            gold[parts[0]] = (parts[1], int(parts[2]), int(parts[3]))
    queries = {}
    with open(data / "queries.jsonl", encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            if str(row["_id"]) in gold:
                queries[str(row["_id"])] = row["text"]
    return articles, queries, gold


def span_of(locator: str) -> tuple[int, int]:
    start, end = locator.rsplit("#char=", 1)[1].split(",")
    return int(start), int(end)


def passage_hits(snippets: list[dict[str, Any]], gold: tuple[str, int, int]) -> list[int]:
    """Binary relevance of each snippet: overlap with the gold span >= half the shorter one,
    the gold paragraph counted at its first such snippet only."""
    doc, g0, g1 = gold
    out, found = [], False
    for s in snippets:
        hit = 0
        if not found and s["doc_id"] == doc:
            s0, s1 = span_of(s["source_locator"])
            overlap = min(s1, g1) - max(s0, g0)
            if overlap > 0 and overlap >= 0.5 * min(s1 - s0, g1 - g0):
                hit, found = 1, True
        out.append(hit)
    return out


def passage_scores(relevance: list[list[int]]) -> dict[str, float]:
    """nDCG@10 (one relevant item: ideal DCG 1) and Recall@100, averaged over queries."""
    ndcg = sum(sum(r / math.log2(i + 2) for i, r in enumerate(rel[:10])) for rel in relevance)
    recall = sum(1 for rel in relevance if any(rel[:DEPTH]))
    n = max(len(relevance), 1)
    return {"ndcg@10": round(ndcg / n, 4), "recall@100": round(recall / n, 4)}


def _pipeline(workdir: Path, name: str, chunker: str, contextual: str, mode: str, backend: Any, chars: int) -> Any:
    from ragspine.retrieval.chunking.base import make_chunker
    from ragspine.retrieval.contextual import make_index_text_fn
    from ragspine.retrieval.pipeline import LibraryPipeline
    from ragspine.retrieval.vector.cache import InMemoryEmbeddingCache
    from ragspine.stores.sqlite import SQLiteChunkStore

    options: dict[str, Any] = {"max_chars": chars, "overlap_chars": min(80, chars // 6)}
    chunker, _, packing = chunker.partition(":")  # "layout:unit": RAGSPINE_CHUNK_PACKING=unit
    if packing:
        options["packing"] = packing
    if chunker == "semantic":
        options["embedding_backend"] = backend
    store = SQLiteChunkStore(workdir / f"{name}-{chunker}-{packing}-{chars}-{contextual}-{mode}-{os.getpid()}.db", library_id=name)
    return LibraryPipeline(
        store, mode=mode, embedding_backend=backend if mode != "economy" else None,
        chunker=make_chunker(chunker, **options), index_text=make_index_text_fn(contextual),
        embedding_cache=_CACHE.setdefault(name, InMemoryEmbeddingCache(max_items=2_000_000)) if mode != "economy" else None,
    )


#: One embedding cache per dev set, shared by its configurations: a chunk whose id and index
#: text another configuration already embedded is not embedded again (the keys cover both).
_CACHE: dict[str, Any] = {}


def _run(pipe: Any, docs: list[tuple[str, str, str]], queries: dict[str, str], score: Callable[[str, list[dict]], Any]) -> dict[str, Any]:
    from ragspine.retrieval.link.narrative_link import NarrativeIndexRetriever

    t0 = time.perf_counter()
    chunks = sum(pipe.ingest_text(doc_id, text, title=title, embed=False) for doc_id, title, text in docs)
    pipe.retriever.refresh()
    ingest_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    embedded = pipe.sync_vectors() if pipe.retriever.dense is not None else 0
    embed_s = time.perf_counter() - t0
    retriever = NarrativeIndexRetriever(pipe, retry_without_filters=False)
    t0 = time.perf_counter()
    results = {qid: score(qid, retriever.retrieve(text, top_k=400)) for qid, text in queries.items()}
    query_s = time.perf_counter() - t0
    pipe.store.close()
    return {"results": results, "chunks": chunks, "ingest_s": round(ingest_s, 2), "embedded": embedded,
            "embed_s": round(embed_s, 1), "query_ms": round(1000 * query_s / max(len(queries), 1), 2)}


Config = tuple[str, int, str, str]  # chunker, max_chars, contextual, mode


def _label(config: Config) -> str:
    chunker, chars, contextual, mode = config
    return f"{chunker}/{chars} {contextual} {mode}"


def scifact(data: Path, configs: list[Config], backend: Any, log: Callable[[str], None]) -> dict[str, Any]:
    corpus, queries, qrels = load_beir(data)
    rows = {}
    with open(data / "corpus.jsonl", encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            rows[str(row["_id"])] = (str(row["_id"]), row.get("title", ""), row["text"])
    out: dict[str, Any] = {"bm25s whole documents": evaluate(run_bm25s(corpus, queries), qrels)}
    with tempfile.TemporaryDirectory(prefix="ragspine-chunking-") as tmp:
        for config in configs:
            chunker, chars, contextual, mode = config
            log(f"  chunkers: scifact {_label(config)} ...")
            pipe = _pipeline(Path(tmp), "scifact", chunker, contextual, mode, backend, chars)
            run = _run(pipe, list(rows.values()), queries,
                       lambda qid, snippets: list(dict.fromkeys(s["doc_id"] for s in snippets))[:DEPTH])
            out[_label(config)] = {**evaluate(run.pop("results"), qrels), **run}
            log(f"  chunkers: scifact {_label(config)}: nDCG@10 {out[_label(config)]['ndcg@10']:.4f}, R@100 {out[_label(config)]['recall@100']:.3f}")
    return out


def passages(data: Path, configs: list[Config], backend: Any, log: Callable[[str], None]) -> dict[str, Any]:
    articles, queries, gold = load_articles(data)
    corpus, para_queries, qrels = load_beir(data)
    out: dict[str, Any] = {"bm25s hand-split paragraphs": evaluate(run_bm25s(corpus, para_queries), qrels)}
    docs = [(str(a["_id"]), a.get("title", ""), a["text"]) for a in articles]
    with tempfile.TemporaryDirectory(prefix="ragspine-chunking-") as tmp:
        for config in configs:
            chunker, chars, contextual, mode = config
            log(f"  chunkers: {data.name} {_label(config)} ...")
            pipe = _pipeline(Path(tmp), data.name, chunker, contextual, mode, backend, chars)
            run = _run(pipe, docs, queries, lambda qid, snippets: passage_hits(snippets, gold[qid]))
            out[_label(config)] = {**passage_scores(list(run.pop("results").values())), **run}
            log(f"  chunkers: {data.name} {_label(config)}: nDCG@10 {out[_label(config)]['ndcg@10']:.4f}, R@100 {out[_label(config)]['recall@100']:.3f}")
    return out


def section(
    data_root: Path, chunkers: list[str], modes: list[str], sets: list[str], log: Callable[[str], None], budgets: list[int] | None = None,
    headers: tuple[str, ...] = ("none", "header"),
) -> dict[str, Any]:
    """Every (chunker, budget, contextual, mode) on every set found under ``data_root``."""
    backend = None
    if any(m != "economy" for m in modes):
        from ragspine.config import load_settings
        from ragspine.retrieval.vector.embedding_backends import make_embedding_backend

        backend = make_embedding_backend("auto", settings=load_settings())
        if backend is None:
            raise SystemExit("hybrid runs need the [embed-onnx] extra: scripts/install embed-onnx,test")
    configs = [(c, b, h, m) for m in modes for c in chunkers for b in (budgets or [480]) for h in headers
               if not (c == "semantic" and m == "economy")]  # semantic needs the embedding model
    out: dict[str, Any] = {}
    for name in sets:
        data = data_root / name
        if not data.exists():
            log(f"  chunkers: {data} not found, skipped")
            continue
        fn = scifact if name == "scifact" else passages
        out[name] = fn(data, configs, backend, log)
    return out


def table(results: dict[str, Any]) -> list[str]:
    """Markdown rows: set | configuration | nDCG@10 | Recall@100 (reference first)."""
    lines = ["| set | configuration | nDCG@10 | Recall@100 | chunks |", "|---|---|---|---|---|"]
    for name, rows in results.items():
        for config, figures in rows.items():
            lines.append(f"| {name} | {config} | {figures['ndcg@10']:.3f} | {figures['recall@100']:.3f} | {figures.get('chunks', '')} |")
    return lines
