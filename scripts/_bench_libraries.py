"""Several libraries in one search, for ``scripts/bench.py --libraries``: two (or more) dev sets
ingested as separate libraries (one chunk per document, title + text), each set's queries
searched over all of them through ``MultiIndexRetriever`` — ``RAGSPINE_LIBRARY_FUSION=rrf``
(each library's rank 1 alike) against ``confidence`` — next to the same queries over their own
library alone (the ceiling: a perfect router). nDCG@10 per set, a hit only in its own library.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _benchlib import evaluate, load_beir


def section(data_root: Path, sets: list[str], mode: str, log: Callable[[str], None]) -> dict[str, Any]:
    from ragspine.config import load_settings
    from ragspine.retrieval.chunking.chunking import ParagraphChunker
    from ragspine.retrieval.link.narrative_link import NarrativeIndexRetriever
    from ragspine.retrieval.pipeline import LibraryPipeline
    from ragspine.retrieval.routing.multi_index import MultiIndexRetriever
    from ragspine.retrieval.vector.embedding_backends import make_embedding_backend
    from ragspine.stores.sqlite import SQLiteChunkStore

    backend = make_embedding_backend("auto", settings=load_settings()) if mode != "economy" else None
    data = {name: load_beir(data_root / name) for name in sets if (data_root / name / "corpus.jsonl").exists()}
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="ragspine-libraries-") as tmp:
        retrievers = {}
        for name, (corpus, _, _) in data.items():
            store = SQLiteChunkStore(Path(tmp) / f"{name}-{os.getpid()}.db", library_id=name)
            pipe = LibraryPipeline(store, mode=mode, embedding_backend=backend, chunker=ParagraphChunker(max_chars=1_000_000, overlap_chars=0))
            for doc_id, text in corpus.items():
                pipe.ingest_text(doc_id, text, embed=False)
            pipe.retriever.refresh()
            pipe.sync_vectors()
            retrievers[name] = NarrativeIndexRetriever(pipe, retry_without_filters=False, share_expansions=False)
            log(f"  libraries: {name}: {len(corpus)} documents")
        for name, (_, queries, qrels) in data.items():
            rows: dict[str, Any] = {}
            alone = {q: [s["doc_id"] for s in retrievers[name].retrieve(text, top_k=100)] for q, text in queries.items()}
            rows["own library alone"] = evaluate(alone, qrels)
            for fusion in ("rrf", "confidence"):
                multi = MultiIndexRetriever(retrievers, library_fusion=fusion)
                runs = {q: [s["doc_id"] if s["library_id"] == name else f"other:{s['doc_id']}" for s in multi.retrieve(text, top_k=100)]
                        for q, text in queries.items()}
                rows[f"all libraries, {fusion}"] = evaluate(runs, qrels)
            out[f"{name} ({mode})"] = rows
    return out


def table(results: dict[str, Any]) -> list[str]:
    lines = ["| queries of | search | nDCG@10 | Recall@100 |", "|---|---|---|---|"]
    for name, rows in results.items():
        for label, f in rows.items():
            lines.append(f"| {name} | {label} | {f['ndcg@10']:.3f} | {f['recall@100']:.3f} |")
    return lines
