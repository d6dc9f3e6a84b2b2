"""Retrieval through real files, for ``scripts/bench.py --documents`` (issue 28, "Measured").

Each article of xquad-en, xquad-zh and drcd is rendered (``render_documents.py``) as a ``.txt``,
a PDF (reportlab, A5 pages, CJK in built-in CID fonts), a Word file, a PowerPoint deck (a slide
per paragraph), an Excel workbook (a row per paragraph, sheets of three rows), a CSV (the same
rows), an HTML page (a ``<p>`` per paragraph, with scripts and styles) and a Markdown file (with
front matter) — ``--documents-forms``, default all — each form its own directory, ingested with
``ragspine ingest DIR`` (economy mode: no model) into a library of its own and queried through
``Stack`` as ``ragspine query`` is (``--documents-queries``: the first N query ids, sorted, as
``--profiles`` does). Reported per set and form:

* **nDCG@10** (passage level, ``_bench_chunking.passage_hits``): a snippet is a hit when it
  overlaps the gold paragraph — found in that form's extracted text, whitespace aside — by
  half the shorter span; and its difference to the ``.txt`` form's (the target: within 0.005);
* **text recovered**: the share of paragraphs found whole, in order, in the extracted text (in a
  table's cells, a ``|`` as the ``\\|`` a Markdown table row writes);
* **markup leaked** (HTML): files whose text holds a word of their scripts or styles;
* **citation pages** (the paged forms: PDF pages, slides, sheets): the share of top-1 snippets
  whose ``page``/``page_end`` are the pages its text is on, by the renderer's own layout record
  (``OUT/pages/ID.json``, ``OUT/pages-pptx/``, ``OUT/pages-xlsx/``; never the reader's): for the
  PDF where each paragraph's characters went; for slides and sheets which page each paragraph is
  on and the heading (slide title, sheet name) that opens each page, found in order as a heading
  line of the text; **gold page**: of the top-1 hits, the share whose pages are among the gold
  paragraph's (a paragraph over two pages is cited at the page of the part the snippet holds);
* **pages/s and peak memory** of each reader alone, in a child process over the same files
  (``read_document``, what ingest calls; best of ``--documents-rounds`` interleaved); every form
  counts the pages of the same content as a PDF (``own_pages_per_s``: slides, sheets); ``base`` is
  the child's memory after import, before the first file;
* one PDF of ~50 pages and one of ~500 (xquad-zh's paragraphs over and over), each read alone:
  the peak must not grow with the page count beyond what the reader returns (text, line boxes)
  (``--documents-long``);
* **OCR** (``--documents-ocr``, the engines; ``none`` skips): ``_bench_ocr.bench_ocr``, the
  character error rate and pages/s of each engine on an English, a Chinese and a Japanese A4 page
  rendered from known text (``--documents-ocr-pages`` timed reads of each, after a warm-up).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from bisect import bisect_right
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench_chunking import DEPTH, load_articles, passage_hits, passage_scores  # noqa: E402
from _bench_colbert import _cli  # noqa: E402
from _bench_profiles import _first  # noqa: E402
from render_documents import FORMS, MARKUP_ONLY, align, article_paragraphs, kept, page_at, render_long_pdf, render_set  # noqa: E402

SETS = ("xquad-en", "xquad-zh", "drcd")
PAGED = {"pdf": "pages", "pptx": "pages-pptx", "xlsx": "pages-xlsx"}  # form -> its layout records under OUT
TABLES = ("xlsx", "csv")  # forms read as Markdown tables
LONG_PAGES = (50, 500)
OCR_ENGINES = ("tesseract", "rapidocr")
OCR_LANGS = {"eng": "en", "chi_sim": "zh", "jpn": "ja"}  # _bench_ocr's pages


class Layout:
    """The true pages of any span of one paged file's extracted text, from the renderer's record:
    where each paragraph's characters went (PDF), or the heading that opens each page (``marks``:
    slides, sheets), found in order as a heading line."""

    def __init__(self, text: str, spans: list[tuple[int, int] | None], record: dict[str, Any]) -> None:
        self.text, self.record = text, record
        self.count = [0]  # characters ``nonspace`` keeps, before each offset
        for ch in text:
            self.count.append(self.count[-1] + kept(ch))
        self.spans = [(s, i) for i, s in enumerate(spans) if s is not None]
        self.starts = [s[0] for s, _ in self.spans]
        self.bounds: list[int] | None = None  # where each page starts, when the record has marks
        if "marks" in record:
            bounds, pos = [], 0
            for mark in record["marks"]:
                found = re.compile(r"^#{1,6} " + re.escape(" ".join(mark.split())) + r"[ \t]*$", re.M).search(text, pos)
                if found is None:  # a heading the reader dropped: the paragraphs' pages alone
                    break
                bounds.append(found.start())
                pos = found.end()
            else:
                self.bounds = bounds

    def page(self, offset: int) -> int:
        if self.bounds is not None:
            return max(bisect_right(self.bounds, offset), 1)
        k = bisect_right(self.starts, offset) - 1
        if k < 0:  # before the first paragraph: the title
            return int(self.record["title_page"])
        (start, end), index = self.spans[k]
        if offset >= end:  # between paragraphs: where the next one starts
            if k + 1 < len(self.spans):
                return page_at(self.record, self.spans[k + 1][1], 0)
            return page_at(self.record, index, self.count[end] - self.count[start] - 1)
        return page_at(self.record, index, self.count[offset] - self.count[start])

    def pages(self, start: int, end: int) -> tuple[int, int]:
        last = end - 1
        while last > start and not kept(self.text[last]):
            last -= 1
        return self.page(start), self.page(last)

    def agrees(self) -> bool:
        """Whether every found paragraph starts on the page the record gives it."""
        return all(self.page(start) == page_at(self.record, i, 0) for (start, _), i in self.spans)


def _locator_span(locator: str) -> tuple[int, int]:
    a, b = locator.rsplit("#char=", 1)[1].split(",")
    return int(a), int(b)


def _read_all(directory: Path) -> dict[str, Any]:
    from ragspine.documents import read_document

    return {p.stem: read_document(p, directory) for p in sorted(directory.iterdir()) if p.is_file()}


def _ingest_and_query(form_dir: Path, workdir: Path, queries: dict[str, str]) -> tuple[dict[str, list[Any]], float]:
    """``ragspine ingest form_dir`` into an economy library of its own; each query's snippets through ``Stack``."""
    from ragspine.config import load_settings
    from ragspine.stack import Stack

    env = {"RAGSPINE_CHUNK_STORE": str(workdir / f"{form_dir.name}.db"), "RAGSPINE_CACHE_DIR": str(workdir / "cache"),
           "RAGSPINE_DATA_DIR": str(workdir), "RAGSPINE_RETRIEVAL_MODE": "economy"}
    ingest_s = _cli(["ingest", str(form_dir), "--library", "bench"], {**os.environ, **env})
    with Stack(load_settings(env)) as stack:
        retriever = stack.retriever(["bench"], retry_without_filters=False)
        return {qid: retriever.retrieve(text, top_k=DEPTH) for qid, text in queries.items()}, ingest_s


def _form_figures(form: str, out: Path, articles: list[dict[str, Any]], asked: dict[str, str], gold: dict[str, Any],
                  snippets: dict[str, list[Any]]) -> dict[str, Any]:
    docs = _read_all(out / form)
    para_index = {(str(a["_id"]), p["start"]): i for a in articles for i, p in enumerate(a["paragraphs"])}
    spans, layouts, found, total, leaked, disagree = {}, {}, 0, 0, 0, 0
    for a in articles:
        aid = str(a["_id"])
        doc = docs[aid]
        texts = [t for _, t in article_paragraphs(a)]
        if form in TABLES:  # a cell's "|" is "\\|" in a Markdown table row
            texts = [t.replace("|", "\\|") for t in texts]
        spans[aid] = align(doc.text, texts)
        found += sum(s is not None for s in spans[aid])
        total += len(spans[aid])
        leaked += MARKUP_ONLY in doc.text
        if form in PAGED:
            record = json.loads((out / PAGED[form] / f"{aid}.json").read_text(encoding="utf-8"))
            layouts[aid] = Layout(doc.text, spans[aid], record)
            disagree += not layouts[aid].agrees()
    shift = {aid: docs[aid].body_offset for aid in docs}  # locators count from the file's start (front matter)
    relevance, cited, right, hits_top1, gold_page = [], 0, 0, 0, 0
    for qid in asked:
        aid, g0, _ = gold[qid]
        k = para_index[(aid, g0)]
        span = spans[aid][k]
        ranked = snippets[qid]
        rel = (passage_hits(ranked, (f"{aid}.{form}", span[0] + shift[aid], span[1] + shift[aid])) if span is not None
               else [0] * len(ranked))
        relevance.append(rel)
        if form not in PAGED or not ranked:
            continue
        top = ranked[0]
        top_id = top["doc_id"].rsplit(".", 1)[0]
        layout = layouts[top_id]
        s0, s1 = _locator_span(top["source_locator"])
        want = layout.pages(s0 - shift[top_id], s1 - shift[top_id])
        got = (top.get("page"), top.get("page_end", top.get("page")))
        cited += 1
        right += got == want
        if rel and rel[0] and span is not None:
            hits_top1 += 1
            first, last = layout.pages(*span)
            gold_page += bool(got[0] is not None and got[0] <= last and first <= (got[1] or got[0]))
    figures: dict[str, Any] = {**passage_scores(relevance), "text_recovered": round(found / max(total, 1), 4), "paragraphs": total}
    if form == "html":
        figures["markup_leaked"] = leaked
    if form in PAGED:
        figures.update(citation_pages=round(right / max(cited, 1), 4), cited=cited,
                       gold_page=round(gold_page / max(hits_top1, 1), 4), top1_hits=hits_top1, layout_disagrees=disagree)
    return figures


def _reader_run(path: Path) -> dict[str, Any]:
    """One child process reading every file of ``path`` (a directory or a file): seconds, memory."""
    proc = subprocess.run([sys.executable, __file__, "--reader-worker", str(path)], capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        raise SystemExit(f"reader worker on {path} failed: {proc.stderr.strip()[-500:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def _readers(sets: dict[str, tuple[Path, dict[str, int]]], forms: list[str], rounds: int) -> dict[str, dict[str, Any]]:
    """``{set: {form: {seconds, pages_per_s, base_mb, peak_mb}}}``: every (set, form) once per round,
    interleaved; pages are the PDF's of the same content (``None`` without a PDF form)."""
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {s: {f: [] for f in forms} for s in sets}
    for _ in range(rounds):
        for name, (out, _) in sets.items():
            for form in forms:
                runs[name][form].append(_reader_run(out / form))
    figures: dict[str, dict[str, Any]] = {}
    for name, (_, form_pages) in sets.items():
        figures[name] = {}
        pages = form_pages.get("pdf")
        for form, got in runs[name].items():
            best = min(r["seconds"] for r in got)
            row = figures[name][form] = {
                "files": got[0]["files"], "pages": pages, "seconds": round(best, 3), "files_per_s": round(got[0]["files"] / best, 1),
                "pages_per_s": round(pages / best, 1) if pages else None, "base_mb": round(min(r["base_mb"] for r in got), 1),
                "peak_mb": round(max(r["peak_mb"] for r in got), 1)}
            if form in ("pptx", "xlsx"):
                row.update(own_pages=form_pages[form], own_pages_per_s=round(form_pages[form] / best, 1))
    return figures


def _long_pdfs(data_root: Path, workdir: Path, log: Callable[[str], None], sizes: list[int]) -> dict[str, Any]:
    # xquad-zh: CJK in the CID font from page 1 in both, so PDFium's one-off CMap cost (~17 MB) is in both
    source = data_root / "xquad-zh" / "articles.jsonl"
    if not source.exists():
        log(f"  documents: {source} missing, no long PDFs")
        return {}
    with open(source, encoding="utf-8") as fh:
        articles = [json.loads(line) for line in fh]
    out: dict[str, Any] = {}
    for want in sizes:
        path = workdir / "long" / f"long-{want}.pdf"
        path.parent.mkdir(parents=True, exist_ok=True)
        pages = render_long_pdf(articles, path, want, lang="zh-Hans")
        run = _reader_run(path)
        out[str(want)] = {"pages": pages, "bytes": path.stat().st_size, "text_chars": run["text_chars"], "seconds": round(run["seconds"], 3),
                          "pages_per_s": round(pages / run["seconds"], 1), "base_mb": run["base_mb"], "peak_mb": run["peak_mb"]}
        log(f"  documents: a {pages}-page PDF ({path.stat().st_size / 1e6:.1f} MB): peak {run['peak_mb']} MB"
            f" (base {run['base_mb']} MB), {out[str(want)]['pages_per_s']} pages/s")
    return out


def _ocr(engines: list[str], pages: int, log: Callable[[str], None]) -> list[dict[str, Any]]:
    """``_bench_ocr.bench_ocr``'s rows (engine, lang, cer, pages_per_s, or error), ``lang`` as en/zh/ja."""
    import _bench_ocr

    try:
        rows = _bench_ocr.bench_ocr(engines, pages=pages)
    except SystemExit as exc:  # no font to render a page with: the other figures stand
        rows = [{"engine": engine, "lang": "all", "error": str(exc)} for engine in engines]
    for row in rows:
        row["lang"] = OCR_LANGS.get(row["lang"], row["lang"])
        if "error" in row:
            log(f"  documents: OCR {row['engine']} {row['lang']}: not available: {row['error']}")
        else:
            log(f"  documents: OCR {row['engine']} {row['lang']}: CER {row['cer']:.2%}, {row['pages_per_s']} pages/s")
    return rows


def _names(value: Any, default: str) -> list[str]:
    text = str(default if value is None else value)
    return [] if text.strip() in ("", "none") else [n.strip() for n in text.split(",") if n.strip()]


def section(args: argparse.Namespace, data_root: Path, log: Callable[[str], None], workdir: Path) -> dict[str, Any]:
    """``{"sets": {set: {form: figures}}, "readers": {set: {form: speed}}, "long_pdf": {pages: figures}, "ocr": [row]}``."""
    names = _names(getattr(args, "documents_sets", None), ",".join(SETS))
    forms = _names(getattr(args, "documents_forms", None), ",".join(FORMS))
    unknown = sorted(set(forms) - set(FORMS))
    if unknown:
        raise SystemExit(f"--documents-forms: unknown form(s) {', '.join(unknown)}; choose from {','.join(FORMS)}")
    forms = sorted(forms, key=FORMS.index)  # .txt first: the others' deltas are against it
    limit = getattr(args, "documents_queries", 300)
    results: dict[str, Any] = {"queries": limit, "forms": forms, "sets": {}}
    rendered: dict[str, tuple[Path, dict[str, int]]] = {}
    for name in names:
        data = data_root / name
        if not (data / "articles.jsonl").exists():
            log(f"  documents: {data} has no articles.jsonl, skipped")
            continue
        out = workdir / name
        t0 = time.perf_counter()
        done = render_set(data, out, forms)
        log(f"  documents: {name}: {done['articles']} articles ({done['lang']}) rendered as {', '.join(forms)};"
            + "".join(f" {n} {f} pages" for f, n in done["form_pages"].items()) + f", {time.perf_counter() - t0:.0f} s")
        rendered[name] = (out, done["form_pages"])
        articles, span_queries, gold = load_articles(data)
        asked = _first(span_queries, limit)
        rows: dict[str, Any] = {}
        for form in forms:
            with tempfile.TemporaryDirectory(prefix="ragspine-documents-", dir=workdir) as tmp:
                snippets, ingest_s = _ingest_and_query(out / form, Path(tmp), asked)
            rows[form] = {**_form_figures(form, out, articles, asked, gold, snippets), "ingest_s": round(ingest_s, 1)}
            if form != "txt" and "txt" in rows:
                rows[form]["delta_vs_txt"] = round(rows[form]["ndcg@10"] - rows["txt"]["ndcg@10"], 4)
            r = rows[form]
            log(f"  documents: {name} {form}: nDCG@10 {r['ndcg@10']:.4f}"
                + (f" ({r['delta_vs_txt']:+.4f} vs txt)" if "delta_vs_txt" in r else "")
                + f", text recovered {r['text_recovered']:.2%}"
                + (f", citation pages {r['citation_pages']:.2%}, gold page {r['gold_page']:.2%}" if "citation_pages" in r else "")
                + (f", markup leaked in {r['markup_leaked']} files" if "markup_leaked" in r else ""))
        results["sets"][name] = rows
    results["readers"] = _readers(rendered, forms, int(getattr(args, "documents_rounds", 2)))
    for name, by_form in results["readers"].items():
        for form, r in by_form.items():
            log(f"  documents: {name} {form} reader: {r['pages_per_s']} pages/s, peak {r['peak_mb']} MB (base {r['base_mb']} MB)")
    long_pages = [int(n) for n in _names(getattr(args, "documents_long", None), ",".join(map(str, LONG_PAGES)))]
    if long_pages and "pdf" in forms:
        results["long_pdf"] = _long_pdfs(data_root, workdir, log, long_pages)
    engines = _names(getattr(args, "documents_ocr", None), ",".join(OCR_ENGINES))
    if engines:
        results["ocr"] = _ocr(engines, int(getattr(args, "documents_ocr_pages", 2)), log)
    return results


def _pct(value: float) -> str:
    return f"{value:.1%}"


def table(results: dict[str, Any]) -> list[str]:
    """Markdown: one row per set and form; the long PDFs; the OCR engines."""
    lines = ["| set | form | nDCG@10 | vs .txt | text recovered | citation pages | gold page | reader pages/s | reader peak MB (base) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, forms in results.get("sets", {}).items():
        for form, r in forms.items():
            speed = results.get("readers", {}).get(name, {}).get(form, {})
            delta = f"{r['delta_vs_txt']:+.4f}" if "delta_vs_txt" in r else "—"
            recovered = _pct(r["text_recovered"]) + (f", markup leaked in {r['markup_leaked']}" if r.get("markup_leaked") else "")
            cite = f"{r['citation_pages']:.1%} of {r['cited']}" if "citation_pages" in r else "—"
            gold = f"{r['gold_page']:.1%} of {r['top1_hits']}" if "gold_page" in r else "—"
            rate = speed.get("pages_per_s") or (f"{speed['files_per_s']} files/s" if "files_per_s" in speed else "n/a")
            if "own_pages_per_s" in speed:
                rate = f"{rate} ({speed['own_pages_per_s']} {'slides' if form == 'pptx' else 'sheets'}/s)"
            lines.append(f"| {name} | {form} | {r['ndcg@10']:.4f} | {delta} | {recovered} | {cite} | {gold} |"
                         f" {rate} | {speed.get('peak_mb', 'n/a')} ({speed.get('base_mb', 'n/a')}) |")
    long_pdf = results.get("long_pdf", {})
    if long_pdf:
        lines += ["", "| PDF | size | text kept | pages/s | peak MB (base) |", "|---|---|---|---|---|"]
        for r in long_pdf.values():
            lines.append(f"| {r['pages']} pages | {r['bytes'] / 1e6:.1f} MB | {r['text_chars'] / 1e6:.2f} M chars | {r['pages_per_s']} |"
                         f" {r['peak_mb']} ({r['base_mb']}) |")
    ocr = results.get("ocr", [])
    if ocr:
        lines += ["", "| OCR engine | page | CER | pages/s |", "|---|---|---|---|"]
        for r in ocr:
            lines.append(f"| {r['engine']} | {r['lang']} | " + (f"{r['cer']:.2%} | {r['pages_per_s']} |" if "error" not in r
                                                                 else f"not available: {r['error']} | — |"))
    return lines


def report_rows(results: dict[str, Any], add: Callable[..., None]) -> None:
    for name, forms in results.get("sets", {}).items():
        for form, r in forms.items():
            value = f"{r['ndcg@10']:.4f}" + (f" ({r['delta_vs_txt']:+.4f})" if "delta_vs_txt" in r else "")
            add(f"documents {name} {form}: nDCG@10 (vs .txt)", None, value)
            if "citation_pages" in r:
                add(f"documents {name} {form}: top-1 citation pages right / gold page", None,
                    f"{r['citation_pages']:.1%} / {r['gold_page']:.1%}")
    for name, forms in results.get("readers", {}).items():
        for form, r in forms.items():
            add(f"documents {name} {form} reader: pages/s, peak MB", None, f"{r['pages_per_s']}, {r['peak_mb']}")
    for r in results.get("long_pdf", {}).values():
        add(f"documents {r['pages']}-page PDF: peak MB (base)", None, f"{r['peak_mb']} ({r['base_mb']})")
    for r in results.get("ocr", []):
        add(f"documents OCR {r['engine']} {r['lang']}: CER, pages/s", None,
            "not available" if "error" in r else f"{r['cer']:.2%}, {r['pages_per_s']}")


def _reader_worker(path: Path) -> None:
    """Child process: read every file of ``path`` (or the one file) with the product's readers."""
    import ragspine.readers.registry  # noqa: F401  # the import cost is not the reader's
    from ragspine.documents import read_document
    from ragspine.progress import peak_rss_mb

    files = sorted(p for p in path.iterdir() if p.is_file()) if path.is_dir() else [path]
    for module in ("pypdfium2", "docx", "pptx", "openpyxl"):  # loaded before the base is taken: a library's import is not per page
        try:
            __import__(module)
        except ImportError:
            pass
    base = peak_rss_mb() or 0.0
    chars = 0
    t0 = time.perf_counter()
    for file in files:
        chars += len(read_document(file, file.parent).text)
    seconds = time.perf_counter() - t0
    print(json.dumps({"files": len(files), "seconds": seconds, "text_chars": chars, "base_mb": round(base, 1),
                      "peak_mb": round(peak_rss_mb() or 0.0, 1)}))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--reader-worker":
        _reader_worker(Path(sys.argv[2]))
    else:
        raise SystemExit("run through scripts/bench.py --documents")
