"""Query-time reasoning on the dev sets, for ``scripts/bench.py --llm`` and ``--llm-calibrate``.

``--llm``: each dev set of ``--llm-sets`` ingested once per mode (one chunk per passage, title +
text), then a fixed sample of ``--llm-queries`` queries (seeded) asked through
``ReasoningRetriever`` with each configuration — ``none`` (the plain exit), ``hyde``,
``rag_fusion``, ``step_back``, ``decompose``, ``adaptive`` (heuristic), ``corrective`` — and
each provider of ``--llm-provider``: ``scripted`` (``ragspine.testing.reasoning``: deterministic,
no model; it measures plumbing and cost) and ``local`` (SmolLM2-135M on llama.cpp, one thread:
a plumbing model, its quality is not an LLM's). Per configuration: nDCG@10 and Recall@100 of
the unique documents, latency per query (mean, p50, p95), LLM calls per query, failures,
unreadable answers and refusals.

``--llm-calibrate``: the corrective grade's signals (:mod:`ragspine.retrieval.reasoning.grade`)
on each set's sampled queries (answerable: the gold passage is in the corpus) and on the same
number of another set's queries asked of this corpus (not answerable), per mode: the coverage
and similarity that 95 % of the answerable queries with the gold passage in the top 3 reach,
and for each threshold the share of those queries graded weak (false refusals) and of the
foreign ones graded weak (caught).
"""

from __future__ import annotations

import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _benchlib import evaluate, load_beir, percentile

#: Each set's foreign queries: another set of the same language, about other pages.
FOREIGN = {"xquad-en": "nq-open", "nq-open": "xquad-en", "xquad-zh": "drcd", "drcd": "xquad-zh", "scifact": "nq-open"}
CONFIGS = ("none", "hyde", "rag_fusion", "step_back", "decompose", "adaptive", "corrective")
THRESHOLDS = (0.3, 0.4, 0.5, 0.6, 0.7)


def sample(queries: dict[str, str], n: int, seed: int = 14) -> dict[str, str]:
    """``n`` queries drawn with a fixed seed, in id order (the same sample every run)."""
    ids = sorted(queries)
    return {q: queries[q] for q in sorted(random.Random(seed).sample(ids, min(n, len(ids))))}


def library(corpus: dict[str, str], mode: str, folder: Path, name: str) -> Any:
    """The link exit over ``corpus`` in ``mode`` (no retry without filters)."""
    from ragspine.config import load_settings
    from ragspine.retrieval.chunking.chunking import ParagraphChunker
    from ragspine.retrieval.link.narrative_link import NarrativeIndexRetriever
    from ragspine.retrieval.pipeline import LibraryPipeline
    from ragspine.retrieval.vector.embedding_backends import make_embedding_backend
    from ragspine.stores.sqlite import SQLiteChunkStore

    store = SQLiteChunkStore(folder / f"{name}-{mode}.db", library_id=name)
    backend = make_embedding_backend("onnx", settings=load_settings()) if mode != "economy" else None
    pipe = LibraryPipeline(store, mode=mode, embedding_backend=backend, chunker=ParagraphChunker(max_chars=10**9, overlap_chars=0))
    for doc_id, text in corpus.items():
        pipe.ingest_text(doc_id, text, embed=False)
    pipe.retriever.refresh()
    pipe.sync_vectors()
    return NarrativeIndexRetriever(pipe, retry_without_filters=False)


# -- calibration of the corrective grade ---------------------------------------------------------
def calibrate(root: Path, sets: list[str], modes: list[str], n: int, log: Callable[[str], None]) -> dict[str, Any]:
    from ragspine.retrieval.reasoning.grade import GRADE_DEPTH, grade

    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="ragspine-llm-cal-") as tmp:
        for name in sets:
            corpus, queries, qrels = load_beir(root / name)
            foreign = sample(load_beir(root / FOREIGN[name])[1], n)
            for mode in modes:
                exit_ = library(corpus, mode, Path(tmp), name)
                own, alien = [], []
                for q, text in sample(queries, n).items():
                    snippets = exit_.retrieve(text, top_k=10)
                    g = grade(text, snippets)
                    own.append((g.coverage, g.similarity, any(s["doc_id"] in qrels[q] for s in snippets[:GRADE_DEPTH])))
                for text in foreign.values():
                    g = grade(text, exit_.retrieve(text, top_k=10))
                    alien.append((g.coverage, g.similarity))
                out[f"{name} ({mode})"] = summarize(own, alien)
                log(f"  llm-calibrate: {name} {mode}: {out[f'{name} ({mode})']['coverage_p5_of_hits']}")
    return out


def summarize(own: list[tuple[float, float | None, bool]], alien: list[tuple[float, float | None]]) -> dict[str, Any]:
    hits = [o for o in own if o[2]]
    result: dict[str, Any] = {
        "queries": len(own), "hits@3": len(hits), "foreign": len(alien),
        "coverage_p5_of_hits": round(percentile([o[0] for o in hits], 5), 3) if hits else None,
        "coverage_median_of_hits": round(statistics.median(o[0] for o in hits), 3) if hits else None,
        "coverage_median_of_foreign": round(statistics.median(a[0] for a in alien), 3) if alien else None,
    }
    sims = [o[1] for o in hits if o[1] is not None]
    if sims:
        result["similarity_p5_of_hits"] = round(percentile(sims, 5), 3)
        result["similarity_median_of_foreign"] = round(statistics.median(a[1] for a in alien if a[1] is not None), 3)
    result["weak_share"] = {
        f"{t:.1f}": {"hits": round(sum(o[0] < t for o in hits) / max(1, len(hits)), 3),
                     "foreign": round(sum(a[0] < t for a in alien) / max(1, len(alien)), 3)}
        for t in THRESHOLDS
    }
    return result


# -- quality and cost of each configuration -------------------------------------------------------
def provider_of(kind: str) -> Any:
    if kind == "scripted":
        from ragspine.testing.reasoning import scripted_provider

        return scripted_provider()
    from ragspine.llm.base import make_llm_provider

    return make_llm_provider(kind)


def reasoner(exit_: Any, config: str, provider: Any, observer: Any) -> Any:
    from ragspine.retrieval.query.adaptive import HeuristicComplexityClassifier
    from ragspine.retrieval.query.base import make_query_transform
    from ragspine.retrieval.query.decompose import LLMQueryDecomposer, QueryRewrite
    from ragspine.retrieval.reasoning import ReasoningRetriever

    if config == "none":
        return exit_
    parts: dict[str, Any] = {}
    if config in ("hyde", "rag_fusion", "step_back"):
        parts["transform"] = make_query_transform(config, provider=provider, max_tokens=256)
    elif config in ("decompose", "adaptive"):
        parts["decomposer"] = LLMQueryDecomposer(provider)
        if config == "adaptive":
            parts["classifier"] = HeuristicComplexityClassifier()
    elif config == "corrective":
        parts.update(corrective=True, rewrite=QueryRewrite(provider, max_tokens=64))
    return ReasoningRetriever(exit_, observer=observer, **parts)


def quality(root: Path, sets: list[str], modes: list[str], configs: list[str], kinds: list[str], n: int,
            log: Callable[[str], None]) -> dict[str, Any]:
    from ragspine.llm.budget import GuardedLLMProvider
    from ragspine.llm.observe import LLMStats
    from ragspine.retrieval.reasoning import ReasoningStats

    out: dict[str, Any] = {}
    providers = {kind: provider_of(kind) for kind in kinds}
    with tempfile.TemporaryDirectory(prefix="ragspine-llm-") as tmp:
        for name in sets:
            corpus, queries, qrels = load_beir(root / name)
            asked = sample(queries, n)
            for mode in modes:
                exit_ = library(corpus, mode, Path(tmp), name)
                for text in asked.values():  # warm-up: caches, lazy imports, the first refresh
                    exit_.search(text, top_k=100)
                for kind, inner in providers.items():
                    for config in configs:
                        if config == "none" and kind != kinds[0]:
                            continue  # no model: one row is enough
                        stats, rstats = LLMStats(), ReasoningStats()
                        guarded = GuardedLLMProvider(inner, max_calls=10, name=kind, observer=stats)
                        retriever = reasoner(exit_, config, guarded, rstats)
                        runs: dict[str, list[str]] = {}
                        times: list[float] = []
                        refused = 0
                        for q, text in asked.items():
                            started = time.perf_counter()
                            answer = retriever.search(text, top_k=100)
                            times.append(time.perf_counter() - started)
                            runs[q] = list(dict.fromkeys(s["doc_id"] for s in answer.snippets))
                            refused += getattr(answer, "refusal", None) is not None
                        row = {**{k: round(v, 4) for k, v in evaluate(runs, {q: qrels[q] for q in asked}).items()},
                               "ms_mean": round(1000 * statistics.mean(times), 1), "ms_p50": round(1000 * percentile(times, 50), 1),
                               "ms_p95": round(1000 * percentile(times, 95), 1),
                               "llm_calls_per_query": round(sum(stats.calls.values()) / len(asked), 2),
                               "llm_failures": sum(stats.failures.values()), "unreadable_answers": sum(stats.malformed.values()),
                               "refused_queries": refused, "queries": len(asked)}
                        label = "none (plain exit)" if config == "none" else f"{config} [{kind}]"
                        out[f"{name} ({mode}) {label}"] = row
                        log(f"  llm: {name} {mode} {label}: nDCG@10 {row['ndcg@10']} {row['ms_mean']} ms/q {row['llm_calls_per_query']} calls/q")
    for inner in providers.values():
        close = getattr(inner, "close", None)
        if callable(close):
            close()
    return out


def table(results: dict[str, Any]) -> list[str]:
    lines = ["| set (mode) configuration [provider] | nDCG@10 | Recall@100 | ms/query mean (p50, p95) | LLM calls/query | "
             "failures | unreadable | refused |", "|---|---|---|---|---|---|---|---|"]
    for label, r in results.items():
        lines.append(f"| {label} | {r['ndcg@10']:.3f} | {r['recall@100']:.3f} | {r['ms_mean']} ({r['ms_p50']}, {r['ms_p95']}) | "
                     f"{r['llm_calls_per_query']} | {r['llm_failures']} | {r['unreadable_answers']} | {r['refused_queries']}/{r['queries']} |")
    return lines


def calibration_table(results: dict[str, Any]) -> list[str]:
    head = " | ".join(f"weak at {t:.1f}: hits / foreign" for t in THRESHOLDS)
    lines = [f"| set (mode) | hits@3 | coverage p5 of hits | median hits / foreign | {head} |", "|---" * (4 + len(THRESHOLDS)) + "|"]
    for label, r in results.items():
        shares = " | ".join(f"{r['weak_share'][f'{t:.1f}']['hits']:.2f} / {r['weak_share'][f'{t:.1f}']['foreign']:.2f}" for t in THRESHOLDS)
        lines.append(f"| {label} | {r['hits@3']}/{r['queries']} | {r['coverage_p5_of_hits']} | "
                     f"{r['coverage_median_of_hits']} / {r['coverage_median_of_foreign']} | {shares} |")
    return lines
