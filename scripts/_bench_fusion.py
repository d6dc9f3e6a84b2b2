"""Fusion weights and rerankers for ``scripts/bench.py --fusion``, on every BEIR-form dev set.

Each set's ``corpus.jsonl`` is ingested one chunk per document (title + text, as docs/benchmarks.md's
reference figures take them) into a hybrid library with a chosen embedding backend (MiniLM by
default, ``--fusion-backends`` for others). For each query the two legs are run once through
the project's ``HybridRetriever.rankings`` (the dense gate applies: a query it will not embed
has no dense leg), then fused offline:

* ``bm25`` and ``dense`` alone, ``rrf`` (equal weights, today's default), weighted RRF with
  the dense leg's weight in ``--fusion-weights`` (BM25's weight 1), ``rrf adaptive`` and
  ``zscore`` (``RAGSPINE_FUSION_WEIGHTS=adaptive`` / ``zscore``);
* each reranker of ``--fusion-rerankers`` over the top ``--rerank-depth`` of today's fusion
  (hybrid) and of BM25 alone (economy), through ``ScoreReranker`` (what ``RAGSPINE_RERANKER``
  runs), with its per-query latency.

``--fusion-save DIR`` writes each set's per-query legs (ids and scores), queries and qrels, so
other fusion rules can be tried offline.

nDCG@10, Recall@100 and R@1 (the gold item first) are computed with the same code as the rest
of the bench. The rankings are what the pipeline fuses, so a figure here is what a user gets
with that configuration.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _benchlib import evaluate, load_beir, percentile

SETS = ("scifact", "nq-open", "xquad-en", "xquad-zh", "drcd")


def _legs(
    data: Path, backend: Any, workdir: Path, log: Callable[[str], None],
) -> tuple[dict[str, dict[str, list[str]]], dict[str, str], dict[str, set[str]], dict[str, str], dict[str, Any]]:
    from ragspine.retrieval.chunking.chunking import ParagraphChunker
    from ragspine.retrieval.pipeline import LibraryPipeline
    from ragspine.retrieval.vector.cache import InMemoryEmbeddingCache
    from ragspine.retrieval.vector.gate import DenseGate
    from ragspine.stores.sqlite import SQLiteChunkStore

    corpus, queries, qrels = load_beir(data)
    store = SQLiteChunkStore(workdir / f"{data.name}-{os.getpid()}-{id(backend)}.db", library_id=data.name)
    pipe = LibraryPipeline(store, mode="hybrid", embedding_backend=backend, embedding_cache=InMemoryEmbeddingCache(max_items=10_000_000),
                           chunker=ParagraphChunker(max_chars=1_000_000, overlap_chars=0), dense_gate=DenseGate(backend))
    t0 = time.perf_counter()
    for doc_id, text in corpus.items():
        pipe.ingest_text(doc_id, text, embed=False)
    pipe.retriever.refresh()
    embedded = pipe.sync_vectors()
    embed_s = time.perf_counter() - t0
    log(f"  fusion: {data.name}: {len(corpus)} documents, {embedded} embedded in {embed_s:.0f} s")
    legs: dict[str, dict[str, list[str]]] = {}
    scores: dict[str, dict[str, list[float]]] = {}
    for qid, text in queries.items():
        found = pipe.retriever.rankings(text, depth=100)
        legs[qid] = {leg: [cid.rsplit("#", 1)[0] for cid, _ in ranking] for leg, ranking in found.items()}
        scores[qid] = {leg: [round(float(score), 5) for _, score in ranking] for leg, ranking in found.items()}
    texts = {doc_id: text for doc_id, text in corpus.items()}
    store.close()
    return legs, queries, qrels, texts, {"documents": len(corpus), "queries": len(queries), "embedded": embedded, "embed_s": round(embed_s, 1),
                                         "scores": scores}


def _r_at_1(runs: dict[str, list[str]], qrels: dict[str, set[str]]) -> float:
    return sum(1.0 for q, ranked in runs.items() if ranked and ranked[0] in qrels[q]) / max(len(runs), 1)


def _figures(runs: dict[str, list[str]], qrels: dict[str, set[str]]) -> dict[str, float]:
    return {**evaluate(runs, qrels), "r@1": _r_at_1(runs, qrels)}


def _fuse(legs: dict[str, list[str]], dense_weight: float | None) -> list[str]:
    from ragspine.retrieval.fusion import rrf_fuse, sort_fused

    names = list(legs)
    if len(names) == 1:
        return legs[names[0]]
    weights = None if dense_weight is None else [dense_weight if n == "vector" else 1.0 for n in names]
    return [k for k, _ in sort_fused(rrf_fuse([legs[n] for n in names], weights=weights))]


def _fuse_adaptive(legs: dict[str, list[str]], scores: dict[str, list[float]]) -> list[str]:
    """``RAGSPINE_FUSION_WEIGHTS=adaptive`` over one query's legs (what HybridRetriever does)."""
    from ragspine.retrieval.fusion import rrf_fuse, sort_fused
    from ragspine.retrieval.fusion.weights import ADAPTIVE

    names = list(legs)
    if len(names) == 1:
        return legs[names[0]]
    weights = ADAPTIVE.weights([scores[n] for n in names])
    return [k for k, _ in sort_fused(rrf_fuse([legs[n] for n in names], weights=weights))]


def _load_legs(path: Path, data: Path) -> tuple[dict[str, dict[str, list[str]]], dict[str, str], dict[str, set[str]], dict[str, str], dict[str, Any]]:
    """What :func:`_legs` returns, from a ``--fusion-save`` file (the texts from the corpus)."""
    saved = json.loads(path.read_text())
    corpus, _, _ = load_beir(data)
    return (saved["legs"], saved["queries"], {q: set(v) for q, v in saved["qrels"].items()}, dict(corpus),
            {"documents": len(corpus), "queries": len(saved["queries"]), "loaded": str(path), "scores": saved["scores"]})


def _fuse_zscore(legs: dict[str, list[str]], scores: dict[str, list[float]]) -> list[str]:
    """``RAGSPINE_FUSION_WEIGHTS=zscore`` over one query's legs (what HybridRetriever does)."""
    from ragspine.retrieval.fusion import rrf_fuse, sort_fused
    from ragspine.retrieval.fusion.zscore import zscore_fuse

    names = list(legs)
    if len(names) == 1:
        return legs[names[0]]
    fused = zscore_fuse([list(zip(legs[n], scores[n], strict=False)) for n in names])
    return [k for k, _ in sort_fused(fused if fused is not None else rrf_fuse([legs[n] for n in names]))]


def section(
    data_root: Path, sets: list[str], backends: list[str], weights: list[float], rerankers: list[str], depth: int, log: Callable[[str], None],
    save: Path | None = None, load: Path | None = None, max_queries: int | None = None,
) -> dict[str, Any]:
    """Every set × backend: the legs, the fusion weights, the rerankers (see the docstring);
    ``save``: a folder for each set's per-query leg rankings (``<set>-<backend>.legs.json``),
    so other fusion rules can be tried without embedding again; ``load``: such a folder, whose
    legs are used instead of running the pipeline (the embedding backend is not loaded);
    ``max_queries``: only each set's first queries (in file order) are scored and reranked."""
    from ragspine.config import load_settings
    from ragspine.retrieval.chunking.chunk_store import StoredChunk
    from ragspine.retrieval.rerank.base import make_reranker
    from ragspine.retrieval.types import RetrievalResult
    from ragspine.retrieval.vector.embedding_backends import make_embedding_backend

    out: dict[str, Any] = {}
    from ragspine.registries import RERANKERS
    from ragspine.retrieval.rerank.base import IndexingReranker
    from ragspine.retrieval.vector.cache import InMemoryEmbeddingCache

    # a reranker that works at index time (splade) gets a store, as in a stack, and each set's
    # documents are indexed before its queries run: the latency is then the query-time cost
    built = {name: make_reranker(name, settings=load_settings(),
                                    **({"cache": InMemoryEmbeddingCache(max_items=10_000_000)} if "cache" in RERANKERS.needs(name) else {}))
             for name in rerankers}
    with tempfile.TemporaryDirectory(prefix="ragspine-fusion-") as tmp:
        for backend_name in backends:
            backend = make_embedding_backend(backend_name, settings=load_settings()) if load is None else None
            if backend is None and load is None:
                raise SystemExit(f"--fusion needs an embedding backend; {backend_name!r} gave none (scripts/install embed-onnx,test)")
            for name in sets:
                data = data_root / name
                saved = load / f"{name}-{backend_name}.legs.json" if load is not None else None
                if not (data / "corpus.jsonl").exists() or (saved is not None and not saved.exists()):
                    log(f"  fusion: {saved if saved is not None and (data / 'corpus.jsonl').exists() else data} not found, skipped")
                    continue
                legs, queries, qrels, texts, info = _load_legs(saved, data) if saved is not None else _legs(data, backend, Path(tmp), log)
                leg_scores = info.pop("scores")
                if save is not None:
                    save.mkdir(parents=True, exist_ok=True)
                    (save / f"{name}-{backend_name}.legs.json").write_text(json.dumps(
                        {"legs": legs, "scores": leg_scores, "queries": queries, "qrels": {q: sorted(v) for q, v in qrels.items()}}))
                if max_queries is not None and len(legs) > max_queries:
                    legs = dict(list(legs.items())[:max_queries])
                    info["queries"] = len(legs)
                rows: dict[str, Any] = {"info": {**info, "dense_queries": sum("vector" in v for v in legs.values())}}
                rows["bm25"] = _figures({q: v.get("bm25", []) for q, v in legs.items()}, qrels)
                rows["dense"] = _figures({q: v.get("vector", []) for q, v in legs.items()}, qrels)
                rows["rrf"] = _figures({q: _fuse(v, None) for q, v in legs.items()}, qrels)
                for w in weights:
                    rows[f"rrf dense×{w:g}"] = _figures({q: _fuse(v, w) for q, v in legs.items()}, qrels)
                rows["rrf adaptive"] = _figures({q: _fuse_adaptive(v, leg_scores[q]) for q, v in legs.items()}, qrels)
                rows["zscore"] = _figures({q: _fuse_zscore(v, leg_scores[q]) for q, v in legs.items()}, qrels)
                fused = {q: _fuse(v, None) for q, v in legs.items()}
                for rname, reranker in built.items():
                    if isinstance(reranker, IndexingReranker):
                        t0 = time.perf_counter()
                        reranker.index([StoredChunk(chunk_id=f"{d}#0", doc_id=d, text=t) for d, t in texts.items()])
                        rows["info"][f"{rname}_index_s"] = round(time.perf_counter() - t0, 1)
                        log(f"  fusion: {name}: {rname} indexed {len(texts)} documents in {rows['info'][f'{rname}_index_s']} s")
                lexical = {q: v.get("bm25", []) for q, v in legs.items()}
                zfused = {q: _fuse_zscore(v, leg_scores[q]) for q, v in legs.items()}
                bases = (("rrf", fused), ("zscore", zfused), ("bm25", lexical))
                for (rname, reranker), (base, ranking) in ((r, b) for r in built.items() for b in bases):
                    if reranker is None:
                        continue
                    runs, times = {}, []
                    for qid, ranked in ranking.items():
                        head = [RetrievalResult(StoredChunk(chunk_id=f"{d}#0", doc_id=d, text=texts[d]), {"fused": 1.0 / (i + 1)})
                                for i, d in enumerate(ranked[:depth])]
                        t0 = time.perf_counter()
                        order = reranker.rerank(queries[qid], head)
                        times.append(1000 * (time.perf_counter() - t0))
                        runs[qid] = [r.chunk.doc_id for r in order] + ranked[depth:]
                    rows[f"{base} + {rname}@{depth}"] = {**_figures(runs, qrels), "rerank_ms_p50": round(percentile(times, 50), 1),
                                                      "rerank_ms_p95": round(percentile(times, 95), 1)}
                    log(f"  fusion: {name} {base} + {rname}@{depth}: p50 {percentile(times, 50):.0f} ms")
                out[f"{name} / {backend_name}"] = rows
    return out


def table(results: dict[str, Any]) -> list[str]:
    """Markdown rows: set / backend | configuration | nDCG@10 | Recall@100 | R@1 | rerank ms p50."""
    lines = ["| set / backend | configuration | nDCG@10 | Recall@100 | R@1 | rerank ms p50 |", "|---|---|---|---|---|---|"]
    for name, rows in results.items():
        for config, f in rows.items():
            if config == "info":
                continue
            lines.append(f"| {name} | {config} | {f['ndcg@10']:.3f} | {f['recall@100']:.3f} | {f['r@1']:.3f} | {f.get('rerank_ms_p50', '')} |")
    return lines


def throughput(data_root: Path, sets: list[str], backends: list[str], n: int, log: Callable[[str], None]) -> dict[str, Any]:
    """Texts/s of each embedding backend on the first ``n`` documents of each set, in one process,
    the backends alternating batch by batch (so machine load hits them alike)."""
    from ragspine.config import load_settings
    from ragspine.retrieval.vector.embedding_backends import make_embedding_backend

    built = {name: make_embedding_backend(name, settings=load_settings()) for name in backends}
    out: dict[str, Any] = {}
    for name in sets:
        corpus, _, _ = load_beir(data_root / name)
        texts = list(corpus.values())[:n]
        for backend in built.values():
            backend.embed_texts(texts[:2])  # load the model
        took = dict.fromkeys(built, 0.0)
        for start in range(0, len(texts), 16):
            batch = texts[start:start + 16]
            for bname, backend in (built.items() if (start // 16) % 2 == 0 else list(built.items())[::-1]):
                t0 = time.perf_counter()
                backend.embed_texts(batch)
                took[bname] += time.perf_counter() - t0
        chars = sum(len(t) for t in texts) / max(len(texts), 1)
        out[name] = {b: {"texts_per_s": round(len(texts) / s, 2), "mean_chars": round(chars)} for b, s in took.items()}
        log(f"  throughput: {name}: " + ", ".join(f"{b} {v['texts_per_s']} texts/s" for b, v in out[name].items()))
    return out
