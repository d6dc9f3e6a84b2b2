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
   ``--queries 0`` skips it.
3. **rebuild** (``--rebuild``) — a new process builds the in-process lexical index from the
   store as a host without the saved files does (``refresh``: tokenizing ``_ADD_BATCH`` chunks
   per posting segment, the merge, the save into an empty temporary directory, the mapping;
   the library's own saved index is neither read nor overwritten). Reports the rebuild's
   seconds and its own peak RSS (the high-water mark is reset once the store is open).
   ``--add-batch`` sets ``_ADD_BATCH`` in every phase (a diagnostic: the build's memory
   against its time). On a kept library, ``--reuse --queries 0 --rebuild`` times only this::

       .venv/bin/python scripts/bench_scale.py --chunks 1000000 --keep /tmp/scale1m --reuse --queries 0 --rebuild

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


def reset_peak_rss() -> bool:
    """Start :func:`peak_rss_mb` again from the current RSS (Linux's ``clear_refs``); ``False``
    where that is not offered (the peak is then the process's)."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


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


def open_stack(workdir: Path, chunk_store: str | None, lexical: str = "auto"):  # type: ignore[no-untyped-def]
    """The configured stack in economy mode: the SQLite file in ``workdir``, or ``chunk_store``
    (a PostgreSQL URL: the chunk store in PostgreSQL, the lexical index as ``lexical`` says —
    ``postgres``: postings in PostgreSQL; ``memory``: the in-process index following the
    library, saved under ``workdir``)."""
    from ragspine.config import load_settings
    from ragspine.stack import Stack

    env = {**os.environ, "RAGSPINE_CHUNK_STORE": chunk_store or str(workdir / "scale.db"),
           "RAGSPINE_RETRIEVAL_MODE": "economy", "RAGSPINE_CACHE_DIR": str(workdir / "cache"),
           "RAGSPINE_LEXICAL_INDEX": lexical}
    return Stack(load_settings(env))


def phase_ingest(n: int, workdir: Path, chunk_store: str | None = None, lexical: str = "auto") -> dict[str, Any]:
    from tqdm import tqdm

    stack = open_stack(workdir, chunk_store, lexical)
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


def phase_rebuild(workdir: Path, chunk_store: str | None = None) -> dict[str, Any]:
    """The in-process lexical index built from the store, as by a host without its saved files
    (they are neither read nor overwritten: the build is saved into an empty temporary
    directory, then mapped, as ``refresh`` does). Its seconds and its own peak RSS."""
    from ragspine.retrieval.lexical import index as index_module

    stack = open_stack(workdir, chunk_store, "memory")
    store = stack.db.chunk_store(LIBRARY)
    with tempfile.TemporaryDirectory(prefix="ragspine-rebuild-") as saved:
        index = index_module.InMemoryLexicalIndex(store, persist=saved)
        if index.has_saved_files():
            raise SystemExit(f"{saved}: a fresh directory holds a saved index; the rebuild would only load it")
        before = rss_mb()
        peak_of = "rebuild" if reset_peak_rss() else "process"
        t0 = time.perf_counter()
        index.refresh()
        rebuild_s = time.perf_counter() - t0
        peak = peak_rss_mb()
        if index.origin != "built":
            raise SystemExit(f"the lexical index was {index.origin}, not built from the store")
        out = {
            "rebuild_rows": len(index), "rebuild_s": round(rebuild_s, 1),
            "rebuild_chunks_per_s": round(len(index) / rebuild_s, 1) if rebuild_s else None,
            "rebuild_peak_rss_mb": round(peak, 1), "rebuild_rss_before_mb": round(before, 1),
            "rebuild_rss_after_mb": round(rss_mb(), 1), "rebuild_peak_of": peak_of,
            "add_batch": index_module._ADD_BATCH,
        }
    stack.close()
    return out


def tenant_name(i: int) -> str:
    return f"tenant-{i:04d}"


def phase_tenants(n_tenants: int, tenant_chunks: int, workdir: Path, chunk_store: str | None = None, lexical: str = "auto") -> dict[str, Any]:
    """``n_tenants`` more libraries of ``tenant_chunks`` chunks each, in the same tables."""
    stack = open_stack(workdir, chunk_store, lexical)
    t0 = time.perf_counter()
    chunks = 0
    for i in range(n_tenants):
        name = tenant_name(i)
        stack.ensure_library(name)
        index = stack.index(name)
        chunks += index.ingest_many(documents(tenant_chunks, seed=100 + i)).chunks
        if i % 100 == 99:
            print(f"tenants: {i + 1}/{n_tenants}, {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    ingest_s = time.perf_counter() - t0
    stack.close()
    return {"tenants": n_tenants, "tenant_chunks": tenant_chunks, "chunks": chunks, "ingest_s": round(ingest_s, 1),
            "ingest_chunks_per_s": round(chunks / ingest_s, 1)}


def phase_query(workdir: Path, n_queries: int, chunk_store: str | None = None, lexical: str = "auto",
                references: bool = False, tenants: int = 0) -> dict[str, Any]:
    from ragspine.retrieval.lexical.tokenizer import tokenize

    base_rss = rss_mb()
    t0 = time.perf_counter()
    stack = open_stack(workdir, chunk_store, lexical)
    retriever = stack.retriever([LIBRARY])
    index = stack.index(LIBRARY).retriever.index
    index.refresh()
    open_s = time.perf_counter() - t0
    qs = queries(n_queries)
    warm: dict[str, Any] = {}
    t = time.perf_counter()
    retriever.retrieve(qs[0], top_k=10)  # a fresh process's first answer
    warm["first_query_ms"] = round(1000 * (time.perf_counter() - t), 1)
    if hasattr(index, "wait_ready"):  # the warm layout: who answered first, and when the in-process index took over
        warm["first_answer_from"] = type(index.serving).__name__
        index.wait_ready()
        warm["in_process_ready_s"] = round(time.perf_counter() - t0, 1)
        warm["origin"] = index.follower.origin
        index = index.follower
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
        index.search(toks, top_k=10)
        lex.append(time.perf_counter() - t)
    filt = []
    for q in qs[:50]:
        t = time.perf_counter()
        retriever.retrieve(q, top_k=10, filters={"topic": "legal"})
        filt.append(time.perf_counter() - t)
    rss = {"rss_mb": round(rss_mb(), 1), "rss_anon_mb": round(rss_mb("RssAnon"), 1), "rss_file_mb": round(rss_mb("RssFile"), 1)}
    extra: dict[str, Any] = {}
    if tenants:
        extra.update(_tenant_queries(stack, tenants, qs))
    if references:
        extra.update(_references(stack, index, qs))
    layout_name = type(stack.index(LIBRARY).retriever.index).__name__  # before close: the database is closed after
    stack.close()

    def pct(xs: list[float], p: float) -> float:
        return round(1000 * percentile(xs, p), 2)

    return {
        "lexical_index": layout_name, "kernel": getattr(index, "kernel", None), **warm,
        "open_s": round(open_s, 2), "queries": len(qs), "queries_with_results": hits,
        "query_p50_ms": pct(full, 50), "query_p99_ms": pct(full, 99), "query_mean_ms": round(1000 * statistics.mean(full), 2),
        "lexical_p50_ms": pct(lex, 50), "lexical_p99_ms": pct(lex, 99),
        "snippet_path_vs_bm25_p50": round(percentile(full, 50) / percentile(lex, 50), 2),
        "filtered_query_p50_ms": pct(filt, 50), "filtered_query_p99_ms": pct(filt, 99),
        **rss, "rss_before_open_mb": round(base_rss, 1), "peak_rss_mb": round(peak_rss_mb(), 1), **extra,
    }


def _tenant_queries(stack: Any, tenants: int, qs: list[str]) -> dict[str, Any]:
    """Queries spread at random over the small libraries (each one's first query opens it,
    within the stack's bound on open indexes), then the same again warm."""
    import random

    rng = random.Random(5)
    picks = [(tenant_name(rng.randrange(tenants)), q) for q in qs * 2]
    out: dict[str, Any] = {}
    for label in ("cold", "warm"):
        lat = []
        for name, q in picks:
            t = time.perf_counter()
            stack.retriever([name]).retrieve(q, top_k=10)
            lat.append(time.perf_counter() - t)
        out[f"tenant_{label}_p50_ms"] = round(1000 * percentile(lat, 50), 2)
        out[f"tenant_{label}_p99_ms"] = round(1000 * percentile(lat, 99), 2)
    out["tenant_queries"] = len(picks)
    out["tenant_rss_mb"] = round(rss_mb(), 1)
    return out


def _references(stack: Any, index: Any, qs: list[str]) -> dict[str, Any]:
    """Tantivy and bm25s over the same library's chunk texts, tokenized as RAGSpine does, next to
    ``LexicalIndex.search``, interleaved per query, twice: **engine against engine** — every
    side's query prepared before timing (RAGSpine's tokens, Tantivy's query object, bm25s's
    known tokens) — and **end to end from the query string** (tokenizing, and building
    Tantivy's query, timed)."""
    from _benchlib import TantivyReference, bm25s_model, bm25s_query_tokens

    from ragspine.retrieval.lexical.tokenizer import tokenize

    store = stack.db.chunk_store(LIBRARY)
    token_lists = [tokenize(c.text) for c in store.iter_active()]
    q_tokens = [tokenize(q) for q in qs]
    out: dict[str, Any] = {}
    engine: dict[str, Any] = {"ragspine": lambda i: index.search(q_tokens[i], top_k=10)}
    e2e: dict[str, Any] = {"ragspine": lambda i: index.search(tokenize(qs[i]), top_k=10)}
    tv = TantivyReference.build(token_lists)
    if tv is not None:
        tv_queries = [tv.query(t) for t in q_tokens]
        engine["tantivy"] = lambda i: tv.search_query(tv_queries[i], 10)
        e2e["tantivy"] = lambda i: tv.search(tokenize(qs[i]), 10)
        out["tantivy_index_s"] = round(tv.build_s, 1)
    try:
        t0 = time.perf_counter()
        bm = bm25s_model(token_lists)
        out["bm25s_index_s"] = round(time.perf_counter() - t0, 1)
        bm_tokens = [bm25s_query_tokens(bm, t) for t in q_tokens]
        engine["bm25s"] = lambda i: bm.retrieve([bm_tokens[i]], k=10, show_progress=False) if bm_tokens[i] else None
        e2e["bm25s"] = lambda i: bm.retrieve([t], k=10, show_progress=False) if (t := bm25s_query_tokens(bm, tokenize(qs[i]))) else None
    except ImportError:
        pass
    del token_lists
    for label, systems in (("", engine), ("e2e_", e2e)):
        lat: dict[str, list[float]] = {name: [] for name in systems}
        for i in range(min(10, len(qs))):
            for fn in systems.values():
                fn(i)
        for i in range(len(qs)):
            names = list(systems)
            names = names[i % len(names):] + names[: i % len(names)]
            for name in names:
                t = time.perf_counter()
                systems[name](i)
                lat[name].append(time.perf_counter() - t)
        for name, xs in lat.items():
            out[f"{label}{name}_qps"] = round(len(xs) / sum(xs), 1)
            out[f"{label}{name}_p50_ms"] = round(1000 * percentile(xs, 50), 3)
        for name in systems:
            if name != "ragspine":
                out[f"{label}ragspine_vs_{name}"] = round(sum(lat[name]) / sum(lat["ragspine"]), 2)
    return out


def _run_phase(phase: str, n: int, workdir: Path, n_queries: int, chunk_store: str | None, *extra: str) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--phase", phase, "--chunks", str(n), "--workdir", str(workdir), "--queries", str(n_queries), *extra]
    if chunk_store:
        cmd += ["--chunk-store", chunk_store]
    done = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _library_size(workdir: Path, chunk_store: str | None, library: str = LIBRARY) -> int:
    stack = open_stack(workdir, chunk_store)
    try:
        return stack.db.chunk_store(library).count()
    finally:
        stack.close()


def measure(
    n: int, n_queries: int = 200, keep: str | None = None, chunk_store: str | None = None, *,
    layouts: tuple[str, ...] = ("auto",), tenants: int = 0, tenant_chunks: int = 1000, references: bool = False,
    reuse: bool = False, rebuild: bool = False, add_batch: int | None = None, acl_classes: int = 0,
) -> dict[str, Any]:
    """Ingest an N-chunk library (and ``tenants`` small ones), then query it once per lexical
    index layout (none with ``n_queries=0``), each phase in a fresh process. With ``reuse`` a
    library already at N chunks (``keep`` / ``chunk_store``) is not ingested again. With
    ``rebuild``, the in-process index's build from the store is timed (``phase_rebuild``);
    ``add_batch`` sets ``_ADD_BATCH`` in every phase. With ``acl_classes``, document ACLs are
    measured last (``_bench_acl.phase_acl``: every document in one of that many ACL classes,
    principals in 1, 10 and 100 groups, an ACL change on 10,000 documents; the library's
    documents are open again afterwards). The first layout's figures are also at the top level
    (what ``scripts/bench.py --scale`` reads)."""
    workdir = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="ragspine-scale-"))
    if keep and workdir.exists() and not reuse:
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        result: dict[str, Any] = {"n": n, "chunk_store": "postgresql" if chunk_store else "sqlite"}
        # writes keep PostgreSQL's postings unless only the in-process index will read them
        writer = ["--lexical-index", "memory" if set(layouts) == {"memory"} else "postgres" if chunk_store else "auto"]
        batch = ["--add-batch", str(add_batch)] if add_batch else []
        writer += batch
        if reuse and _library_size(workdir, chunk_store) >= n:
            result["reused"] = True
        else:
            result.update(_run_phase("ingest", n, workdir, n_queries, chunk_store, *writer))
        if tenants and reuse and _library_size(workdir, chunk_store, tenant_name(tenants - 1)) >= tenant_chunks:
            result["tenants_reused"] = tenants
        elif tenants:
            result["tenants_ingest"] = _run_phase("tenants", n, workdir, n_queries, chunk_store, *writer,
                                                  "--tenants", str(tenants), "--tenant-chunks", str(tenant_chunks))
        if rebuild:
            result["rebuild"] = _run_phase("rebuild", n, workdir, n_queries, chunk_store, *batch)
        result["layouts"] = {}
        for layout in layouts if n_queries else ():  # a layout named twice: the same host restarted (its files saved)
            extra = ["--lexical-index", layout, "--tenants", str(tenants)] + (["--references"] if references else []) + batch
            key = layout if layout not in result["layouts"] else f"{layout} (restart)"
            result["layouts"][key] = _run_phase("query", n, workdir, n_queries, chunk_store, *extra)
        if result["layouts"]:
            result.update(result["layouts"][layouts[0]])
        if acl_classes:
            result["acl"] = _run_phase("acl", n, workdir, n_queries or 200, chunk_store, "--acl-classes", str(acl_classes))
        return result
    finally:
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)


# -- the benchmarks page's tables (docs/benchmarks.md) -------------------------------------------
_ROWS = [
    ("ingest chunks/s", "ingest_chunks_per_s", "{:,.0f}"),
    ("open (first query ready), s", "open_s", "{:.2f}"),
    ("a fresh process's first query, ms", "first_query_ms", "{:,.1f}"),
    ("first answered by", "first_answer_from", "{}"),
    ("in-process index serving after, s", "in_process_ready_s", "{:.1f}"),
    ("snippet path p50 / p99, ms", ("query_p50_ms", "query_p99_ms"), "{:.1f} / {:.1f}"),
    ("BM25 alone p50 / p99, ms", ("lexical_p50_ms", "lexical_p99_ms"), "{:.2f} / {:.1f}"),
    ("filtered p50 / p99, ms", ("filtered_query_p50_ms", "filtered_query_p99_ms"), "{:.1f} / {:.1f}"),
    ("small libraries, first / warm query p50, ms", ("tenant_cold_p50_ms", "tenant_warm_p50_ms"), "{:.1f} / {:.1f}"),
    ("small libraries, first / warm query p99, ms", ("tenant_cold_p99_ms", "tenant_warm_p99_ms"), "{:.1f} / {:.1f}"),
    ("RSS after queries, MiB (anonymous + mapped)", ("rss_mb", "rss_anon_mb", "rss_file_mb"), "{:.0f} ({:.0f} + {:.0f})"),
    ("BM25 q/s, engine vs engine: RAGSpine / Tantivy / bm25s", ("ragspine_qps", "tantivy_qps", "bm25s_qps"), "{:,.0f} / {:,.0f} / {:,.0f}"),
    ("RAGSpine / Tantivy throughput, engine vs engine", "ragspine_vs_tantivy", "{:.2f}x"),
    ("RAGSpine / Tantivy throughput, end to end from the query string", "e2e_ragspine_vs_tantivy", "{:.2f}x"),
]


def table(results: list[dict[str, Any]]) -> str:
    """A Markdown table: one column per (result, layout)."""
    cols: list[tuple[str, dict[str, Any]]] = []
    for r in results:
        for layout, q in (r.get("layouts") or {"": r}).items():
            store = "SQLite" if r.get("chunk_store") == "sqlite" else "PostgreSQL"
            plain = layout.split(" ")[0]
            name = {"postgres": "postings in PG", "memory": "in-process, following PG",
                    "warm": "warm (in-process following PG; postings while it builds)"}.get(plain, "in-process")
            if plain == "auto" and store == "PostgreSQL":
                name = f"auto ({q.get('lexical_index')})"
            name += " — restarted" if layout.endswith("(restart)") else ""
            tenants = r.get("tenants_ingest", {}).get("tenants") or r.get("tenants_reused")
            head = f"{r['n']:,} chunks, {store}, {name}" + (f", +{tenants:,} libraries" if tenants else "")
            ingest = r.get("ingest_chunks_per_s")
            cols.append((head, {**q, "ingest_chunks_per_s": ingest}))
    lines = ["| | " + " | ".join(h for h, _ in cols) + " |", "|---|" + "---|" * len(cols)]
    for label, keys, fmt in _ROWS:
        cells = []
        for _, q in cols:
            ks = keys if isinstance(keys, tuple) else (keys,)
            vals = [q.get(k) for k in ks]
            cells.append("—" if any(v is None for v in vals) else fmt.format(*vals))
        if any(c != "—" for c in cells):
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def update_page(page: Path, results: list[dict[str, Any]], sources: list[str], block_name: str = "scale-table") -> None:
    """Replace the block of ``page`` between the ``block_name`` markers with :func:`table`."""
    start, end = f"<!-- {block_name}:start -->", f"<!-- {block_name}:end -->"
    text = page.read_text(encoding="utf-8")
    if start not in text or end not in text:
        raise SystemExit(f"{page} has no {start} ... {end} block")
    flag = "" if block_name == "scale-table" else f" --docs-block {block_name}"
    note = "Generated by `scripts/bench_scale.py --docs " + " ".join(sources) + flag + "`."
    block = f"{start}\n{table(results)}\n\n{note}\n{end}"
    head, rest = text.split(start, 1)
    page.write_text(head + block + rest.split(end, 1)[1], encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200, help="queries per layout (0: no query phase)")
    parser.add_argument("--keep", help="directory for the library files (kept)")
    parser.add_argument("--out", help="write the JSON here too")
    parser.add_argument("--chunk-store", help="a postgresql:// URL instead of the embedded SQLite default (use an empty database)")
    parser.add_argument("--lexical-index", default="auto",
                        help="comma-separated layouts to query: auto, postgres (postings in PostgreSQL), memory (in-process),"
                             " warm (in-process from saved files, else postings while it builds); a layout named twice is"
                             " queried again by a restarted process")
    parser.add_argument("--tenants", type=int, default=0, help="also ingest this many small libraries into the same tables, and query them")
    parser.add_argument("--tenant-chunks", type=int, default=1000)
    parser.add_argument("--references", action="store_true", help="Tantivy and bm25s over the same tokens, in the query phase")
    parser.add_argument("--reuse", action="store_true", help="with --keep or --chunk-store: query a library already ingested")
    parser.add_argument("--rebuild", action="store_true",
                        help="also time the in-process lexical index's build from the store in a fresh process"
                             " (as a host without the saved files): seconds and peak RSS")
    parser.add_argument("--add-batch", type=int, help="chunks tokenized per posting segment while the in-process index"
                        " is built (sets _ADD_BATCH in every phase; a diagnostic)")
    parser.add_argument("--docs", "--readme", dest="docs", nargs="+", metavar="JSON",
                        help="rewrite docs/benchmarks.md's scale table from these result files")
    parser.add_argument("--docs-block", "--readme-block", dest="docs_block", default="scale-table",
                        help="which table of docs/benchmarks.md --docs rewrites (its marker name)")
    parser.add_argument("--acl", dest="acl_classes", type=int, nargs="?", const=1000, default=0, metavar="CLASSES",
                        help="also measure document ACLs: every document in one of CLASSES ACL classes (default 1000), principals"
                        " in 1, 10 and 100 groups against no ACLs, and an ACL change on 10,000 documents (embedded SQLite only)")
    parser.add_argument("--acl-classes", dest="acl_classes", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--phase", choices=["ingest", "tenants", "query", "rebuild", "acl"], help=argparse.SUPPRESS)
    parser.add_argument("--workdir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.docs:
        results = [json.loads(Path(p).read_text(encoding="utf-8")) for p in args.docs]
        update_page(Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md", results, args.docs, args.docs_block)
        print(table(results))
        return
    if args.add_batch is not None and args.add_batch < 1:
        parser.error("--add-batch must be at least 1")
    if args.phase:
        workdir = Path(args.workdir)
        if args.add_batch:
            from ragspine.retrieval.lexical import index as index_module

            index_module._ADD_BATCH = args.add_batch
        if args.phase == "ingest":
            result = phase_ingest(args.chunks, workdir, args.chunk_store, args.lexical_index)
        elif args.phase == "rebuild":
            result = phase_rebuild(workdir, args.chunk_store)
        elif args.phase == "acl":
            from _bench_acl import phase_acl

            result = phase_acl(workdir, args.queries, classes=args.acl_classes)
        elif args.phase == "tenants":
            result = phase_tenants(args.tenants, args.tenant_chunks, workdir, args.chunk_store, args.lexical_index)
        else:
            result = phase_query(workdir, args.queries, args.chunk_store, args.lexical_index, args.references, args.tenants)
        print(json.dumps(result))
        return
    layouts = tuple(x.strip() for x in args.lexical_index.split(",") if x.strip())
    result = measure(args.chunks, args.queries, args.keep, args.chunk_store, layouts=layouts, tenants=args.tenants,
                     tenant_chunks=args.tenant_chunks, references=args.references, reuse=args.reuse,
                     rebuild=args.rebuild, add_batch=args.add_batch, acl_classes=args.acl_classes)
    text = json.dumps(result, indent=2)
    print(text)
    if result.get("acl"):
        from _bench_acl import table as acl_table

        print(acl_table(result["acl"]))
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    os.environ.setdefault("RAGSPINE_EMBEDDING", "none")
    main()
