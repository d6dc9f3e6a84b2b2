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


# --- --documents: every form of a tiny dev set, and the OCR rows (issue 28, "Measured") ---

TOPICS = [
    ("Glaciers", [
        "Glaciers advance when winter snowfall exceeds summer melt, compressing firn into dense blue ice over decades.",
        "Moraines mark the furthest reach of a glacier: ridges of till pushed ahead of the ice and left behind when it retreats.",
        "Crevasses open where glacial ice flows over a steep bedrock step | a rupture the surface cannot bend across.",
        "Meltwater lakes dammed by ice can burst suddenly, sending floods called jokulhlaups down the valley below.",
        "Ice cores drilled from polar glaciers hold air bubbles that record the atmosphere of past millennia.",
    ]),
    ("Volcanoes", [
        "Basaltic volcanoes erupt runny lava that travels kilometres before cooling into pahoehoe and aa flows.",
        "Pyroclastic currents of hot gas and ash race down a volcano's flanks faster than any vehicle can drive.",
        "Calderas form when a magma chamber empties and the summit collapses into the void beneath it.",
        "Volcanic ash grounds aircraft because its glassy particles melt inside jet engines and clog the turbines.",
    ]),
]
TOPIC_QUERIES = [  # (query, article index, paragraph index)
    ("Why does volcanic ash ground aircraft jet engines?", 1, 3),
    ("What do air bubbles in polar ice cores record?", 0, 4),
    ("How do calderas form when the summit collapses?", 1, 2),
    ("What are moraines ridges of till?", 0, 1),
    ("Where do crevasses open over a bedrock step?", 0, 2),
]


def write_articles(root: Path) -> Path:
    """A dev set in the articles.jsonl / qrels/spans.tsv form of /work/shared/data's xquad-en."""
    (root / "qrels").mkdir(parents=True)
    rows = []
    for a, (title, paragraphs) in enumerate(TOPICS):
        text, spans = "", []
        for p, para in enumerate(paragraphs):
            start = len(text) + (2 if text else 0)
            text = f"{text}\n\n{para}" if text else para
            spans.append({"_id": f"{a}-{p}", "start": start, "end": start + len(para)})
        rows.append({"_id": str(a), "title": title, "text": text, "paragraphs": spans})
    (root / "articles.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (root / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": f"q{i}", "text": q}) + "\n" for i, (q, _, _) in enumerate(TOPIC_QUERIES)), encoding="utf-8")
    (root / "qrels" / "spans.tsv").write_text("query-id\tcorpus-id\tstart\tend\n" + "".join(
        f"q{i}\t{a}\t{rows[a]['paragraphs'][p]['start']}\t{rows[a]['paragraphs'][p]['end']}\n"
        for i, (_, a, p) in enumerate(TOPIC_QUERIES)), encoding="utf-8")
    return root


def test_documents_measures_every_form_of_a_tiny_set(tmp_path):
    needs("reportlab", "pypdfium2", "docx", "pptx", "openpyxl")
    write_articles(tmp_path / "root" / "tiny")
    out = tmp_path / "bench.json"
    cmd = [sys.executable, str(REPO_ROOT / "scripts" / "bench.py"), "--documents", "--data-root", str(tmp_path / "root"),
           "--documents-sets", "tiny", "--documents-queries", "0", "--documents-rounds", "1", "--documents-long", "none",
           "--documents-ocr", "none", "--out", str(out)]
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(out.read_text())["documents"]
    forms = ["txt", "pdf", "docx", "pptx", "xlsx", "csv", "html", "md"]
    assert result["forms"] == forms and list(result["sets"]["tiny"]) == forms
    for form, r in result["sets"]["tiny"].items():
        # every paragraph comes back whole (a cell's "|" as the table's "\|"), front matter and markup aside
        assert r["text_recovered"] == 1.0 and r["paragraphs"] == 9, form
        assert 0.5 < r["ndcg@10"] <= 1.0, form  # each query names its paragraph's words
        assert ("delta_vs_txt" in r) == (form != "txt")
        # the paged forms: each top-1 snippet cites the pages the renderer put its text on
        assert ("citation_pages" in r) == (form in ("pdf", "pptx", "xlsx")), form
        if "citation_pages" in r:
            assert r["cited"] == 5 and r["citation_pages"] == 1.0 and r["layout_disagrees"] == 0, form
    assert result["sets"]["tiny"]["html"]["markup_leaked"] == 0  # scripts and styles are not text
    assert result["sets"]["tiny"]["md"]["ndcg@10"] == result["sets"]["tiny"]["txt"]["ndcg@10"]  # front matter shifts no locator
    readers = result["readers"]["tiny"]
    assert list(readers) == forms
    for form, r in readers.items():
        assert r["files"] == 2 and r["pages_per_s"] > 0 and r["peak_mb"] >= r["base_mb"] > 0, form
    assert readers["pptx"]["own_pages"] == 11 and readers["xlsx"]["own_pages"] == 4  # title slide + 9; 2 + 2 sheets of 3 rows
    assert "long_pdf" not in result and "ocr" not in result
    assert "| tiny | xlsx |" in proc.stdout and "documents tiny pptx: top-1 citation pages right" in proc.stdout


def test_documents_forms_limit_the_forms_and_refuse_an_unknown_one(tmp_path):
    needs("openpyxl")
    write_articles(tmp_path / "root" / "tiny")
    base = [sys.executable, str(REPO_ROOT / "scripts" / "bench.py"), "--documents", "--data-root", str(tmp_path / "root"),
            "--documents-sets", "tiny", "--documents-rounds", "1", "--documents-long", "none", "--documents-ocr", "none"]
    proc = subprocess.run([*base, "--documents-forms", "xlsx,txt", "--out", str(tmp_path / "b.json")],
                          check=False, capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((tmp_path / "b.json").read_text())["documents"]
    assert list(result["sets"]["tiny"]) == ["txt", "xlsx"]  # .txt first: the delta's reference
    assert "delta_vs_txt" in result["sets"]["tiny"]["xlsx"]
    assert result["readers"]["tiny"]["xlsx"]["pages_per_s"] is None  # no PDF form to count pages by
    assert result["readers"]["tiny"]["xlsx"]["files_per_s"] > 0
    proc = subprocess.run([*base, "--documents-forms", "txt,odt"], check=False, capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert proc.returncode != 0 and "unknown form(s) odt" in proc.stderr


def _documents_module(monkeypatch):  # type: ignore[no-untyped-def]
    monkeypatch.syspath_prepend(str(REPO_ROOT / "scripts"))
    import _bench_documents

    return _bench_documents


def test_a_slide_or_sheet_layout_pages_spans_by_the_renderers_headings(monkeypatch):
    bench_documents = _documents_module(monkeypatch)
    text = "# Part 1\n\n| title | text |\n| --- | --- |\n| T | alpha one |\n| T | beta two |\n\n# Part 2\n\n| title | text |\n| --- | --- |\n| T | gamma |"
    record = {"pages": 2, "title_page": 1, "marks": ["Part 1", "Part 2"],
              "paragraphs": [{"_id": "a", "pages": [[1, 0]]}, {"_id": "b", "pages": [[1, 0]]}, {"_id": "c", "pages": [[2, 0]]}]}
    spans = [(text.index(w), text.index(w) + len(w)) for w in ("alpha one", "beta two", "gamma")]
    layout = bench_documents.Layout(text, spans, record)
    assert layout.agrees()
    assert layout.pages(0, text.index("beta two") + 8) == (1, 1)
    assert layout.pages(text.index("beta"), text.index("# Part 2")) == (1, 1)  # a row's closing "|" is on its own sheet
    assert layout.pages(text.index("beta"), len(text)) == (1, 2)
    assert layout.pages(text.index("# Part 2"), len(text)) == (2, 2)  # the sheet's heading opens its page
    moved = {**record, "paragraphs": [*record["paragraphs"][:2], {"_id": "c", "pages": [[1, 0]]}]}
    assert not bench_documents.Layout(text, spans, moved).agrees()  # a paragraph on another page than recorded


def test_documents_ocr_rows_come_from_bench_ocr_into_the_json_and_tables(monkeypatch, tmp_path):
    import argparse

    bench_documents = _documents_module(monkeypatch)
    import _bench_ocr

    calls = []

    def fake(engines, *, pages, **_):  # type: ignore[no-untyped-def]
        calls.append((list(engines), pages))
        return [{"engine": "tesseract", "lang": "eng", "cer": 0.0, "pages_per_s": 0.5},
                {"engine": "tesseract", "lang": "chi_sim", "cer": 0.0248, "pages_per_s": 0.4},
                {"engine": "rapidocr", "lang": "jpn", "error": "the [ocr] extra is not installed (rapidocr)"}]

    monkeypatch.setattr(_bench_ocr, "bench_ocr", fake)
    args = argparse.Namespace(documents_sets="none", documents_ocr="tesseract,rapidocr", documents_ocr_pages=3, documents_long="none")
    result = bench_documents.section(args, tmp_path, lambda line: None, tmp_path)
    assert calls == [(["tesseract", "rapidocr"], 3)]
    assert [(r["engine"], r["lang"]) for r in result["ocr"]] == [("tesseract", "en"), ("tesseract", "zh"), ("rapidocr", "ja")]
    lines = bench_documents.table(result)
    assert "| tesseract | zh | 2.48% | 0.4 |" in lines
    assert any(line.startswith("| rapidocr | ja | not available:") for line in lines)
    rows = {r[0]: r[1] for r in _bench_module().table_rows({"documents": result})}
    assert rows["documents OCR tesseract zh: CER, pages/s"] == "2.48%, 0.4"
    assert rows["documents OCR rapidocr ja: CER, pages/s"] == "not available"

    args.documents_ocr = "none"
    assert "ocr" not in bench_documents.section(args, tmp_path, lambda line: None, tmp_path)


def test_documents_ocr_without_a_font_is_a_row_not_the_end_of_the_run(monkeypatch):
    bench_documents = _documents_module(monkeypatch)
    import _bench_ocr

    def no_font(*_, **__):  # type: ignore[no-untyped-def]
        raise SystemExit("no CJK font: apt-get install fonts-noto-cjk (or fonts-wqy-zenhei)")

    monkeypatch.setattr(_bench_ocr, "bench_ocr", no_font)
    rows = bench_documents._ocr(["tesseract"], 1, lambda line: None)
    assert rows == [{"engine": "tesseract", "lang": "all", "error": "no CJK font: apt-get install fonts-noto-cjk (or fonts-wqy-zenhei)"}]
