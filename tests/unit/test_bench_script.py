"""scripts/bench.py runs end to end (quality + speed) on a tiny BEIR dataset and writes its JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.helpers import needs

needs("bm25s")
needs("rank_bm25")

REPO_ROOT = Path(__file__).resolve().parents[2]

DOCS = {
    "d1": ("Photosynthesis", "Plants convert light energy into chemical energy stored in glucose."),
    "d2": ("Chlorophyll", "Chlorophyll absorbs red and blue light and reflects green light."),
    "d3": ("Insulin", "Insulin lowers blood glucose by promoting uptake into muscle and fat."),
    "d4": ("Diabetes", "Type 2 diabetes is marked by insulin resistance and high blood glucose."),
    "d5": ("Vaccines", "Vaccines train the immune system to recognise a pathogen's antigens."),
    "d6": ("Antibodies", "B cells produce antibodies that bind antigens and neutralise viruses."),
    "d7": ("Mitochondria", "Mitochondria produce ATP through oxidative phosphorylation."),
    "d8": ("Ribosomes", "Ribosomes translate messenger RNA into protein chains."),
    "d9": ("DNA repair", "Cells repair DNA double-strand breaks by homologous recombination."),
    "d10": ("Telomeres", "Telomeres shorten with each cell division and limit replication."),
    "d11": ("Neurons", "Neurons transmit signals across synapses with neurotransmitters."),
    "d12": ("Dopamine", "Dopamine signalling in the striatum shapes reward learning."),
}
QUERIES = {
    "q1": ("How do plants store light energy?", "d1"),
    "q2": ("insulin resistance and blood glucose", "d4"),
    "q3": ("antibodies neutralise viruses", "d6"),
    "q4": ("How is ATP produced?", "d7"),
    "q5": ("dopamine reward learning", "d12"),
}


def write_beir(root: Path) -> Path:
    (root / "qrels").mkdir(parents=True)
    with open(root / "corpus.jsonl", "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps({"_id": doc_id, "title": title, "text": text}) + "\n" for doc_id, (title, text) in DOCS.items())
    with open(root / "queries.jsonl", "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps({"_id": qid, "text": text}) + "\n" for qid, (text, _) in QUERIES.items())
        fh.write(json.dumps({"_id": "q-unjudged", "text": "never judged"}) + "\n")
    with open(root / "qrels" / "test.tsv", "w", encoding="utf-8") as fh:
        fh.write("query-id\tcorpus-id\tscore\n")
        fh.writelines(f"{qid}\t{doc_id}\t1\n" for qid, (_, doc_id) in QUERIES.items())
    return root


def test_quality_and_speed_on_a_tiny_beir_dataset(tmp_path):
    data = write_beir(tmp_path / "tiny")
    out = tmp_path / "bench.json"
    cmd = [
        sys.executable, str(REPO_ROOT / "scripts" / "bench.py"), "--data", str(data),
        "--quality", "--modes", "economy", "--speed", "--reps", "1", "--out", str(out),
    ]
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "LexicalIndex.search / bm25s" in proc.stdout  # the table was printed

    result = json.loads(out.read_text())
    assert result["dataset"] == {"path": str(data), "documents": 12, "queries": 5}

    quality = result["quality"]
    for label in ("bm25s lucene (same tokens)", "rank-bm25 BM25Okapi (same tokens)", "ragspine economy"):
        system = quality["systems"][label]
        assert 0.0 <= system["ndcg@10"] <= 1.0 and 0.0 <= system["recall@100"] <= 1.0
    assert quality["economy"]["ndcg@10"] > 0.5  # every query names its document's words
    assert quality["economy"]["chunks"] == 12

    speed = result["speed"]
    assert speed["corpus_chunks"] == 12 and speed["queries"] == 5
    for key in ("lexical_search", "narrative_retrieve", "retriever_retrieve"):
        assert speed[f"{key}_vs_bm25s"] > 0 and speed[f"{key}_vs_rank_bm25"] > 0
    assert speed["ingest_chunks_per_s"] > 0
    assert speed["top10_agreement_with_bm25s"]["queries"] == 5
    for system in speed["systems"].values():
        assert system["qps_median"] > 0 and system["p50_ms"] <= system["p99_ms"]

    assert {row["figure"] for row in result["table"]} >= {"speed    LexicalIndex.search / bm25s (same-run ratio)"}
    assert "embedding" not in result and "scale" not in result


def test_a_missing_dataset_is_a_clear_error(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(REPO_ROOT / "scripts" / "bench.py"), "--data", str(tmp_path / "nope"), "--quality"],
        check=False, capture_output=True, text=True, cwd=tmp_path, timeout=60,
    )
    assert proc.returncode != 0
    assert "no BEIR corpus" in proc.stderr and "--data" in proc.stderr


def _bench_module():  # type: ignore[no-untyped-def]
    import importlib.util

    spec = importlib.util.spec_from_file_location("ragspine_bench_script", REPO_ROOT / "scripts" / "bench.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def test_the_scale_seam_prefers_bench_scale_and_falls_back(monkeypatch):
    import argparse
    import types

    bench = _bench_module()
    args = argparse.Namespace(scale_queries=5)
    fake = types.ModuleType("bench_scale")
    fake.measure = lambda n, n_queries=200: {"chunks": n, "queries": n_queries}  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "bench_scale", fake)
    assert bench.scale_measure(7, args) == {"chunks": 7, "queries": 5, "implementation": "scripts/bench_scale.py"}

    monkeypatch.setitem(sys.modules, "bench_scale", None)  # as if the file were absent
    result = bench.scale_measure(300, args)
    assert result["implementation"] == "bench.py fallback"
    assert result["chunks"] >= 300 and result["queries"] == 5
    assert 0 < result["query_p50_ms"] <= result["query_p99_ms"] and result["rss_mb"] > 0
