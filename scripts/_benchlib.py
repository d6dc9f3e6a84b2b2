"""Shared pieces of the benchmark scripts (``bench.py``, ``bench_scifact.py``).

BEIR loading, nDCG@10 / Recall@100, the reference BM25 runs (bm25s ``method="lucene"`` and
rank-bm25 ``BM25Okapi``, both on RAGSpine's own tokens) and one retrieval run through the
project's API (``build_narrative_retriever`` → ``NarrativeIndexRetriever.retrieve``).
Not part of the package: ``scripts/`` puts the repository root on ``sys.path`` itself.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ragspine.retrieval.lexical.tokenizer import tokenize
from ragspine.retrieval.link.narrative_link import build_narrative_retriever
from ragspine.stores.sqlite import SQLiteChunkStore

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"
BM25_K1, BM25_B = 1.5, 0.75


def load_beir(data: Path, split: str = "test") -> tuple[dict[str, str], dict[str, str], dict[str, set[str]]]:
    """``(corpus, queries, qrels)`` of a BEIR directory; a document is ``title + " " + text``
    and only queries with a positive judgement in ``qrels/<split>.tsv`` are kept."""
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


def require_beir(data: Path) -> None:
    if not (data / "corpus.jsonl").exists():
        raise SystemExit(f"no BEIR corpus at {data}; pass --data DIR (a BEIR dataset directory)")


def require_references() -> None:
    """bm25s and rank-bm25 (the ``test`` extra) are what ours is measured against."""
    import importlib.util

    missing = [name for name in ("bm25s", "rank_bm25") if importlib.util.find_spec(name) is None]
    if missing:
        raise SystemExit(f"the reference BM25 packages are missing ({', '.join(missing)}): scripts/install embed-onnx,test")


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


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def rss_mb() -> dict[str, float]:
    """Resident memory of this process now and at its peak (MiB), from ``/proc`` (Linux) or
    ``resource`` (peak only)."""
    out: dict[str, float] = {}
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    out["rss_mb" if line.startswith("VmRSS") else "peak_rss_mb"] = round(int(line.split()[1]) / 1024, 1)
    except OSError:
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        out["peak_rss_mb"] = round(peak / (1024 * 1024 if sys.platform == "darwin" else 1024), 1)
    return out


# -- reference BM25 implementations on RAGSpine's tokens -----------------------------------------
def bm25s_model(docs_tokens: list[list[str]]) -> Any:
    import bm25s

    model = bm25s.BM25(method="lucene", k1=BM25_K1, b=BM25_B)
    model.index(docs_tokens, show_progress=False)
    return model


def bm25s_query_tokens(model: Any, tokens: list[str]) -> list[str]:
    """bm25s rejects tokens outside its vocabulary: keep the known ones (they score 0 anyway)."""
    return [t for t in tokens if t in model.vocab_dict]


def run_bm25s(corpus: dict[str, str], queries: dict[str, str], k: int = 100) -> dict[str, list[str]]:
    ids = list(corpus)
    model = bm25s_model([tokenize(corpus[d]) for d in ids])
    runs = {}
    for qid, text in queries.items():
        tokens = bm25s_query_tokens(model, tokenize(text))
        if not tokens:
            runs[qid] = []
            continue
        docs, _ = model.retrieve([tokens], k=min(k, len(ids)), show_progress=False)
        runs[qid] = [ids[i] for i in docs[0]]
    return runs


def run_rank_bm25(corpus: dict[str, str], queries: dict[str, str], k: int = 100) -> dict[str, list[str]]:
    import numpy as np
    from rank_bm25 import BM25Okapi

    ids = list(corpus)
    model = BM25Okapi([tokenize(corpus[d]) for d in ids], k1=BM25_K1, b=BM25_B)
    runs = {}
    for qid, text in queries.items():
        scores = model.get_scores(tokenize(text))
        order = np.lexsort((np.arange(len(ids)), -scores))[:k]
        runs[qid] = [ids[i] for i in order]
    return runs


# -- RAGSpine through its own API ------------------------------------------------------------------
def run_ragspine(corpus, queries, *, mode: str, max_chars: int, overlap: int, workdir: Path):  # type: ignore[no-untyped-def]
    """Ingest ``corpus`` into a temporary SQLite library in ``mode`` and run every query through
    ``NarrativeIndexRetriever.retrieve``; a document ranks at its best chunk. Returns
    ``(runs, timing)``."""
    from ragspine.config import load_settings
    from ragspine.retrieval.chunking.chunking import ParagraphChunker
    from ragspine.retrieval.vector.embedding_backends import make_embedding_backend

    backend = make_embedding_backend("auto", settings=load_settings()) if mode != "economy" else None
    if mode != "economy" and backend is None:
        raise SystemExit("the auto/hybrid run needs the [embed-onnx] extra: scripts/install embed-onnx,test")
    store = SQLiteChunkStore(workdir / f"{mode}-{max_chars}-{os.getpid()}.db", library_id="scifact")
    retriever, _ = build_narrative_retriever(store, embedding_backend=backend, mode=mode)
    index = retriever.index
    index.chunker = ParagraphChunker(max_chars=max_chars, overlap_chars=overlap)
    t0 = time.perf_counter()
    n_chunks = 0
    for doc_id, text in corpus.items():
        n_chunks += index.ingest_text(doc_id, text, embed=False)
    index.retriever.refresh()  # searchable: the lexical index has followed the store
    ingest_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    embedded = index.sync_vectors()
    embed_s = time.perf_counter() - t0
    runs, t0 = {}, time.perf_counter()
    for qid, text in queries.items():
        snippets = retriever.retrieve(text, top_k=400)
        ranked = list(dict.fromkeys(s["doc_id"] for s in snippets))
        runs[qid] = ranked[:100]
    query_s = time.perf_counter() - t0
    store.close()
    timing = {
        "chunks": n_chunks,
        "ingest_s": round(ingest_s, 2),
        "ingest_chunks_per_s": round(n_chunks / ingest_s, 1) if ingest_s else None,
        "index_and_embed_s": round(embed_s, 2),
        "query_ms": round(1000 * query_s / len(queries), 2),
    }
    if embedded:
        timing["embedded_chunks"] = embedded
        timing["embedded_chunks_per_s"] = round(embedded / embed_s, 1)
    return runs, timing


class TantivyReference:
    """Tantivy (PyPI ``tantivy``, Rust) over the same pre-tokenized text: each document's
    tokens joined by spaces into a field with the whitespace tokenizer and term frequencies
    (no positions), one segment after ``wait_merging_threads``; a query is a boolean SHOULD of
    its tokens' term queries, top ``k`` by Tantivy's own BM25 (k1 1.2, quantised norms — so
    compare its speed, not its ranking). Engine against engine, the query object is built
    before timing (:meth:`query`, :meth:`search_query`); end to end, :meth:`search` builds it.
    ``None`` from :meth:`build` when tantivy is missing."""

    def __init__(self, index: Any, schema: Any, build_s: float) -> None:
        import tantivy

        self._tantivy = tantivy
        self.schema = schema
        self.searcher = index.searcher()
        self.build_s = build_s

    @classmethod
    def build(cls, token_lists: Any, threads: int = 1) -> TantivyReference | None:
        try:
            import tantivy
        except ImportError:
            return None
        t0 = time.perf_counter()
        builder = tantivy.SchemaBuilder()
        builder.add_text_field("body", stored=False, tokenizer_name="whitespace", index_option="freq")
        schema = builder.build()
        index = tantivy.Index(schema)
        writer = index.writer(heap_size=512_000_000, num_threads=threads)
        for tokens in token_lists:
            writer.add_document(tantivy.Document(body=" ".join(tokens)))
        writer.commit()
        writer.wait_merging_threads()
        index.reload()
        return cls(index, schema, time.perf_counter() - t0)

    def query(self, tokens: list[str]) -> Any:
        """The query object for ``tokens`` (built outside the timed region for an engine-against-
        engine comparison, as RAGSpine's side gets its tokens ready-made)."""
        t = self._tantivy
        return t.Query.boolean_query([(t.Occur.Should, t.Query.term_query(self.schema, "body", tok)) for tok in tokens])

    def search_query(self, query: Any, k: int = 10) -> Any:
        """The engine alone: a prepared query, top ``k``."""
        return self.searcher.search(query, k).hits

    def search(self, tokens: list[str], k: int = 10) -> Any:
        """From tokens: the query built, then searched (the end-to-end side)."""
        return self.searcher.search(self.query(tokens), k).hits
