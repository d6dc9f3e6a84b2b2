#!/usr/bin/env python
"""Retrieval quality on a BEIR dataset through RAGSpine's own API, next to bm25s.

    .venv/bin/python scripts/bench_scifact.py --data ../shared/data/scifact [--modes economy,auto]

For each retrieval mode the corpus (``title + " " + text``) is ingested through
``NarrativeIndex.ingest_text`` into a temporary SQLite store and every test query goes through
``NarrativeIndexRetriever.retrieve`` (the product path: glossary multi-query, RRF, exits).
Two chunkings are measured: ``doc`` (one chunk per document, directly comparable with
document-level BM25) and ``480/80`` (the default chunker; a document ranks at its best chunk).
bm25s (``method="lucene"``, k1=1.5, b=0.75) runs on exactly the same tokens.

Prints nDCG@10 and Recall@100 per system and writes JSON (``--out``).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ragspine.retrieval.chunking.sqlite_store import SQLiteChunkStore  # noqa: E402
from ragspine.retrieval.lexical.tokenizer import tokenize  # noqa: E402
from ragspine.retrieval.link.narrative_link import build_narrative_retriever  # noqa: E402

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"


def load_beir(data: Path, split: str = "test") -> tuple[dict[str, str], dict[str, str], dict[str, set[str]]]:
    corpus = {}
    with open(data / "corpus.jsonl", encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            corpus[str(row["_id"])] = f"{row.get('title', '')} {row['text']}".strip()
    qrels: dict[str, set[str]] = {}
    with open(data / "qrels" / f"{split}.tsv", encoding="utf-8") as fh:
        for line in fh:
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 3 or parts[0] == "query-id" or int(parts[2]) <= 0:
                continue
            qrels.setdefault(parts[0], set()).add(parts[1])
    queries = {}
    with open(data / "queries.jsonl", encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            if str(row["_id"]) in qrels:
                queries[str(row["_id"])] = row["text"]
    return corpus, queries, qrels


def ndcg_at(ranked: list[str], relevant: set[str], k: int = 10) -> float:
    dcg = sum(1.0 / math.log2(i + 2) for i, d in enumerate(ranked[:k]) if d in relevant)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(relevant), k)))
    return dcg / ideal if ideal else 0.0


def recall_at(ranked: list[str], relevant: set[str], k: int = 100) -> float:
    return len(set(ranked[:k]) & relevant) / len(relevant) if relevant else 0.0


def evaluate(runs: dict[str, list[str]], qrels: dict[str, set[str]]) -> dict[str, float]:
    n = len(runs)
    return {
        "ndcg@10": sum(ndcg_at(runs[q], qrels[q]) for q in runs) / n,
        "recall@100": sum(recall_at(runs[q], qrels[q]) for q in runs) / n,
    }


def run_bm25s(corpus: dict[str, str], queries: dict[str, str]) -> dict[str, list[str]]:
    import bm25s

    ids = list(corpus)
    model = bm25s.BM25(method="lucene", k1=1.5, b=0.75)
    model.index([tokenize(corpus[d]) for d in ids], show_progress=False)
    runs = {}
    for qid, text in queries.items():
        tokens = [t for t in tokenize(text) if t in model.vocab_dict]
        if not tokens:
            runs[qid] = []
            continue
        docs, _ = model.retrieve([tokens], k=100, show_progress=False)
        runs[qid] = [ids[i] for i in docs[0]]
    return runs


def run_ragspine(corpus, queries, *, mode: str, max_chars: int, overlap: int, workdir: Path):  # type: ignore[no-untyped-def]
    from ragspine.retrieval.vector.embedding_backends import make_embedding_backend

    backend = make_embedding_backend("auto") if mode != "economy" else None
    if mode != "economy" and backend is None:
        raise SystemExit("the auto/hybrid run needs the [embed-onnx] extra: scripts/install embed-onnx,test")
    store = SQLiteChunkStore(workdir / f"{mode}-{max_chars}.db", library_id="scifact")
    retriever, _ = build_narrative_retriever(store, embedding_backend=backend, mode=mode)
    index = retriever.index
    index.chunk_chars, index.overlap_chars = max_chars, overlap
    t0 = time.perf_counter()
    for doc_id, text in corpus.items():
        index.ingest_text(doc_id, text, embed=False)
    ingest_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    index.sync_vectors()
    embed_s = time.perf_counter() - t0
    runs, t0 = {}, time.perf_counter()
    for qid, text in queries.items():
        snippets = retriever.retrieve(text, top_k=400)
        ranked = list(dict.fromkeys(s["doc_id"] for s in snippets))
        runs[qid] = ranked[:100]
    query_s = time.perf_counter() - t0
    store.close()
    return runs, {"ingest_s": round(ingest_s, 2), "index_and_embed_s": round(embed_s, 2), "query_ms": round(1000 * query_s / len(queries), 2)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="BEIR dataset directory")
    parser.add_argument("--modes", default="economy,auto", help="comma-separated retrieval modes")
    parser.add_argument("--chunkings", default="doc,480", help="doc (one chunk per document) and/or 480 (default chunker)")
    parser.add_argument("--out", type=Path, default=Path("bench-results/scifact.json"))
    args = parser.parse_args()
    if not (args.data / "corpus.jsonl").exists():
        raise SystemExit(f"no BEIR corpus at {args.data}; pass --data DIR")
    corpus, queries, qrels = load_beir(args.data)
    print(f"{args.data.name}: {len(corpus)} documents, {len(queries)} test queries")
    results: dict[str, dict[str, float]] = {}
    t0 = time.perf_counter()
    results["bm25s lucene (same tokens)"] = evaluate(run_bm25s(corpus, queries), qrels)
    results["bm25s lucene (same tokens)"]["seconds"] = round(time.perf_counter() - t0, 2)
    with tempfile.TemporaryDirectory(prefix="ragspine-bench-") as tmp:
        for chunking in args.chunkings.split(","):
            max_chars, overlap = (10**9, 0) if chunking == "doc" else (int(chunking), 80)
            for mode in args.modes.split(","):
                runs, timing = run_ragspine(corpus, queries, mode=mode, max_chars=max_chars, overlap=overlap, workdir=Path(tmp))
                label = f"ragspine {mode} ({'one chunk per doc' if chunking == 'doc' else f'{max_chars}/80 chunks'})"
                results[label] = {**evaluate(runs, qrels), **timing}
                print(f"  done: {label}", flush=True)
    print(f"\n{'system':55s} {'nDCG@10':>8s} {'R@100':>7s}")
    for label, r in results.items():
        print(f"{label:55s} {r['ndcg@10']:8.4f} {r['recall@100']:7.4f}   {json.dumps({k: v for k, v in r.items() if k not in ('ndcg@10', 'recall@100')})}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
