"""What ``--reranker colbert`` costs a CLI query, for ``scripts/bench.py --colbert-cli``.

A library of the first ``--colbert-docs`` SciFact documents is built with ``ragspine ingest``,
once per retrieval mode (``--colbert-modes``): ``economy`` (``RAGSPINE_RETRIEVAL_MODE=economy``,
BM25 only: a query without a reranker never imports onnxruntime) and ``default`` (the variable
unset: auto, hybrid with the MiniLM dense leg, whose onnxruntime session of the packaged
``model.onnx`` colbert's default encoder shares). Then each of ``--colbert-queries`` queries runs
as its own ``ragspine query`` process (what a user pays: start-up, stack, search, rerank):

* ``none``: no reranker;
* ``cold``: colbert with nothing stored (``RAGSPINE_EMBEDDING_CACHE=memory``: every candidate and
  the query are encoded, the model loaded);
* ``warm, asked before``: colbert, the same query asked before — its candidates' token states and
  its own come from the store, the model is not loaded;
* ``warm, new query``: colbert on the library queried before (the other queries' candidates are
  stored) with a query not asked before: the model loads and encodes the query and any candidate
  not stored yet;
* ``new query, states stored at ingest``: the same library ingested with
  ``RAGSPINE_COLBERT_AT_INGEST=true`` (its own store): every chunk's states were stored as it was
  written, so a new query encodes only itself (the ingest's extra time is reported too).

Per mode: medians of the wall times, each as a ratio to that mode's ``none``; and the stored size
per candidate (the embedding cache's colbert rows), extrapolated to a million reranked chunks.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable


def _cli(args: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "ragspine.cli", *args], env=env, capture_output=True, text=True, timeout=600)
    took = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"ragspine {' '.join(args[:2])} failed: {proc.stderr.strip()[-500:]}")
    return took


#: result key -> (the row label, the environment's RAGSPINE_RETRIEVAL_MODE; None: unset, the default)
MODES = {"economy": ("economy (BM25 only)", "economy"), "default": ("default (hybrid, MiniLM dense)", None)}


def section_colbert_cli(args: argparse.Namespace, data: Path, log: Callable[[str], None], workdir: Path) -> dict[str, Any]:
    docs = workdir / "docs"
    docs.mkdir()
    with open(data / "corpus.jsonl", encoding="utf-8") as fh:
        for i, line in enumerate(fh):
            if i >= args.colbert_docs:
                break
            row = json.loads(line)
            (docs / f"{row['_id']}.txt").write_text(f"{row.get('title', '')}\n\n{row['text']}".strip(), encoding="utf-8")
    with open(data / "queries.jsonl", encoding="utf-8") as fh:
        queries = [json.loads(line)["text"] for line in fh][: 2 * args.colbert_queries]
    modes = [m.strip() for m in args.colbert_modes.split(",") if m.strip()]
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        raise SystemExit(f"--colbert-modes: unknown {', '.join(unknown)}; choose from {', '.join(MODES)}")
    out: dict[str, Any] = {"documents": args.colbert_docs, "queries": args.colbert_queries, "modes": {}}
    for mode in modes:
        (workdir / mode).mkdir()
        out["modes"][mode] = _one_mode(mode, sorted(docs.iterdir()), queries, args.colbert_queries, log, workdir / mode)
    return out


def _one_mode(mode: str, doc_files: list[Path], queries: list[str], n_queries: int, log: Callable[[str], None],
              workdir: Path) -> dict[str, Any]:
    label, retrieval_mode = MODES[mode]
    asked, fresh = queries[:n_queries], queries[n_queries:]
    env = {**os.environ, "RAGSPINE_CHUNK_STORE": str(workdir / "lib.db"), "RAGSPINE_CACHE_DIR": str(workdir / "cache")}
    env.pop("RAGSPINE_RETRIEVAL_MODE", None)
    if retrieval_mode is not None:
        env["RAGSPINE_RETRIEVAL_MODE"] = retrieval_mode
    env.pop("RAGSPINE_COLBERT_DIR", None)
    files = list(map(str, doc_files))
    ingest_s = {"lazy": _cli(["ingest", *files, "--library", "sci"], env)}
    # the same library in a store of its own, its chunks' states computed as they are written
    eager = {**env, "RAGSPINE_CHUNK_STORE": str(workdir / "eager.db"), "RAGSPINE_RERANKER": "colbert",
             "RAGSPINE_COLBERT_AT_INGEST": "true"}
    ingest_s["at ingest"] = _cli(["ingest", *files, "--library", "sci"], eager)

    def query(q: str, reranker: str, extra: dict[str, str] | None = None) -> float:
        return _cli(["query", q, "--library", "sci", "--reranker", reranker, "--top-k", "10"], {**env, **(extra or {})})

    times: dict[str, list[float]] = {"none": [], "cold": [], "warm, asked before": [], "warm, new query": [],
                                     "new query, states stored at ingest": []}
    for q in asked:  # first pass: stores the candidates' and the queries' states
        query(q, "colbert")
    for q, new in zip(asked, fresh, strict=False):
        times["none"].append(query(q, "none"))
        times["cold"].append(query(q, "colbert", {"RAGSPINE_EMBEDDING_CACHE": "memory"}))
        times["warm, asked before"].append(query(q, "colbert"))
        times["warm, new query"].append(query(new, "colbert"))
        times["new query, states stored at ingest"].append(query(new, "colbert", eager))
    medians = {k: statistics.median(v) for k, v in times.items() if v}
    out: dict[str, Any] = {"label": label, "queries": len(asked),
                           "median_s": {k: round(v, 3) for k, v in medians.items()},
                           "ratio_to_none": {k: round(v / medians["none"], 2) for k, v in medians.items()},
                           "ingest_s": {k: round(v, 2) for k, v in ingest_s.items()}}
    db = sqlite3.connect(workdir / "lib.db")  # the SQLite store's embedding cache table holds the stored states
    try:
        n, size = db.execute("SELECT count(*), sum(length(vector)) FROM embedding_cache WHERE key LIKE 'colbert:%'").fetchone()
    finally:
        db.close()
    if n:
        out["stored_candidates"] = n
        out["stored_bytes_per_candidate"] = round(size / n)
        out["stored_gb_per_million"] = round(size / n * 1e6 / 1e9, 1)
    log(f"  colbert CLI query, {label}: median s {out['median_s']}; ratio to none {out['ratio_to_none']}; "
        f"{out.get('stored_bytes_per_candidate')} bytes stored per candidate")
    return out


def report_rows(c: dict[str, Any], add: Callable[..., None]) -> None:
    """Each kind's row per mode measured, side by side (economy's first); a result without
    ``modes`` (measured before the default mode was) is economy's alone."""
    per_mode = c.get("modes") or {"economy": {**c, "label": MODES["economy"][0]}}
    kinds = list(dict.fromkeys(k for m in per_mode.values() for k in m.get("median_s", {})))
    for kind in kinds:
        for mode, m in per_mode.items():
            if kind in m.get("median_s", {}):
                add(f"colbert  CLI query, {m.get('label', mode)}, {kind}: median s (x none)", None,
                    f"{m['median_s'][kind]:.2f} ({m['ratio_to_none'][kind]:.2f}x)")
    for mode, m in per_mode.items():
        if m.get("ingest_s"):
            add(f"colbert  CLI ingest s, {m.get('label', mode)}, states stored lazily / at ingest", None,
                f"{m['ingest_s'].get('lazy')} / {m['ingest_s'].get('at ingest')}")
    for mode, m in per_mode.items():
        if m.get("stored_bytes_per_candidate"):
            add(f"colbert  stored per candidate, {m.get('label', mode)} (per million reranked chunks)", None,
                f"{m['stored_bytes_per_candidate']:,} B ({m['stored_gb_per_million']} GB)")
