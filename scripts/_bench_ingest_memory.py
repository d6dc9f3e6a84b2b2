"""Peak memory and rate of ``ragspine ingest`` and ``ragspine embed`` by corpus size, for
``scripts/bench.py --ingest-memory``.

For each size of ``--ingest-sizes`` (default 1k, 10k and 100k chunks) a corpus of English
prose is written that the default chunker cuts into about that many chunks: paragraphs of
sentences drawn (seeded) from the machine's own texts — ``/usr/share/common-licenses`` and the
README/NEWS/Markdown files under ``/usr/share/doc`` — or, where those are missing, from a
built-in word generator. Then, each in a child process on a fresh ``RAGSPINE_DATA_DIR`` (the
README's embedded default: SQLite + the in-process vector store, the embedding cache a table
of the SQLite file), with every other ``RAGSPINE_*`` setting at its default:

* ``ingest``: ``ragspine ingest DIR --library L`` — chunks written, then embedded;
* ``embed``: ``ragspine ingest DIR --library L --no-embed`` on another fresh data dir, then
  ``ragspine embed --library L`` (the figures are the ``embed`` process's).

Each row reports the chunks, the wall time and chunks/s of the child (start-up and model load
included) and its peak RSS: the ``peak memory: N MB`` line the CLI prints (``VmHWM``), checked
against the child's ``ru_maxrss`` from ``wait4``.

The embedding of a row is ``RAGSPINE_EMBEDDING``: ``auto`` (the default: MiniLM ONNX when the
``[embed-onnx]`` extra is installed) unless the size says otherwise — ``100000@deterministic``
runs the 100k row with the feature-hashing embedder (no model: the pipeline's memory alone),
``10000@auto+deterministic`` runs both. MiniLM embeds about 40 chunks/s on two cores, so the
default 100k row takes about 45 minutes per pass.
"""

from __future__ import annotations

import gzip
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Iterator

DEFAULT_SIZES = "1000,10000,100000"
TARGET_MB = 600.0  # issue 27: under 600 MB at default settings on a 12,000-chunk corpus
SOURCES = (Path("/usr/share/common-licenses"), Path("/usr/share/doc"))
MAX_SOURCE_BYTES = 16_000_000
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
_WORDS = (
    "the a of to and in that is for it as with was on be by this are from or at which an have not they you all can had "
    "but their one there were been has more when will would who what so if about into than them its only time could other "
    "new some these may any then two do first like also after such most over know where made between many under system "
    "library document record page policy report value change number people state program service version release "
    "support user data file source license copy work right section term condition notice software package manual "
    "information example order process public general free use distribute modify include require provide"
).split()


def parse_sizes(spec: str, default_embeddings: list[str]) -> list[tuple[int, list[str]]]:
    """``"1000,10000,100000@deterministic"`` → ``[(1000, default), (10000, default), (100000, ["deterministic"])]``."""
    out = []
    for part in (p.strip() for p in spec.split(",")):
        if not part:
            continue
        size, _, embeddings = part.partition("@")
        out.append((int(size.replace("_", "")), [e for e in embeddings.split("+") if e] or default_embeddings))
    return out


# -- the corpus --------------------------------------------------------------------------------
def _texts(roots: tuple[Path, ...] = SOURCES) -> Iterator[str]:
    read = 0
    for root in roots:
        if not root.is_dir():
            continue
        for path in sorted(root.rglob("*")):
            name = path.name.lower()
            if not path.is_file() or path.is_symlink():
                continue
            if root.name == "doc" and not (name.startswith(("readme", "news")) or name.endswith((".md", ".txt", ".md.gz", ".txt.gz"))):
                continue
            try:
                raw = gzip.decompress(path.read_bytes()) if name.endswith(".gz") else path.read_bytes()
            except (OSError, EOFError, gzip.BadGzipFile):
                continue
            read += len(raw)
            yield raw.decode("utf-8", errors="replace")
            if read >= MAX_SOURCE_BYTES:
                return


def sentence_pool(roots: tuple[Path, ...] = SOURCES) -> list[str]:
    """Prose-like sentences of the machine's own documentation (deduplicated, in a fixed order)."""
    seen: set[str] = set()
    pool: list[str] = []
    for text in _texts(roots):
        for para in re.split(r"\n\s*\n", text):
            flat = " ".join(para.split())
            for sentence in _SENTENCE.split(flat):
                letters = sum(ch.isalpha() or ch == " " for ch in sentence)
                if 40 <= len(sentence) <= 400 and letters >= 0.85 * len(sentence) and sentence[-1] in ".!?" and sentence not in seen:
                    seen.add(sentence)
                    pool.append(sentence)
    return pool


def _generated_sentence(rng: random.Random) -> str:
    words = [rng.choice(_WORDS) for _ in range(rng.randint(8, 28))]
    return " ".join(words).capitalize() + "."


def write_corpus(folder: Path, chunks: int, *, seed: int = 0, pool: list[str] | None = None) -> dict[str, Any]:
    """Text files under ``folder`` that the default chunker cuts into at least ``chunks``
    chunks (counted with it as they are written); what was written."""
    from ragspine.retrieval.chunking.chunking import ParagraphChunker

    chunker = ParagraphChunker()
    rng = random.Random(seed)
    pool = sentence_pool() if pool is None else pool
    source = "machine documentation" if len(pool) >= 500 else "generated words"
    folder.mkdir(parents=True, exist_ok=True)
    made = files = chars = 0
    while made < chunks:
        paragraphs = []
        for _ in range(rng.randint(6, 30)):
            n = rng.randint(1, 6)
            paragraphs.append(" ".join(rng.choice(pool) if source != "generated words" else _generated_sentence(rng) for _ in range(n)))
        text = f"Document {files}\n\n" + "\n\n".join(paragraphs) + "\n"
        doc_id = f"d{files:06d}"
        (folder / f"{doc_id}.txt").write_text(text, encoding="utf-8")
        made += len(chunker.chunk(text, doc_id))
        files += 1
        chars += len(text)
    return {"files": files, "chunks": made, "chars": chars, "source": source}


# -- the child processes -------------------------------------------------------------------------
def _env(data_dir: Path, embedding: str) -> dict[str, str]:
    """The default configuration on a fresh data dir: every ``RAGSPINE_*`` setting of this shell
    dropped but the model cache's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGSPINE_") or k == "RAGSPINE_CACHE_DIR"}
    env.update(RAGSPINE_DATA_DIR=str(data_dir), RAGSPINE_EMBEDDING=embedding, PYTHONUNBUFFERED="1")
    return env


def run_cli(args: list[str], env: dict[str, str], log_path: Path, timeout: float = 6 * 3600) -> dict[str, Any]:
    """``ragspine ARGS`` in a child process: wall seconds, exit status, stdout, the ``peak
    memory`` it printed and its ``ru_maxrss`` (MB)."""
    start = time.perf_counter()
    with open(log_path, "w", encoding="utf-8") as err, tempfile.TemporaryFile("w+", encoding="utf-8") as out:
        proc = subprocess.Popen([sys.executable, "-m", "ragspine.cli", *args], env=env, stdout=out, stderr=err, text=True)
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        except BaseException:
            proc.kill()
            raise
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - start
        out.seek(0)
        stdout = out.read()
    stderr = log_path.read_text(encoding="utf-8", errors="replace")
    if proc.returncode != 0:
        raise SystemExit(f"ragspine {' '.join(args[:1])} failed ({proc.returncode}): {stderr.strip()[-800:]}")
    peak = re.search(r"peak memory: ([\d,]+) MB", stderr)
    maxrss_mb = usage.ru_maxrss / (1024 * 1024 if sys.platform == "darwin" else 1024)
    return {"wall_s": round(wall, 1), "stdout": stdout.strip(), "peak_mb": float(peak.group(1).replace(",", "")) if peak else None,
            "maxrss_mb": round(maxrss_mb, 1)}


def _chunks_written(stdout: str) -> int:
    found = re.search(r"([\d,]+) chunk\(s\) into", stdout)
    return int(found.group(1).replace(",", "")) if found else 0


def _embedded(stdout: str) -> int:
    found = re.search(r"embedded ([\d,]+) chunk\(s\)", stdout)
    return int(found.group(1).replace(",", "")) if found else 0


def measure(corpus: Path, embedding: str, passes: list[str], workdir: Path, log: Callable[[str], None]) -> dict[str, Any]:
    """One size × embedding: each of ``passes`` (``ingest``, ``embed``) in its own child on its own data dir."""
    row: dict[str, Any] = {"embedding": embedding}
    if "ingest" in passes:
        data = Path(tempfile.mkdtemp(prefix="ingest-", dir=workdir))
        got = run_cli(["ingest", str(corpus), "--library", "bench"], _env(data, embedding), data / "stderr.log")
        chunks = _chunks_written(got["stdout"])
        row["ingest"] = {"chunks": chunks, "embedded": _embedded(got["stdout"]), "wall_s": got["wall_s"],
                         "chunks_per_s": round(chunks / got["wall_s"], 1), "peak_mb": got["peak_mb"], "maxrss_mb": got["maxrss_mb"]}
        log(f"  ingest ({embedding}): {chunks:,} chunks in {got['wall_s']:.0f} s, peak {got['peak_mb']} MB")
    if "embed" in passes:
        data = Path(tempfile.mkdtemp(prefix="embed-", dir=workdir))
        env = _env(data, embedding)
        first = run_cli(["ingest", str(corpus), "--library", "bench", "--no-embed"], env, data / "ingest.log")
        got = run_cli(["embed", "--library", "bench"], env, data / "stderr.log")
        embedded = _embedded(got["stdout"])
        row["embed"] = {"chunks": _chunks_written(first["stdout"]), "embedded": embedded, "wall_s": got["wall_s"],
                        "chunks_per_s": round(embedded / got["wall_s"], 1), "peak_mb": got["peak_mb"], "maxrss_mb": got["maxrss_mb"],
                        "no_embed_ingest": {"wall_s": first["wall_s"], "peak_mb": first["peak_mb"]}}
        log(f"  embed ({embedding}): {embedded:,} chunks in {got['wall_s']:.0f} s, peak {got['peak_mb']} MB"
            f" (the --no-embed ingest before it: peak {first['peak_mb']} MB)")
    return row


def section(sizes: list[tuple[int, list[str]]], passes: list[str], log: Callable[[str], None], workdir: Path,
            *, seed: int = 0) -> dict[str, Any]:
    pool = sentence_pool()
    log(f"ingest memory: {len(pool):,} sentences of the machine's documentation"
        + ("" if len(pool) >= 500 else " (too few: generated words instead)"))
    rows = []
    for size, embeddings in sizes:
        corpus = workdir / f"corpus-{size}"
        made = write_corpus(corpus, size, seed=seed, pool=pool)
        log(f"ingest memory: {size:,} chunks asked → {made['files']:,} files, {made['chars'] / 1e6:.1f} M chars,"
            f" {made['chunks']:,} chunks ({made['source']})")
        for embedding in embeddings:
            rows.append({"size": size, "corpus": made, **measure(corpus, embedding, passes, workdir, log)})
    return {"rows": rows, "target_mb": TARGET_MB, "load_avg_end": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
            "note": "chunks/s includes start-up and model load and shares the CPUs with anything else running; peak RSS does not depend on load"}


def table(result: dict[str, Any]) -> list[str]:
    lines = ["", "ingest memory (child process, fresh RAGSPINE_DATA_DIR, default settings but RAGSPINE_EMBEDDING)",
             f"{'chunks':>8}  {'embedding':<14} {'pass':<7} {'chunks/s':>9} {'wall s':>8} {'peak MB':>8} {'ru_maxrss':>9}"]
    for row in result["rows"]:
        for name in ("ingest", "embed"):
            got = row.get(name)
            if got is None:
                continue
            lines.append(f"{got['chunks']:>8,}  {row['embedding']:<14} {name:<7} {got['chunks_per_s']:>9,.1f} {got['wall_s']:>8,.0f}"
                         f" {got['peak_mb'] or 0:>8,.0f} {got['maxrss_mb']:>9,.0f}")
    return lines


def table_rows(result: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """Figures for bench.py's summary table: peak MB per size × embedding × pass (target at ~12k chunks)."""
    rows = []
    for row in result["rows"]:
        for name in ("ingest", "embed"):
            got = row.get(name)
            if got is None or got["peak_mb"] is None:
                continue
            near = 10_000 <= got["chunks"] <= 15_000 and row["embedding"] in ("auto", "onnx")
            rows.append((f"{name} peak RSS, {got['chunks']:,} chunks, {row['embedding']}", f"{got['peak_mb']:,.0f} MB",
                         f"< {TARGET_MB:.0f} MB" if near else "flat in size", ("ok" if got["peak_mb"] < TARGET_MB else "MISS") if near else "-"))
    return rows


if __name__ == "__main__":  # a quick look without bench.py: python scripts/_bench_ingest_memory.py 1000@deterministic
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("sizes", nargs="?", default=DEFAULT_SIZES)
    parser.add_argument("--embeddings", default="auto")
    parser.add_argument("--passes", default="ingest,embed")
    parser.add_argument("--keep", type=Path, default=None, help="work in this folder (kept) instead of a temporary one")
    ns = parser.parse_args()
    sizes_ = parse_sizes(ns.sizes, [e for e in ns.embeddings.split(",") if e])
    passes_ = [p for p in ns.passes.split(",") if p]

    def log_(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    if ns.keep is not None:
        ns.keep.mkdir(parents=True, exist_ok=True)
        print("\n".join(table(section(sizes_, passes_, log_, ns.keep))))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            print("\n".join(table(section(sizes_, passes_, log_, Path(tmp)))))
