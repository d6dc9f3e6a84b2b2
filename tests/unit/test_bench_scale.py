"""scripts/bench_scale.py: the rebuild phase (the in-process lexical index built from a kept
library's store in a fresh process, never loaded from nor saved over the library's own saved
index) and the query phase's result."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
SCRIPT = REPO_ROOT / "scripts" / "bench_scale.py"


def _bench_scale():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("bench_scale_under_test", SCRIPT)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def _saved_index(workdir: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(workdir)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in workdir.rglob("*") if p.is_file() and ".lexical" in str(p.relative_to(workdir))}


def test_rebuild_times_a_build_from_the_store_of_a_kept_library(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGSPINE_EMBEDDING", "none")
    workdir = tmp_path / "lib"
    workdir.mkdir()
    ingested = _bench_scale().phase_ingest(400, workdir)
    assert ingested["lexical_rows"] == 400
    saved = _saved_index(workdir)
    assert any(name.endswith("CURRENT") for name in saved), saved  # the library's own index was saved

    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--chunks", "400", "--keep", str(workdir), "--reuse", "--queries", "0",
         "--rebuild", "--add-batch", "150"],
        check=True, stdout=subprocess.PIPE, text=True, env=env, cwd=REPO_ROOT,
    )
    result = json.loads(done.stdout)
    assert result["reused"] is True and "ingest_s" not in result  # not ingested again
    assert result["layouts"] == {}  # --queries 0: no query phase
    rebuild = result["rebuild"]
    assert rebuild["rebuild_rows"] == 400 and rebuild["add_batch"] == 150
    assert rebuild["rebuild_s"] >= 0 and rebuild["rebuild_peak_rss_mb"] >= rebuild["rebuild_rss_before_mb"] > 0
    assert _saved_index(workdir) == saved  # neither read into the result nor written over


def test_the_query_phase_names_the_layout_it_queried(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGSPINE_EMBEDDING", "none")
    bench_scale = _bench_scale()
    bench_scale.phase_ingest(300, tmp_path)
    result = bench_scale.phase_query(tmp_path, 5)  # the layout read before the stack is closed
    assert result["lexical_index"] == "InMemoryLexicalIndex"
    assert result["queries"] == 5 and 0 < result["query_p50_ms"] <= result["query_p99_ms"]


def test_add_batch_must_be_positive(tmp_path):
    done = subprocess.run([sys.executable, str(SCRIPT), "--add-batch", "0", "--keep", str(tmp_path)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO_ROOT)
    assert done.returncode == 2 and "--add-batch must be at least 1" in done.stderr


def test_the_acl_phase_measures_principals_against_no_acls_and_leaves_the_library_open(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGSPINE_EMBEDDING", "none")
    workdir = tmp_path / "lib"
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run([sys.executable, str(SCRIPT), "--chunks", "600", "--queries", "10", "--keep", str(workdir), "--acl", "20"],
                          env=env, capture_output=True, text=True, timeout=600, check=True)
    assert "ACLs at 600 chunks" in done.stdout and "in 10 group(s)" in done.stdout
    result = json.loads(done.stdout[: done.stdout.rindex("}") + 1])
    acl = result["acl"]
    assert acl["classes"] == 20 and acl["no_acl"]["p50_ms"] > 0
    assert acl["groups_1"]["visible_chunks"] < acl["groups_10"]["visible_chunks"] < acl["chunks"]
    assert acl["change"]["documents"] == acl["documents"]  # fewer than 10,000: every document moved
    from ragspine.stores.sqlite.chunk_store import SQLiteChunkStore

    store = SQLiteChunkStore(str(workdir / "scale.db"), library_id="scale")
    try:
        assert store.document_acls()[1] == {} and store.acl_seq() > 0  # open again, the changes recorded
    finally:
        store.close()
