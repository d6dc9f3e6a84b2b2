"""``ragspine graph`` and ``ragspine ask`` read as a viewer (issue 29): for a principal P (or no
principal), what they print over a library L equals what they print over L′, the library that
holds only the documents P may read — the graph's ``reports`` and ``co_occurs_with`` edges, its
counts, a roll-up's members and total, the agent's fact."""

from __future__ import annotations

import json

import pytest

from tests.helpers import needs
from tests.helpers import run_cli as run

needs("sqlalchemy")

HEADER = "metric,entity,period,channel,value,unit,source_doc_id,source_locator,valid_as_of,sensitivity\n"
CHINA = "revenue,Kestrel China,2024Q3,,60,EUR_M,kestrel/china-q3-2024,table 1,2024-10-30,\n"
JAPAN = "revenue,Kestrel Japan,2024Q3,,40.25,EUR_M,kestrel/japan-q3-2024,p. 2,2024-10-30,\n"
SUPPLY = "---\ndoc_id: kestrel/supply\n---\n# Supply\n\nKestrel China ships gearboxes to Kestrel Japan every month.\n"
TRADE = "---\ndoc_id: kestrel/trade\n---\n# Trade\n\nKestrel Japan buys sensors from Kestrel China.\n"
#: the documents only the board reads
BOARD = ("kestrel/japan-q3-2024", "kestrel/trade")


def _library(tmp_path, capsys, name: str, *, hidden: bool) -> str:
    """A library's database: every document (``hidden``, the board's two with their ACL), or L′
    (without the board's documents at all)."""
    where = tmp_path / name
    where.mkdir()
    db = str(where / "kb.db")
    (where / "facts.csv").write_text(HEADER + CHINA + (JAPAN if hidden else ""), encoding="utf-8")
    docs = tmp_path / "docs"  # the same files at the same paths (a citation's locator names its file)
    if not docs.exists():
        docs.mkdir()
        (docs / "supply.md").write_text(SUPPLY, encoding="utf-8")
        (docs / "trade.md").write_text(TRADE, encoding="utf-8")
    source = docs if hidden else docs / "supply.md"
    assert run(capsys, "--db", db, "--mode", "economy", "ingest", str(source), "--library", "kb")[0] == 0
    assert run(capsys, "--db", db, "facts", "ingest", str(where / "facts.csv"), "--library", "kb")[0] == 0
    _principals(db)
    if hidden:
        for doc_id in BOARD:
            code, _, err = run(capsys, "--db", db, "acl", "set", "kb", doc_id, "--allow", "group:board")
            assert code == 0, err
    return db


def _principals(db: str) -> None:
    from ragspine.service.store import ServiceStore, sqlite_engine

    store = ServiceStore(sqlite_engine(db), create=True)
    try:
        store.create_tenant("acme", "ACME")
        for user in ("alice", "bob"):
            store.add_principal("acme", "user", user)
        store.add_principal("acme", "group", "board")
        store.add_member("acme", "board", "alice")
    finally:
        store.close()


@pytest.fixture
def libraries(tmp_path, capsys, monkeypatch) -> tuple[str, str, str]:
    """``(L, L′, the library without any ACL)``."""
    monkeypatch.setenv("RAGSPINE_EMBEDDING", "none")
    monkeypatch.setenv("RAGSPINE_CACHE_DIR", str(tmp_path / "cache"))
    whole = _library(tmp_path, capsys, "whole", hidden=True)
    reduced = _library(tmp_path, capsys, "reduced", hidden=False)
    plain = str(tmp_path / "plain.db")
    import shutil

    shutil.copy(whole, plain)
    for doc_id in BOARD:
        assert run(capsys, "--db", plain, "acl", "set", "kb", doc_id, "--open")[0] == 0
    return whole, reduced, plain


GRAPH = [
    ("edges", "--extractor", "cooccurrence", "--json"),
    ("rollup", "revenue", "--entity", "Kestrel", "--period", "2024Q3", "--json"),
    ("peers", "revenue", "--entity", "Kestrel China", "--period", "2024Q3", "--json"),
    ("trace", "operating margin", "--entity", "Kestrel Japan", "--period", "2024Q3", "--json"),
]


@pytest.mark.parametrize("argv", GRAPH, ids=[a[0] for a in GRAPH])
@pytest.mark.parametrize("who", [None, "bob", "alice"])
def test_graph_for_a_viewer_equals_the_graph_of_what_it_may_read(libraries, capsys, argv, who) -> None:
    whole, reduced, plain = libraries
    viewer = ["--as", who] if who else []
    code, out, err = run(capsys, "--db", whole, "graph", *argv, "--library", "kb", *viewer)
    expected = reduced if who != "alice" else plain  # alice is on the board: she reads everything
    code_ref, out_ref, _ = run(capsys, "--db", expected, "graph", *argv, "--library", "kb", *viewer)
    assert (code, json.loads(out)) == (code_ref, json.loads(out_ref))
    if who is None:
        assert "documents with an ACL (2 in 'kb') were left out" in err and "--as USER" in err
    if who != "alice":
        assert "japan-q3" not in out and "kestrel/trade" not in out and "40.25" not in out
    else:
        assert "japan-q3" in out or argv[0] == "peers" and "40.25" in out or argv[0] == "trace"


def test_graph_edges_count_only_what_the_viewer_may_read(libraries, capsys) -> None:
    whole, _, _ = libraries
    counts = {}
    for who in ("bob", "alice"):
        code, out, _ = run(capsys, "--db", whole, "graph", "edges", "--extractor", "cooccurrence", "--library", "kb", "--as", who)
        assert code == 0
        counts[who] = out.splitlines()[0]
        assert ("kestrel/trade" in out) == (who == "alice") and ("japan-q3" in out) == (who == "alice")
    assert counts["bob"] != counts["alice"]


@pytest.mark.parametrize("who", [None, "bob", "alice"])
def test_ask_reads_the_fact_only_for_a_viewer_that_may_read_its_document(libraries, capsys, who) -> None:
    whole, reduced, plain = libraries
    viewer = ["--as", who] if who else []
    question = ("ask", "What was Kestrel Japan's revenue in Q3 2024?", "--json")
    code, out, _ = run(capsys, "--db", whole, "--mode", "economy", *question, *viewer)
    expected = reduced if who != "alice" else plain
    code_ref, out_ref, _ = run(capsys, "--db", expected, "--mode", "economy", *question, *viewer)
    answer, reference = json.loads(out), json.loads(out_ref)
    assert code == code_ref and answer == reference
    assert ("40.25" in out) == (who == "alice")


def test_graph_as_an_unknown_user_is_one_line_and_exit_two(libraries, capsys) -> None:
    whole, _, _ = libraries
    code, out, err = run(capsys, "--db", whole, "graph", "edges", "--library", "kb", "--as", "mallory")
    assert code == 2 and out == "" and "no user 'mallory' in tenant 'acme'" in err and err.count("\n") == 1

