"""The conformance invariants over documents of every reader, on the embedded default and on
PostgreSQL (18 + pgvector + the Redis cache; 15 + Qdrant's local mode).

One folder holds, for every format a reader reads (PDF, Word, PowerPoint, Excel, CSV, HTML,
Markdown, text, and a PNG through OCR), an open document and its RESTRICTED twin (the label
from a sidecar, or front matter) that is the best lexical match for the queries. It is
ingested with ``ragspine ingest`` (the stack chosen by environment alone), then:

* provenance: every snippet's text is its locator's span of the text the reader extracted
  (a text file's: of the file itself), and a paged format's snippet carries the pages it spans;
* every format's document is found first by its own word;
* no exit — any retrieval mode, with and without a filter, the CLI's JSON — returns a
  RESTRICTED twin or its text, although each is stored, labelled, and the best BM25 match;
* a production stack ranks exactly like the embedded default (ids, and scores within 1e-6);
* re-ingesting after one file changed replaces that document only.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragspine import cli
from ragspine.config import load_settings
from ragspine.documents import read_document
from ragspine.readers.base import ReaderLimits
from ragspine.retrieval.lexical.bm25 import bm25_scores
from ragspine.retrieval.lexical.tokenizer import tokenize
from ragspine.retrieval.sensitivity import is_restricted
from ragspine.stack import Stack
from tests.conformance.test_production_stacks import STACKS, _environ
from tests.formats import FORMATS, PAGED
from tests.helpers import needs
from tests.unit.readers.test_ocr import needs_tesseract

needs("pypdfium2", "docx", "pptx", "openpyxl", "PIL")

LIBRARY = "docs"
SECRET = "zeppelinquartz"
QUERY = "gearbox supply delays"
#: each format's own word: a query for it must find that format's open document first
WORDS = {"pdf": "falcon", "docx": "heron", "pptx": "otter", "xlsx": "badger", "csv": "beaver", "html": "walrus",
         "md": "marmot", "txt": "weasel", "png": "bison"}
MODES = ("economy", "hybrid", "vector", "bm25")
FILTERS = (None, {"team": "ops"}, {"team": {"in": ["ops", "board"]}})


def open_paragraphs(word: str) -> list[str]:
    return [f"The {word} report covers gearbox supply delays at the northern plant.",
            f"Second part of the {word} file lists spare parts and valve prices.",
            f"Closing notes on {word} maintenance schedules and safety audits."]


def secret_paragraphs(word: str) -> list[str]:
    return [f"Board memo {SECRET}: gearbox supply delays, gearbox supply delays, {word} gearbox supply delays.",
            f"The {word} gearbox supply delays memo {SECRET} stays with the board."]


def write_corpus(folder: Path, changed: str | None = None) -> None:
    """The open and RESTRICTED document of every format under ``folder`` (``changed``: that
    format's open document says something else)."""
    for ext, build in FORMATS.items():
        word = WORDS[ext]
        paragraphs = open_paragraphs(word) if ext != changed else [f"The {word} report was withdrawn; see the quokka memo."]
        (folder / "open").mkdir(parents=True, exist_ok=True)
        (folder / "open" / f"open.{ext}").write_bytes(build(f"{word} report", paragraphs))
        (folder / "open" / f"open.{ext}.meta.yaml").write_text("team: ops\n", encoding="utf-8")
        (folder / "secret").mkdir(parents=True, exist_ok=True)
        secret = folder / "secret" / f"secret.{ext}"
        if ext == "md":  # a text format's own label, lower case: front matter
            secret.write_bytes(b"---\nsensitivity: restricted\nteam: board\n---\n" + build(f"{word} memo", secret_paragraphs(word)))
        else:
            secret.write_bytes(build(f"{word} memo", secret_paragraphs(word)))
            (folder / "secret" / f"secret.{ext}.meta.yaml").write_text("sensitivity: RESTRICTED\nteam: board\n", encoding="utf-8")


def ingest(monkeypatch, capsys, env: dict[str, str], folder: Path) -> str:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    code = cli.main(["ingest", str(folder), "--library", LIBRARY])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


@pytest.fixture
def stack_env(request, tmp_path, monkeypatch):
    """``(environ, folder)`` of a stack with the corpus ingested: ``make(name)``."""
    needs_tesseract()
    monkeypatch.setenv("RAGSPINE_OCR", "tesseract")
    monkeypatch.setenv("RAGSPINE_CHUNK_CHARS", "160")  # several chunks a document: pages are cut apart
    monkeypatch.setenv("RAGSPINE_OVERLAP_CHARS", "0")
    folder = tmp_path / "corpus"
    write_corpus(folder)
    opened: list[Stack] = []

    def make(name: str) -> tuple[Stack, dict[str, str]]:
        env = _environ(name, request, tmp_path / name)
        if env.get("RAGSPINE_VECTOR_STORE") == "qdrant::memory:":  # ingest and queries are two processes here
            env["RAGSPINE_VECTOR_STORE"] = f"qdrant:{tmp_path / name / 'qdrant'}"
        out = ingest(monkeypatch, request.getfixturevalue("capsys"), env, folder)
        assert f"ingested {2 * len(FORMATS)} document(s)" in out
        stack = Stack(load_settings({**env, "RAGSPINE_CHUNK_CHARS": "160", "RAGSPINE_OVERLAP_CHARS": "0"}))
        opened.append(stack)
        return stack, env

    yield make, folder
    for stack in opened:
        stack.close()


def snippets_of(stack: Stack, query: str, mode: str = "hybrid", filters=None, top_k: int = 10) -> list[dict]:
    with Stack(stack.settings, mode=mode) as moded:
        return [dict(s) for s in moded.retriever([LIBRARY]).retrieve(query, filters=filters, top_k=top_k)]


def assert_provenance_and_pages(snippets: list[dict], folder: Path) -> None:
    extracted: dict[str, object] = {}
    for s in snippets:
        path, _, span = s["source_locator"].rpartition("#char=")
        start, end = map(int, span.split(","))
        if path not in extracted:
            extracted[path] = read_document(Path(path), folder, limits=ReaderLimits(ocr="tesseract"))
        doc = extracted[path]
        assert doc.text[start - doc.body_offset : end - doc.body_offset] == s["text"], s["source_locator"]
        ext = path.rsplit(".", 1)[1]
        if ext in PAGED:
            pages = doc.pages_of(start, end)
            assert (s["page"], s.get("page_end", s["page"])) == (pages[0], pages[-1]), s  # page_end: when it differs
            assert (s["metadata"]["page"], s["metadata"]["page_end"]) == (pages[0], pages[-1]), s
        else:
            assert "page" not in s and "page" not in s["metadata"], s


def assert_clean(snippets: list[dict], where: object) -> None:
    for s in snippets:
        assert not s["doc_id"].startswith("secret/"), (where, s["doc_id"])
        assert not is_restricted(s["sensitivity"]), (where, s)
        assert SECRET not in json.dumps(s).lower(), (where, s["doc_id"])


@pytest.mark.parametrize("name", STACKS[:3])
def test_every_readers_documents_keep_the_invariants(stack_env, name) -> None:
    make, folder = stack_env
    stack, _ = make(name)
    store = stack.db.chunk_store(LIBRARY)
    stored = store.iter_chunks()
    # every twin was read, stored and labelled RESTRICTED; each is the best BM25 match for QUERY
    secrets = [c for c in stored if c.doc_id.startswith("secret/")]
    assert {c.doc_id for c in secrets} == {f"secret/secret.{ext}" for ext in FORMATS}
    assert all(is_restricted(c.sensitivity) for c in secrets)
    scores = bm25_scores(tokenize(QUERY), [tokenize(c.text) for c in stored])
    assert stored[max(range(len(stored)), key=scores.__getitem__)].doc_id.startswith("secret/")

    seen: list[dict] = []
    for ext, word in WORDS.items():
        found = snippets_of(stack, word)
        assert found and found[0]["doc_id"] == f"open/open.{ext}", (ext, [s["doc_id"] for s in found])
        seen += found
    for mode in MODES:
        for filters in FILTERS:
            for query in (QUERY, f"{SECRET} board memo", "board"):
                got = snippets_of(stack, query, mode, filters, top_k=50)
                assert_clean(got, (mode, filters, query))
                seen += got
    assert_provenance_and_pages(seen, folder)
    assert {s["doc_id"] for s in seen} == {f"open/open.{ext}" for ext in FORMATS}  # the queries did find things
    pdf_pages = {p for s in seen if s["doc_id"] == "open/open.pdf" for p in range(s["page"], s.get("page_end", s["page"]) + 1)}
    assert pdf_pages == {1, 2, 3}  # cited page by page


def test_the_cli_json_exit_is_clean_too(stack_env, capsys) -> None:
    make, _ = stack_env
    make("embedded")
    for mode in MODES:
        assert cli.main(["query", QUERY, "--library", LIBRARY, "--mode", mode, "--top-k", "50", "--json"]) == 0
        got = json.loads(capsys.readouterr().out)
        assert got, mode
        assert_clean(got, mode)


@pytest.mark.parametrize("name", STACKS[1:3])
def test_a_production_stack_ranks_every_formats_documents_like_the_embedded_default(stack_env, name) -> None:
    make, _ = stack_env
    embedded, production = make("embedded")[0], make(name)[0]
    queries = [QUERY, "spare parts valve prices", "maintenance schedules safety", *WORDS.values()]
    for mode in ("economy", "hybrid"):
        for query in queries:
            want, got = snippets_of(embedded, query, mode), snippets_of(production, query, mode)
            assert [s["chunk_id"] for s in got] == [s["chunk_id"] for s in want], (mode, query)
            for g, w in zip(got, want, strict=True):
                assert g["source_locator"] == w["source_locator"] and g.get("page") == w.get("page")
                for key in ("bm25", "vector", "fused"):
                    assert abs(g["scores"][key] - w["scores"][key]) <= 1e-6 + 1e-9, (mode, query, key)  # scores: 6 places


@pytest.mark.parametrize("name", STACKS[:2])
def test_reingesting_after_one_file_changed_replaces_that_document_only(stack_env, name, monkeypatch, capsys) -> None:
    make, folder = stack_env
    stack, env = make(name)
    write_corpus(folder, changed="pdf")
    out = ingest(monkeypatch, capsys, env, folder)
    assert "ingested 1 document(s)" in out and f"{2 * len(FORMATS) - 1} unchanged document(s) skipped" in out
    with Stack(stack.settings) as fresh:
        assert [s["doc_id"] for s in snippets_of(fresh, "quokka withdrawn")][:1] == ["open/open.pdf"]
        old = [s for s in snippets_of(fresh, "falcon spare parts valve prices", top_k=50) if s["doc_id"] == "open/open.pdf"]
        assert old and all("valve" not in s["text"] for s in old)  # only the new version is served
        assert [s["doc_id"] for s in snippets_of(fresh, "heron")][:1] == ["open/open.docx"]


@pytest.mark.parametrize("name", ["sqlite+qdrant-memory", "postgres15+qdrant-memory"])
def test_qdrant_in_memory_is_refilled_from_the_cache_or_the_ingest_says_it_cannot_be(name, request, tmp_path, monkeypatch, capsys) -> None:
    """``qdrant::memory:`` dies with the ``ragspine ingest`` process: the next process refills
    it from a persistent embedding cache (SQLite's); over PostgreSQL's in-process cache
    nothing can, and the ingest says so instead of leaving queries without a dense leg silently."""
    request.getfixturevalue("qdrant_local_client")
    env = _environ("embedded" if name.startswith("sqlite") else "postgres15+qdrant-local", request, tmp_path)
    env["RAGSPINE_VECTOR_STORE"] = "qdrant::memory:"
    folder = tmp_path / "corpus"
    (folder / "open").mkdir(parents=True)
    for ext in ("md", "txt"):
        (folder / "open" / f"open.{ext}").write_bytes(FORMATS[ext](WORDS[ext], open_paragraphs(WORDS[ext])))
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert cli.main(["ingest", str(folder), "--library", LIBRARY]) == 0
    err = capsys.readouterr().err
    with Stack(load_settings(env)) as stack:
        dense = [s["scores"]["vector"] for s in snippets_of(stack, "gearbox supply delays northern plant")]
    if name.startswith("sqlite"):
        assert "live in this process only" not in err
        assert dense and all(v > 0 for v in dense)  # the vectors came back from the cache
    else:
        assert f"warning: library {LIBRARY!r}: its vectors live in this process only" in err
        assert dense and all(v == 0 for v in dense)
