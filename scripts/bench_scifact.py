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
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _benchlib import (
    DEFAULT_DATA,
    evaluate,
    load_beir,
    require_beir,
    run_bm25s,
    run_ragspine,
)

__all__ = ["DEFAULT_DATA", "evaluate", "load_beir", "run_bm25s", "run_ragspine"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="BEIR dataset directory")
    parser.add_argument("--modes", default="economy,auto", help="comma-separated retrieval modes")
    parser.add_argument("--chunkings", default="doc,480", help="doc (one chunk per document) and/or 480 (default chunker)")
    parser.add_argument("--out", type=Path, default=Path("bench-results/scifact.json"))
    args = parser.parse_args()
    require_beir(args.data)
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
