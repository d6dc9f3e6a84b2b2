"""``--profile NAME`` (before or after the command) reaches every subcommand: each loads its
settings through :func:`ragspine.cli.common.settings_from_args`. Before the CLI package, ``ask``,
``facts``, ``metric``, ``graph``, ``workflow`` and ``raptor`` loaded settings themselves and
ignored the flag."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.helpers import run_cli as run

FACTS = (
    "metric,entity,period,value,unit,source_doc_id,source_locator,valid_as_of\n"
    "revenue,Kestrel,Q3 2024,182,EUR_M,kestrel/q3-2024-results,paragraph 1,2024-10-30\n"
)
RESULTS = "---\ndoc_id: kestrel/q3-2024-results\ntitle: Q3 results\n---\nRevenue fell because K2 shipments slipped by six weeks.\n"


@pytest.fixture
def db(tmp_path, capsys, monkeypatch) -> str:
    """A library ``kb`` (hybrid, deterministic vectors) with one document and one fact."""
    monkeypatch.setenv("RAGSPINE_EMBEDDING", "deterministic")
    path = str(tmp_path / "kb.db")
    (tmp_path / "facts.csv").write_text(FACTS, encoding="utf-8")
    (tmp_path / "results.md").write_text(RESULTS, encoding="utf-8")
    code, _, err = run(capsys, "--db", path, "--mode", "hybrid", "ingest", str(tmp_path / "results.md"), "--library", "kb")
    assert code == 0, err
    assert run(capsys, "--db", path, "facts", "ingest", str(tmp_path / "facts.csv"), "--library", "kb")[0] == 0
    return path


@pytest.fixture
def seen(monkeypatch) -> list[Any]:
    """The profile of the settings each stack and each chunk database a command opens was built from."""
    import ragspine.stores.registry
    from ragspine.stack import Stack

    profiles: list[Any] = []
    init, make = Stack.__init__, ragspine.stores.registry.make_chunk_store

    def spy_init(self: Any, settings: Any = None, **kwargs: Any) -> None:
        profiles.append(settings.profile if settings is not None else "<none>")
        init(self, settings, **kwargs)

    def spy_make(*args: Any, settings: Any = None, **kwargs: Any) -> Any:
        profiles.append(settings.profile if settings is not None else "<none>")
        return make(*args, settings=settings, **kwargs)

    monkeypatch.setattr(Stack, "__init__", spy_init)
    monkeypatch.setattr(ragspine.stores.registry, "make_chunk_store", spy_make)
    return profiles


COMMANDS = [
    ["ask", "What was Kestrel's revenue in Q3 2024?"],
    ["facts", "list", "--library", "kb"],
    ["metric", "revenue", "--entity", "Kestrel", "--period", "2024Q3", "--library", "kb"],
    ["graph", "edges", "--library", "kb"],
    ["graph", "rollup", "revenue", "--entity", "Kestrel", "--period", "2024Q3", "--library", "kb"],
    ["raptor", "status"],
    ["raptor", "show", "--library", "kb"],
    ["raptor", "build"],
    ["workflow", "preview"],
    ["query", "revenue"],
    ["show", "kb#char=0,5"],
    ["libraries"],
    ["stats"],
    ["embed"],
    ["config"],
]


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda argv: " ".join(argv[:2]))
@pytest.mark.parametrize("where", ["before", "after"])
def test_an_unknown_profile_is_refused_by_every_command(db, capsys, argv, where) -> None:
    flag = ["--profile", "nosuch"]
    code, out, err = run(capsys, "--db", db, *(flag + argv if where == "before" else argv + flag))
    assert code == 2, (out, err)
    assert err.startswith("ragspine: error: unknown profile 'nosuch'") and len(err.strip().splitlines()) == 1, err


def test_the_demo_reads_the_profile_too(capsys) -> None:
    code, _, err = run(capsys, "--mode", "economy", "--profile", "nosuch", "demo")
    assert code == 2 and "unknown profile 'nosuch'" in err


def test_ask_runs_on_the_profile(db, capsys, seen, tmp_path) -> None:
    question = "Why did Kestrel's Q3 revenue fall?"
    code, _, err = run(capsys, "--db", db, "ask", question, "--profile", "economy")
    assert code == 2 and "it was built with chunk_chars=480, and this query asks for 1500" in err  # the economy recipe
    assert seen and set(seen) == {"economy"}
    assert run(capsys, "--db", db, "--profile", "economy", "ingest", str(tmp_path / "results.md"), "--library", "eco")[0] == 0
    code, out, err = run(capsys, "--db", db, "ask", question, "--library", "eco", "--json", "--profile", "economy")
    assert code == 0, err
    assert [s["doc_id"] for s in json.loads(out)["sources"]] == ["kestrel/q3-2024-results"]


@pytest.mark.parametrize("argv", [
    ["facts", "list", "--library", "kb"],
    ["metric", "revenue", "--entity", "Kestrel", "--period", "2024Q3", "--library", "kb"],
    ["graph", "peers", "revenue", "--entity", "Kestrel", "--period", "2024Q3", "--library", "kb"],
], ids=lambda argv: argv[0])
def test_fact_commands_run_on_the_profile(db, capsys, seen, argv) -> None:
    code, out, err = run(capsys, "--db", db, "--profile", "economy", *argv)
    assert code in (0, 1), err
    assert seen and set(seen) == {"economy"}
    del seen[:]
    assert run(capsys, "--db", db, *argv)[0] == code  # without the flag: the same answer, no profile chosen
    assert seen and set(seen) == {None}


def test_raptor_runs_on_the_profile(db, capsys, seen, monkeypatch) -> None:
    code, out, err = run(capsys, "--db", db, "raptor", "build", "--profile", "economy")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, (out, err)
    assert "it was built with chunk_chars=480, and this query asks for 1500" in err  # the economy recipe
    assert seen and set(seen) == {"economy"}
    monkeypatch.setenv("RAGSPINE_CHUNK_CHARS", "480")  # a variable overrides its field of the profile:
    monkeypatch.setenv("RAGSPINE_CONTEXTUAL", "none")  # what the library stores matches, economy mode stays
    code, out, err = run(capsys, "--db", db, "raptor", "build", "--profile", "economy")
    assert code == 2 and "RAPTOR needs chunk vectors, and library 'kb' runs in economy mode" in err, (out, err)
    code, out, err = run(capsys, "--db", db, "raptor", "build")
    assert code == 0 and out.startswith("kb: "), err


def test_workflow_preview_shows_the_profile(db, capsys) -> None:
    _, plain, _ = run(capsys, "--db", db, "workflow", "preview")
    code, economy, err = run(capsys, "--db", db, "--profile", "economy", "workflow", "preview")
    assert code == 0, err
    assert economy != plain
