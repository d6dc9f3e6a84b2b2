#!/usr/bin/env python
"""Scale benchmark: a synthetic N-chunk economy library on the embedded default (SQLite +
the in-process lexical index), ingested and queried through the project's own API.

    .venv/bin/python scripts/bench_scale.py --chunks 100000
    .venv/bin/python scripts/bench_scale.py --chunks 1000000 --keep /tmp/scale1m   # keep the files

Phases, each in a fresh process so resident memory is that phase's own:

1. **ingest** — documents of Zipf-distributed words (50,000-word vocabulary, exponent 1.1,
   ~1,900 characters: about 4 chunks of 480/80 each) streamed through
   ``NarrativeIndex.ingest_many`` (chunking, ``replace_many`` batches of 5,000 chunks,
   fingerprints), ending with the lexical index built and saved. Reports ingest seconds,
   chunks/s, peak RSS and the files' size.
2. **query** — a new process opens the library (the saved index is memory-mapped) and runs
   ``--queries`` queries of 2–6 words drawn from the same distribution (so common words appear,
   as in real queries) through ``NarrativeIndexRetriever.retrieve(top_k=10)`` — tokenize,
   rewrite, BM25 at depth 100, RRF, fetch from SQLite, both RESTRICTED exits — and through
   ``LexicalIndex.search`` alone. Reports open seconds, p50/p99 ms, RSS after the queries.

``measure(n)`` is what ``scripts/bench.py --scale`` calls.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _benchlib import percentile

LIBRARY = "scale"
VOCAB = 50_000
ZIPF_S = 1.1
DOC_WORDS = 420  # ~1,900 characters: about 4 chunks


def rss_mb(field: str = "VmRSS") -> float:
    """Resident memory in MiB (``RssAnon``: the process's own; ``RssFile``: mapped file pages,
    i.e. the memory-mapped index, shared with the page cache and reclaimable)."""
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def peak_rss_mb() -> float:
    """This process's resident high-water mark (``VmHWM``: unlike ``ru_maxrss`` it is not
    inherited from the parent that forked us)."""
    return rss_mb("VmHWM")


def _words(seed: int):  # type: ignore[no-untyped-def]
    import numpy as np

    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, VOCAB + 1) ** ZIPF_S
    cdf = np.cumsum(weights / weights.sum())
    names = [_word(i) for i in range(VOCAB)]
    return rng, cdf, names


def _word(i: int) -> str:
    letters = "etaoinshrdlucmfwypvbgkjqxz"
    out = ""
    i += 26
    while i:
        i, r = divmod(i, 26)
        out += letters[r]
    return out


def documents(n_chunks: int, seed: int = 1):  # type: ignore[no-untyped-def]
    """``DocumentChunks`` until ``n_chunks`` chunks are produced (the last document may be cut)."""
    import numpy as np

    from ragspine.retrieval.chunking.chunk_store import DocumentChunks
    from ragspine.retrieval.chunking.chunking import chunk_document

    rng, cdf, names = _words(seed)
    made = d = 0
    topics = ["sales", "supply", "legal", "hr", "finance"]
    while made < n_chunks:
        ids = np.searchsorted(cdf, rng.random(DOC_WORDS * 64))
        for k in range(64):
            text = " ".join(names[i] for i in ids[k * DOC_WORDS : (k + 1) * DOC_WORDS]) + "."
            doc_id = f"doc-{d:08d}"
            chunks = chunk_document(text, doc_id, title=doc_id, metadata={"topic": topics[d % 5], "year": 2015 + d % 10})
            chunks = chunks[: n_chunks - made]
            made += len(chunks)
            d += 1
            yield DocumentChunks(doc_id, chunks)
            if made >= n_chunks:
                return


def queries(n: int, seed: int = 2) -> list[str]:
    import numpy as np

    rng, cdf, names = _words(seed)
    return [" ".join(names[i] for i in np.searchsorted(cdf, rng.random(int(rng.integers(2, 7))))) for _ in range(n)]


def open_stack(workdir: Path, chunk_store: str | None):  # type: ignore[no-untyped-def]
    """The configured stack in economy mode: the SQLite file in ``workdir``, or ``chunk_store``
    (a PostgreSQL URL: the chunk store and, by default, the lexical index in PostgreSQL)."""
    from ragspine.config import load_settings
    from ragspine.stack import Stack

    env = {**os.environ, "RAGSPINE_CHUNK_STORE": chunk_store or str(workdir / "scale.db"),
           "RAGSPINE_RETRIEVAL_MODE": "economy", "RAGSPINE_CACHE_DIR": str(workdir / "cache")}
    return Stack(load_settings(env))


def phase_ingest(n: int, workdir: Path, chunk_store: str | None = None) -> dict[str, Any]:
    from tqdm import tqdm

    stack = open_stack(workdir, chunk_store)
    stack.ensure_library(LIBRARY)
    index = stack.index(LIBRARY)
    t0 = time.perf_counter()
    with tqdm(total=n, unit="chunk", desc=f"ingest {n:,}", mininterval=5, disable=None) as bar:
        report = index.ingest_many(documents(n), progress=lambda docs, chunks: bar.update(chunks))
    ingest_s = time.perf_counter() - t0
    size_mb = sum(p.stat().st_size for p in workdir.rglob("*") if p.is_file()) / 2**20
    out = {
        "chunks": report.chunks, "documents": report.written, "ingest_s": round(ingest_s, 1),
        "ingest_chunks_per_s": round(report.chunks / ingest_s, 1), "ingest_peak_rss_mb": round(peak_rss_mb(), 1),
        "files_mb": round(size_mb, 1), "lexical_rows": len(index.retriever.index),
        "lexical_index": type(index.retriever.index).__name__,
    }
    stack.close()
    return out


def phase_query(workdir: Path, n_queries: int, chunk_store: str | None = None) -> dict[str, Any]:
    from ragspine.retrieval.lexical.tokenizer import tokenize

    base_rss = rss_mb()
    t0 = time.perf_counter()
    stack = open_stack(workdir, chunk_store)
    retriever = stack.retriever([LIBRARY])
    lexical = stack.index(LIBRARY).retriever.index
    lexical.refresh()
    open_s = time.perf_counter() - t0
    qs = queries(n_queries)
    for q in qs[:10]:  # warm-up
        retriever.retrieve(q, top_k=10)
    full, lex, hits = [], [], 0
    for q in qs:
        t = time.perf_counter()
        got = retriever.retrieve(q, top_k=10)
        full.append(time.perf_counter() - t)
        hits += bool(got)
        toks = tokenize(q)
        t = time.perf_counter()
        lexical.search(toks, top_k=10)
        lex.append(time.perf_counter() - t)
    filt = []
    for q in qs[:50]:
        t = time.perf_counter()
        retriever.retrieve(q, top_k=10, filters={"topic": "legal"})
        filt.append(time.perf_counter() - t)
    stack.close()

    def pct(xs: list[float], p: float) -> float:
        return round(1000 * percentile(xs, p), 2)

    return {
        "open_s": round(open_s, 2), "queries": len(qs), "queries_with_results": hits,
        "query_p50_ms": pct(full, 50), "query_p99_ms": pct(full, 99), "query_mean_ms": round(1000 * statistics.mean(full), 2),
        "lexical_p50_ms": pct(lex, 50), "lexical_p99_ms": pct(lex, 99),
        "snippet_path_vs_bm25_p50": round(percentile(full, 50) / percentile(lex, 50), 2),
        "filtered_query_p50_ms": pct(filt, 50), "filtered_query_p99_ms": pct(filt, 99),
        "rss_mb": round(rss_mb(), 1), "rss_anon_mb": round(rss_mb("RssAnon"), 1),
        "rss_file_mb": round(rss_mb("RssFile"), 1), "rss_before_open_mb": round(base_rss, 1), "peak_rss_mb": round(peak_rss_mb(), 1),
    }


def _run_phase(phase: str, n: int, workdir: Path, n_queries: int, chunk_store: str | None) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--phase", phase, "--chunks", str(n), "--workdir", str(workdir), "--queries", str(n_queries)]
    if chunk_store:
        cmd += ["--chunk-store", chunk_store]
    done = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(n: int, n_queries: int = 200, keep: str | None = None, chunk_store: str | None = None) -> dict[str, Any]:
    """Both phases of an N-chunk library, each in a fresh process."""
    workdir = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="ragspine-scale-"))
    if keep and workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        result = {"n": n, "chunk_store": "postgresql" if chunk_store else "sqlite",
                  **_run_phase("ingest", n, workdir, n_queries, chunk_store)}
        result.update(_run_phase("query", n, workdir, n_queries, chunk_store))
        return result
    finally:
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--keep", help="directory for the library files (kept)")
    parser.add_argument("--out", help="write the JSON here too")
    parser.add_argument("--chunk-store", help="a postgresql:// URL instead of the embedded SQLite default (use an empty database)")
    parser.add_argument("--phase", choices=["ingest", "query"], help=argparse.SUPPRESS)
    parser.add_argument("--workdir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        workdir = Path(args.workdir)
        if args.phase == "ingest":
            result = phase_ingest(args.chunks, workdir, args.chunk_store)
        else:
            result = phase_query(workdir, args.queries, args.chunk_store)
        print(json.dumps(result))
        return
    result = measure(args.chunks, args.queries, args.keep, args.chunk_store)
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    os.environ.setdefault("RAGSPINE_EMBEDDING", "none")
    main()
