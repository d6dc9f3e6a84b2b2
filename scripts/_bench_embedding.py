"""Embedding throughput and memory for ``scripts/bench.py --embedding``.

The project's ``OnnxEmbeddingBackend`` (onnxruntime directly: length-sorted batches of at most
``RAGSPINE_EMBED_BATCH_TOKENS`` padded positions) against fastembed's own ``TextEmbedding`` on the
same model file, the same texts, the same batch size and threads, in the same run:

* **texts/s** for chunks of each ``--embed-chars`` size (SciFact abstracts cut into pieces of that
  many characters), interleaved batch by batch (paired ratios; the median is the headline);
* **peak memory**: each side embeds the same texts alone in a fresh process (``ru_maxrss``), so
  one side's allocations do not count against the other;
* the largest difference between the two sides' vectors (they are the same model: float tolerance).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

RAW_FASTEMBED_NAME = "bench/raw-all-MiniLM-L6-v2-onnx-int8"


def chunks_of(corpus: dict[str, str], chars: int, n: int) -> list[str]:
    """``n`` pieces of ``chars`` characters cut from the corpus texts in order (a text's tail shorter than ``chars`` is skipped)."""
    out: list[str] = []
    for text in corpus.values():
        for start in range(0, len(text) - chars + 1, chars):
            out.append(text[start : start + chars])
            if len(out) >= n:
                return out
    return out


def _sides(batch: int, threads: int | None) -> tuple[Any, Any]:
    from fastembed import TextEmbedding
    from fastembed.common.model_description import ModelSource, PoolingType

    from ragspine.config import load_settings
    from ragspine.retrieval.vector.onnx_backend import DIM, OnnxEmbeddingBackend

    ours = OnnxEmbeddingBackend.from_settings(load_settings(), batch_size=batch, threads=threads)
    try:  # fastembed's own pipeline: the same model file, registered by hand with the same description
        TextEmbedding.add_custom_model(model=RAW_FASTEMBED_NAME, pooling=PoolingType.MEAN, normalization=True,
                                       sources=ModelSource(hf=RAW_FASTEMBED_NAME), dim=DIM, model_file="model.onnx")
    except ValueError:
        pass
    raw = TextEmbedding(RAW_FASTEMBED_NAME, specific_model_path=str(ours.model_dir), threads=threads)
    return ours, raw


def child(which: str, texts_file: str, batch: int) -> None:
    """One side alone in this process: prints ``{"texts_per_s", "peak_rss_mb", "rss_after_load_mb"}``."""
    from ragspine.progress import peak_rss_mb

    texts = json.loads(Path(texts_file).read_text(encoding="utf-8"))
    if which == "raw":
        _, raw = _sides(batch, None)
        run: Callable[[list[str]], Any] = lambda b: list(raw.embed(b, batch_size=batch))  # noqa: E731
    else:
        from ragspine.config import load_settings
        from ragspine.retrieval.vector.onnx_backend import OnnxEmbeddingBackend

        run = OnnxEmbeddingBackend.from_settings(load_settings(), batch_size=batch).embed_array
    run(texts[:1])
    loaded = peak_rss_mb() or 0.0
    start = time.perf_counter()
    for s in range(0, len(texts), batch):  # as the dense leg calls it: RAGSPINE_EMBED_BATCH_SIZE texts at a time
        run(texts[s : s + batch])
    took = time.perf_counter() - start
    print(json.dumps({"texts_per_s": round(len(texts) / took, 2), "peak_rss_mb": round(peak_rss_mb() or 0.0, 1),
                      "rss_after_load_mb": round(loaded, 1)}))


def _alone(which: str, texts: list[str], batch: int, workdir: Path) -> dict[str, Any]:
    path = workdir / f"embed-texts-{len(texts)}-{len(texts[0]) if texts else 0}.json"
    path.write_text(json.dumps(texts), encoding="utf-8")
    proc = subprocess.run([sys.executable, __file__, which, str(path), str(batch)], capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}"}
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def section_embedding(args: argparse.Namespace, corpus: dict[str, str], log: Callable[[str], None], workdir: Path) -> dict[str, Any]:
    import numpy as np

    try:
        ours, raw = _sides(args.embed_batch, None)
    except ImportError as exc:
        raise SystemExit(f"--embedding needs the [embed-onnx] extra ({exc}): scripts/install embed-onnx,test") from exc
    batch = args.embed_batch
    out: dict[str, Any] = {"batch_size": batch, "batch_tokens": ours.batch_tokens, "threads": ours.threads or "every core",
                           "model_dir": str(ours.model_dir), "interleaving": "per batch, alternating order", "sizes": {}}
    calls: dict[str, Callable[[list[str]], Any]] = {
        "ours": lambda b: ours.embed_array(b),
        "raw": lambda b: list(raw.embed(b, batch_size=batch)),
    }
    for name in calls:
        calls[name](["warm up"])
    for chars in [int(c) for c in str(args.embed_chars).split(",") if c.strip()]:
        texts = chunks_of(corpus, chars, args.embed_texts)
        batches = [texts[s : s + batch] for s in range(0, len(texts), batch)]
        totals = dict.fromkeys(calls, 0.0)
        ratios: list[float] = []
        for rep in range(args.embed_reps):
            for j, b in enumerate(batches):
                took = {}
                for name in (list(calls) if (j + rep) % 2 == 0 else list(calls)[::-1]):
                    t = time.perf_counter()
                    calls[name](b)
                    took[name] = time.perf_counter() - t
                    totals[name] += took[name]
                ratios.append(took["raw"] / took["ours"])  # > 1: ours is faster
        n_done = len(texts) * args.embed_reps
        diff = float(np.max(np.abs(ours.embed_array(batches[0]) - np.asarray(list(raw.embed(batches[0], batch_size=batch))))))
        row = {
            "texts": len(texts), "reps": args.embed_reps,
            "ours_texts_per_s": round(n_done / totals["ours"], 2), "raw_texts_per_s": round(n_done / totals["raw"], 2),
            "ratio_ours_over_raw": round(statistics.median(ratios), 3),
            "ratio_of_totals": round(totals["raw"] / totals["ours"], 3),
            "max_abs_diff_vs_raw": diff,
            "alone": {side: _alone(side, texts, batch, workdir) for side in ("ours", "raw")},
        }
        out["sizes"][str(chars)] = row
        log(f"  embedding {chars}-char chunks: ours {row['ours_texts_per_s']} texts/s, fastembed {row['raw_texts_per_s']} texts/s"
            f" (ratio {row['ratio_ours_over_raw']}); peak RSS alone: ours {row['alone']['ours'].get('peak_rss_mb')} MB,"
            f" fastembed {row['alone']['raw'].get('peak_rss_mb')} MB")
    out["where_the_time_goes"] = {str(c): _breakdown(ours, chunks_of(corpus, int(c), min(args.embed_texts, 256)))
                                  for c in str(args.embed_chars).split(",") if c.strip()}
    for chars, parts in out["where_the_time_goes"].items():
        log(f"  embedding {chars}-char chunks, ours: where the time goes {parts}")
    out["threads"] = _threads_row(args, corpus)
    log(f"  embedding {out['threads']['chars']}-char chunks, ours: one thread {out['threads']['one_thread_texts_per_s']} texts/s,"
        f" every core ({out['threads']['cores']}) {out['threads']['every_core_texts_per_s']} texts/s (x{out['threads']['ratio']})")
    # single query, one call each (the query path), interleaved
    lat: dict[str, list[float]] = {n: [] for n in calls}
    for i, text in enumerate(chunks_of(corpus, 60, args.embed_queries)):
        for name in list(calls) if i % 2 == 0 else list(calls)[::-1]:
            t = time.perf_counter()
            calls[name]([text])
            lat[name].append(time.perf_counter() - t)
    out["query_p50_ms"] = {n: round(1000 * statistics.median(v), 2) for n, v in lat.items() if v}
    return out


def _breakdown(ours: Any, texts: list[str]) -> dict[str, float]:
    """Shares of one ``embed_array`` call over ``texts``: tokenizing, the model's calls, and the
    rest (sorting, padding, pooling, normalizing, copies); with the padded share of the model's
    positions (what length-sorted batches save)."""
    session = ours._load()
    spent = {"tokenize": 0.0, "model": 0.0}
    padded = [0, 0]  # real positions, padded positions
    encoder, run = ours._encoder, session.run

    class Timed:
        def encode_batch(self, batch: list[str]) -> Any:
            t = time.perf_counter()
            try:
                return encoder.encode_batch(batch)
            finally:
                spent["tokenize"] += time.perf_counter() - t

        def __getattr__(self, name: str) -> Any:
            return getattr(encoder, name)

    def timed_run(names: Any, feed: dict[str, Any]) -> Any:
        mask = feed["attention_mask"]
        padded[0] += int(mask.sum())
        padded[1] += int(mask.size)
        t = time.perf_counter()
        try:
            return run(names, feed)
        finally:
            spent["model"] += time.perf_counter() - t

    ours._encoder, session.run = Timed(), timed_run
    try:
        t = time.perf_counter()
        ours.embed_array(texts)
        total = time.perf_counter() - t
    finally:
        ours._encoder = encoder
        del session.run
    return {"tokenize": round(spent["tokenize"] / total, 3), "model": round(spent["model"] / total, 3),
            "rest": round(1 - (spent["tokenize"] + spent["model"]) / total, 3),
            "padding_share": round(1 - padded[0] / max(padded[1], 1), 3)}


def _threads_row(args: argparse.Namespace, corpus: dict[str, str]) -> dict[str, Any]:
    """Ours on one thread against ours on every core (the default), the same texts interleaved
    batch by batch: how much of the machine the default uses (about the core count when idle)."""
    import os

    from ragspine.config import load_settings
    from ragspine.retrieval.vector.onnx_backend import OnnxEmbeddingBackend

    chars = int(str(args.embed_chars).split(",")[0])
    texts = chunks_of(corpus, chars, min(args.embed_texts, 256))
    sides = {n: OnnxEmbeddingBackend.from_settings(load_settings(), batch_size=args.embed_batch, threads=t)
             for n, t in (("one", 1), ("every", None))}
    for side in sides.values():
        side.embed_array(["warm up"])
    batch = args.embed_batch
    totals = dict.fromkeys(sides, 0.0)
    for j, start in enumerate(range(0, len(texts), batch)):
        for name in list(sides) if j % 2 == 0 else list(sides)[::-1]:
            t = time.perf_counter()
            sides[name].embed_array(texts[start : start + batch])
            totals[name] += time.perf_counter() - t
    return {"chars": chars, "texts": len(texts), "cores": os.cpu_count(),
            "one_thread_texts_per_s": round(len(texts) / totals["one"], 2),
            "every_core_texts_per_s": round(len(texts) / totals["every"], 2),
            "ratio": round(totals["one"] / totals["every"], 2)}


def report_rows(e: dict[str, Any], add: Callable[..., None]) -> None:
    """The summary table's rows for ``section_embedding``'s result."""
    for chars, r in e.get("sizes", {}).items():
        add(f"embed    {chars}-char chunks: ours / fastembed texts/s", None, f"{r['ours_texts_per_s']:.1f} / {r['raw_texts_per_s']:.1f}")
        add(f"embed    {chars}-char chunks: ours / fastembed, median of paired batches", f"embedding.{chars}.ratio",
            r["ratio_ours_over_raw"], "{:.2f}x")
        alone = r.get("alone", {})
        add(f"embed    {chars}-char chunks: peak RSS alone, ours / fastembed MB", None,
            f"{alone.get('ours', {}).get('peak_rss_mb')} / {alone.get('raw', {}).get('peak_rss_mb')}")
        add(f"embed    {chars}-char chunks: max |ours - fastembed|", None, f"{r['max_abs_diff_vs_raw']:.1e}")
    for chars, parts in e.get("where_the_time_goes", {}).items():
        add(f"embed    {chars}-char chunks, ours: tokenize / model / rest (padded positions)", None,
            f"{parts['tokenize']:.0%} / {parts['model']:.0%} / {parts['rest']:.0%} ({parts['padding_share']:.0%})")
    t = e.get("threads")
    if t:
        add(f"embed    {t['chars']}-char chunks, ours: one thread / every core ({t['cores']}) texts/s", None,
            f"{t['one_thread_texts_per_s']} / {t['every_core_texts_per_s']} (x{t['ratio']})")
    if e.get("query_p50_ms"):
        add("embed    one query p50 ms, ours / fastembed", None, f"{e['query_p50_ms'].get('ours')} / {e['query_p50_ms'].get('raw')}")


if __name__ == "__main__":
    child(sys.argv[1], sys.argv[2], int(sys.argv[3]))
