"""Tables stay tables (issue 28): do questions about cell values find the row?

Real tables found on this machine, none generated: the statsmodels datasets the agent
evaluation ships (``ragspine/testing/data/agent_eval``: US state crime 2009, Longley, Danish
money demand), Debian's and Ubuntu's release tables (``/usr/share/distro-info``) and the time
zone database's country and zone tables (``/usr/share/zoneinfo/iso3166.tab``,
``zone1970.tab``); a system file that is missing is left out and said so. Each table is
written as a CSV, as a sheet of one workbook (numbers as numbers; the sheets are its pages) and
as a PDF (reportlab: a title line, then the table, its header row repeated on every page), and
ingested through ``read_document`` into a library of its own per form.

Questions come from the cells: *"What is the <column> of <key>?"* for one non-key cell of each
row asked (a seeded sample, ``--rows`` per table), and *"Which <key column> has <column>
<value>?"* for one value unique in its column. The answer is the row: a result holds it when its
text, ``|`` taken out and whitespace collapsed, contains the row's non-empty cells in order,
one space apart (the same test for every form). Reported per form: **hit@1**, **hit@5** and
**MRR@10** of the first result holding the row, the chunks, and the asked rows that no chunk
holds whole (*split*), for the chunks the chunker alone cuts (``old``: the behaviour before row
chunks) and the chunks ``ragspine ingest`` cuts now (``rows``: long tables at their rows),
each searched with ``RAGSPINE_CONTEXTUAL=none`` and ``header`` (row chunks' column names in
the index text), on the same run. The PDF reader finds a table's cells in the runs of its lines
(``ragspine/readers/pdf_tables.py``) and writes Markdown rows, so a PDF's tables are cut as
a sheet's.

    python scripts/bench_tables.py                  # BM25 (no model), default chunker, 480 chars
    python scripts/bench_tables.py --chunker layout --rows 40 --out tables.json
    python scripts/bench_tables.py --embedding onnx # hybrid: BM25 + the packaged MiniLM
    python scripts/bench_tables.py --embedding onnx --env RAGSPINE_FUSION_WEIGHTS=zscore
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import random
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

AGENT_EVAL = ROOT / "ragspine" / "testing" / "data" / "agent_eval"
DEPTH = 10
FORMS = ("csv", "xlsx", "pdf")


@dataclass
class Table:
    name: str  # file stem, sheet name
    title: str
    header: list[str]
    rows: list[list[str]]
    key: int  # the column naming a row
    source: str

    questions: list[tuple[str, int]] = field(default_factory=list)  # (question, row index)


def _csv_rows(path: Path, delimiter: str = ",") -> list[list[str]]:
    with path.open(encoding="utf-8-sig", newline="") as f:
        return [row for row in csv.reader(f, delimiter=delimiter) if row and not row[0].startswith("#")]


def _tab_rows(path: Path, header: list[str]) -> list[list[str]]:
    rows = [line.rstrip("\n").split("\t") for line in path.read_text(encoding="utf-8").splitlines() if line and not line.startswith("#")]
    return [header, *[row + [""] * (len(header) - len(row)) for row in rows]]


#: (name, title, loader, key column name)
SOURCES: list[tuple[str, str, Callable[[], list[list[str]]], str]] = [
    ("statecrime", "US state crime statistics 2009", lambda: _csv_rows(AGENT_EVAL / "statecrime.csv"), "state"),
    ("longley", "Longley US macroeconomic data", lambda: _csv_rows(AGENT_EVAL / "longley.csv"), "YEAR"),
    ("danish", "Danish money demand", lambda: _csv_rows(AGENT_EVAL / "danish.csv"), "period"),
    ("ubuntu", "Ubuntu releases", lambda: _csv_rows(Path("/usr/share/distro-info/ubuntu.csv")), "codename"),
    ("debian", "Debian releases", lambda: _csv_rows(Path("/usr/share/distro-info/debian.csv")), "codename"),
    ("countries", "ISO 3166 country codes", lambda: _tab_rows(Path("/usr/share/zoneinfo/iso3166.tab"), ["code", "country"]), "country"),
    ("zones", "Time zones", lambda: _tab_rows(Path("/usr/share/zoneinfo/zone1970.tab"), ["country codes", "coordinates", "zone", "comments"]), "zone"),
]


def load_tables(log: Callable[[str], None]) -> list[Table]:
    tables = []
    for name, title, load, key in SOURCES:
        try:
            rows = load()
        except OSError as exc:
            log(f"  {name}: left out ({exc.strerror}: {getattr(exc, 'filename', '')})")
            continue
        header, body = rows[0], [r for r in rows[1:] if any(c.strip() for c in r)]
        tables.append(Table(name, title, header, body, header.index(key), source=name))
    return tables


def _is_number(value: str) -> bool:
    return bool(re.fullmatch(r"-?\d+(\.\d+)?", value.strip()))


def _sheet_value(value: str) -> Any:
    if not _is_number(value):
        return value
    return float(value) if "." in value else int(value)


def ask(tables: list[Table], rows_per_table: int, seed: int) -> None:
    """Two questions per sampled row: a cell of the row, the row of a value unique in its column."""
    from ragspine.readers.base import cell_text

    rng = random.Random(seed)
    for t in tables:
        keys = [r[t.key] for r in t.rows]
        usable = [i for i, k in enumerate(keys) if k and keys.count(k) == 1]
        picked = sorted(rng.sample(usable, min(rows_per_table, len(usable))))
        for i in picked:
            row = t.rows[i]
            cols = [c for c in range(len(t.header)) if c != t.key and c < len(row) and row[c].strip()]
            if not cols:
                continue
            c = rng.choice(cols)
            t.questions.append((f"What is the {t.header[c]} of {row[t.key]}?", i))
            unique = [c for c in cols if sum(r[c] == row[c] for r in t.rows if c < len(r)) == 1
                      and cell_text(_sheet_value(row[c])) == row[c] and len(row[c]) >= 3]
            if unique:
                c = rng.choice(unique)
                t.questions.append((f"Which {t.header[t.key]} has {t.header[c]} {row[c]}?", i))


# -- the forms ------------------------------------------------------------------------------------
def write_forms(tables: list[Table], out: Path) -> dict[str, Path]:
    dirs = {form: out / form for form in FORMS}
    for d in dirs.values():
        d.mkdir(parents=True)
    for t in tables:
        with (dirs["csv"] / f"{t.name}.csv").open("w", encoding="utf-8", newline="") as f:
            csv.writer(f).writerows([t.header, *t.rows])
        (dirs["pdf"] / f"{t.name}.pdf").write_bytes(_pdf(t))
    (dirs["xlsx"] / "tables.xlsx").write_bytes(_workbook(tables))
    return dirs


def _workbook(tables: list[Table]) -> bytes:
    import openpyxl  # type: ignore[import-untyped]

    book = openpyxl.Workbook()
    book.remove(book.active)
    for t in tables:
        sheet = book.create_sheet(t.name)
        sheet.append(t.header)
        for row in t.rows:
            sheet.append([_sheet_value(v) for v in row])
    book.properties.title = "Public tables"
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def _pdf(t: Table) -> bytes:
    from reportlab.lib import colors  # type: ignore[import-untyped]
    from reportlab.lib.pagesizes import A4, landscape  # type: ignore[import-untyped]
    from reportlab.lib.styles import getSampleStyleSheet  # type: ignore[import-untyped]
    from reportlab.platypus import Paragraph, SimpleDocTemplate, TableStyle  # type: ignore[import-untyped]
    from reportlab.platypus import Table as PdfTable  # type: ignore[import-untyped]

    out = io.BytesIO()
    doc = SimpleDocTemplate(out, pagesize=landscape(A4), title=t.title)
    table = PdfTable([t.header, *t.rows], repeatRows=1)
    table.setStyle(TableStyle([("FONTSIZE", (0, 0), (-1, -1), 8), ("GRID", (0, 0), (-1, -1), 0.25, colors.grey),
                               ("FONTNAME", (0, 0), (-1, 0), "Helvetica-Bold")]))
    doc.build([Paragraph(t.title, getSampleStyleSheet()["Heading1"]), table])
    return out.getvalue()


# -- scoring --------------------------------------------------------------------------------------
def _flat(text: str) -> str:
    return " ".join(text.replace("\\|", "\x00").replace("|", " ").replace("\x00", "|").split())


def expected_row(t: Table, i: int, form: str) -> str:
    from ragspine.readers.base import cell_text

    cells = [cell_text(_sheet_value(v)) if form == "xlsx" else " ".join(v.split()) for v in t.rows[i]]
    return " ".join(c for c in cells if c)


def holds(text: str, row: str) -> bool:
    return f" {row} " in f" {_flat(text)} "


def scores(ranks: list[int | None]) -> dict[str, float]:
    n = max(len(ranks), 1)
    return {"hit@1": round(sum(r == 1 for r in ranks) / n, 4), "hit@5": round(sum(r is not None and r <= 5 for r in ranks) / n, 4),
            "mrr@10": round(sum(1 / r for r in ranks if r is not None) / n, 4)}


# -- one form -------------------------------------------------------------------------------------
def run_form(form: str, folder: Path, tables: list[Table], args: argparse.Namespace, log: Callable[[str], None]) -> dict[str, Any]:
    from ragspine.config import load_settings
    from ragspine.documents import chunk_source, read_document, with_pages
    from ragspine.retrieval.chunking.base import make_chunker
    from ragspine.stack import Stack

    docs = [read_document(p, folder) for p in sorted(folder.iterdir())]
    chunker = make_chunker(args.chunker, max_chars=args.chunk_chars, overlap_chars=args.overlap_chars, packing=args.packing)
    variants = {
        "old": lambda d: with_pages(chunker.chunk(d.text, d.doc_id, title=d.title, metadata=d.metadata, sensitivity=d.sensitivity,
                                                  source=d.source, source_offset=d.body_offset), d.structure, d.body_offset),
        "rows": lambda d: chunk_source(d, chunker),
    }
    doc_of = {t.name: (f"{t.name}.{form}" if form != "xlsx" else "tables.xlsx") for t in tables}
    out: dict[str, Any] = {}
    for variant, cut in variants.items():
        chunks = {d.doc_id: cut(d) for d in docs}
        texts = [c.text for cs in chunks.values() for c in cs]
        asked_rows = {(t.name, i) for t in tables for _, i in t.questions}
        split = sum(not any(holds(x, expected_row(t, i, form)) for x in texts) for t in tables for i in {i for n, i in asked_rows if n == t.name})
        for contextual in ("none", "header"):  # a library each: the dense leg's vectors are of its index text
            with tempfile.TemporaryDirectory(prefix="ragspine-tables-") as tmp:
                env = {"RAGSPINE_CHUNK_STORE": str(Path(tmp) / "bench.db"), "RAGSPINE_CACHE_DIR": str(Path(tmp) / "cache"),
                       "RAGSPINE_DATA_DIR": tmp, "RAGSPINE_EMBEDDING": args.embedding, "RAGSPINE_CONTEXTUAL": contextual}
                if args.embedding != "none":
                    env["RAGSPINE_MODE"] = "hybrid"
                env.update(item.split("=", 1) for item in args.env)
                with Stack(load_settings(env)) as stack:
                    stack.ensure_library("tables")
                    pipe = stack.pipeline("tables")
                    for doc_id, cs in chunks.items():
                        pipe.replace_doc_chunks(doc_id, cs, embed=False)
                    if pipe.embedding_backend is not None:
                        pipe.sync_vectors()
                    ranks: dict[str, list[int | None]] = {"cell": [], "row": []}
                    t0 = time.perf_counter()
                    for t in tables:
                        for question, i in t.questions:
                            row = expected_row(t, i, form)
                            results = pipe.retrieve(question, top_k=DEPTH)
                            ranks["row" if question.startswith("Which ") else "cell"].append(
                                next((k for k, r in enumerate(results, 1) if r.chunk.doc_id == doc_of[t.name] and holds(r.chunk.text, row)), None))
                    every = ranks["cell"] + ranks["row"]
                    ms = 1000 * (time.perf_counter() - t0) / max(len(every), 1)
                    key = f"{variant}/{contextual}"
                    out[key] = {**scores(every), "questions": len(every), "chunks": len(texts), "split_rows": split, "query_ms": round(ms, 1),
                                "by_kind": {kind: scores(r) for kind, r in ranks.items()}}
                    log(f"  {form:5} {key:12} " + "  ".join(f"{k} {v}" for k, v in out[key].items() if k != "by_kind"))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=40, help="rows asked about per table (a seeded sample; default 40)")
    parser.add_argument("--seed", type=int, default=28)
    parser.add_argument("--chunker", default="default", help="a RAGSPINE_CHUNKER name (default: default)")
    parser.add_argument("--chunk-chars", type=int, default=480)
    parser.add_argument("--overlap-chars", type=int, default=80)
    parser.add_argument("--packing", default="pack", choices=("pack", "unit"))
    parser.add_argument("--embedding", default="none", help="none (BM25 only, the default) or a RAGSPINE_EMBEDDING name: hybrid")
    parser.add_argument("--env", action="append", default=[], metavar="RAGSPINE_X=VALUE",
                        help="another setting of every library (e.g. RAGSPINE_FUSION_WEIGHTS=zscore); repeatable")
    parser.add_argument("--forms", default=",".join(FORMS), help="comma-separated: csv,xlsx,pdf")
    parser.add_argument("--out", type=Path, help="write the figures as JSON here")
    args = parser.parse_args(argv)
    log = lambda line: print(line, flush=True)  # noqa: E731
    tables = load_tables(log)
    ask(tables, args.rows, args.seed)
    log(f"{len(tables)} tables ({', '.join(f'{t.name} {len(t.rows)} rows' for t in tables)}); "
        f"{sum(len(t.questions) for t in tables)} questions; chunker {args.chunker} {args.chunk_chars}/{args.overlap_chars}"
        f" packing {args.packing}; embedding {args.embedding}")
    report: dict[str, Any] = {"args": {k: str(v) for k, v in vars(args).items()}, "tables": {t.name: len(t.rows) for t in tables},
                              "questions": sum(len(t.questions) for t in tables), "forms": {}}
    with tempfile.TemporaryDirectory(prefix="ragspine-tables-files-") as tmp:
        dirs = write_forms(tables, Path(tmp))
        for form in args.forms.split(","):
            report["forms"][form] = run_form(form, dirs[form], tables, args, log)
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
