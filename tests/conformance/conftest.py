"""Fixtures and reusable checkers shared by the ADR 0016 conformance packs.

Every pack states its invariant as a plain function raising ``AssertionError`` and proves,
with a deliberately broken implementation, that the function can fail (no vacuous pass).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

import pytest

from ragspine.retrieval.lexical.index import InMemoryLexicalIndex
from ragspine.retrieval.narrative_index import NarrativeIndex
from ragspine.retrieval.sensitivity import is_restricted
from ragspine.stores.sqlite import SQLiteDatabase
from ragspine.testing.llm import ScriptedLLMProvider
from tests.helpers import needs

#: The query every pack asks; the RESTRICTED document is its best lexical match.
QUERY = "gearbox supply delays"

#: Words that occur only in RESTRICTED text / window text: a leak is a substring match.
SECRET_WORD = "xylophonequartz"
SECRET_WINDOW_WORD = "wintermarrowsecret"

PROVENANCE_FIELDS = (
    "text",
    "doc_id",
    "title",
    "source_locator",
    "chunk_id",
    "metadata",
    "sensitivity",
    "library_id",
    "scores",
)
SCORE_FIELDS = ("bm25", "vector", "fused")


@dataclass(frozen=True)
class Doc:
    doc_id: str
    text: str
    metadata: Mapping[str, Any] = field(default_factory=dict)
    sensitivity: str = "INTERNAL"
    title: str = ""


def library_a_docs(restricted: str = "RESTRICTED") -> list[Doc]:
    """Six open documents (varied metadata, one without ``year``, one with ``year: null``, one
    with a string ``year``) and one RESTRICTED document that is the best match for QUERY."""
    return [
        Doc("a/north-2022", "Gearbox supply delays slowed the northern plant in 2022.",
            {"year": 2022, "region": "north", "period": "2022-Q1", "audited": True}),
        Doc("a/south-2023", "Supply of motors was steady; gearbox delays were minor in the south.",
            {"year": 2023, "region": "south", "period": "2023-Q2", "audited": False}),
        Doc("a/east-2024", "The east plant saw delays in gearbox castings and supply of bearings.",
            {"year": 2024, "region": "east", "period": "2024-Q3", "audited": True}),
        Doc("a/west-undated", "West region gearbox supply notes without a year field.",
            {"region": "west", "period": "2021-Q4"}),
        Doc("a/null-year", "Gearbox maintenance schedule and supply planning, year unknown.",
            {"year": None, "region": "north"}),
        Doc("a/string-year", "Delays in supply contracts for the gearbox line were renegotiated.",
            {"year": "2023", "region": "south", "period": "2023-Q4"}),
        Doc("a/board-memo",
            f"Gearbox supply delays: gearbox supply delays caused the gearbox supply delays. "
            f"{SECRET_WORD} board only.",
            {"year": 2023, "region": "north", "period": "2023-Q3", "classification": "board-only"},
            sensitivity=restricted, title="Board memo"),
    ]


def library_b_docs(restricted: str = "RESTRICTED") -> list[Doc]:
    return [
        Doc("b/warranty", "Warranty claims on the gearbox rose after supply delays in 2023.",
            {"year": 2023, "region": "south"}),
        Doc("b/service", "Service claims were handled within five days; gearbox repairs dominated.",
            {"year": 2024, "region": "east"}),
        Doc("b/board-claims",
            f"Gearbox supply delays gearbox claims gearbox supply delays {SECRET_WORD}.",
            {"year": 2023, "region": "south", "classification": "board-only"},
            sensitivity=restricted, title="Board claims memo"),
    ]


#: The same doc_id (hence the same chunk_id) in both libraries, with different text.
SHARED_DOC_ID = "shared/overview"
SHARED_TEXT = {
    "lib-a": "Overview of gearbox supply for the plants and claims.",
    "lib-b": "Overview of claims handling: gearbox warranty and supply notes.",
}

DESCRIPTIONS = {
    "lib-a": "northern plant operations",
    "lib-b": "warranty claims service",
}


def ingest(index: NarrativeIndex, docs: Iterable[Doc]) -> dict[str, str]:
    """Ingest ``docs`` (source = doc_id) and return ``{source: text}`` for locator checks."""
    sources = {}
    for doc in docs:
        index.ingest_text(
            doc.doc_id,
            doc.text,
            title=doc.title or doc.doc_id,
            metadata=doc.metadata,
            sensitivity=doc.sensitivity,
            source=doc.doc_id,
        )
        sources[doc.doc_id] = doc.text
    return sources


def exposed_index(store: Any, **kwargs: Any) -> NarrativeIndex:
    """A pipeline whose lexical index *also* holds RESTRICTED chunks — the default index never
    does, so nothing RESTRICTED would reach the exits. The exit packs run on this one: the
    RESTRICTED results do reach both exits, and must be dropped there."""
    return NarrativeIndex(store, lexical_index=InMemoryLexicalIndex(store, include_restricted=True), **kwargs)


def corpus_of(index: NarrativeIndex) -> dict[str, Any]:
    """``{chunk_id: StoredChunk}`` of the library's active chunks."""
    return {c.chunk_id: c for c in index.store.iter_chunks()}


# -- fakes -----------------------------------------------------------------------------------
def RecordingProvider(answer: str = "1, 0") -> ScriptedLLMProvider:
    """A fake LLM provider: records every prompt, answers with a fixed text."""
    return ScriptedLLMProvider(answer)


class RecordingJudge:
    """A fake ListwiseJudge: records every candidate list, reverses the order."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def judge(self, query: str, candidates: list[str]) -> list[int]:
        self.calls.append(list(candidates))
        return list(reversed(range(len(candidates))))


# -- reusable checkers -----------------------------------------------------------------------
_LOCATOR = re.compile(r"^(?P<source>.*)#char=(?P<start>\d+),(?P<end>\d+)$")


def assert_provenance(snippets: list[dict[str, Any]], sources: Mapping[str, str]) -> None:
    """Every snippet carries the provenance fields and its text is ``source[start:end]``."""
    for s in snippets:
        for name in PROVENANCE_FIELDS:
            assert name in s, f"snippet {s.get('chunk_id')!r} lacks {name!r}"
        assert s["text"] and s["doc_id"] and s["chunk_id"] and s["library_id"], s
        assert isinstance(s["metadata"], dict)
        assert set(SCORE_FIELDS) <= set(s["scores"]), s["scores"]
        for key in SCORE_FIELDS:
            assert isinstance(s["scores"][key], float)
        match = _LOCATOR.match(s["source_locator"])
        assert match, f"bad locator {s['source_locator']!r}"
        source = sources[match["source"]]
        start, end = int(match["start"]), int(match["end"])
        assert source[start:end] == s["text"], (s["source_locator"], s["text"])


def assert_no_restricted(
    snippets: Iterable[Mapping[str, Any]],
    prompts: Iterable[str] = (),
    secrets: Iterable[str] = (SECRET_WORD, SECRET_WINDOW_WORD),
) -> None:
    """No RESTRICTED snippet, and no RESTRICTED text/window text in any snippet or prompt."""
    secrets = [w.lower() for w in secrets]
    for s in snippets:
        assert not is_restricted(s.get("sensitivity", "")), f"RESTRICTED snippet {s.get('chunk_id')!r}"
        dumped = json.dumps(s, ensure_ascii=False).lower()
        for word in secrets:
            assert word not in dumped, f"RESTRICTED text {word!r} in snippet {s.get('chunk_id')!r}"
    for prompt in prompts:
        for word in secrets:
            assert word not in prompt.lower(), f"RESTRICTED text {word!r} reached a prompt"


#: the chunk-store backends every chunk-store pack runs on (tests/backends.py provides the servers)
CHUNK_BACKENDS = ("sqlite", "postgresql18", "postgresql15")


def open_chunk_database(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """A migrated chunk database of ``kind``; opening it again in the same test (same
    ``request`` and ``tmp_path``) opens the same file or schema."""
    if kind == "sqlite":
        database: Any = SQLiteDatabase(tmp_path / "chunks.db")
    else:
        needs("sqlalchemy", "psycopg")
        from ragspine.stores.postgres.database import PostgresDatabase

        url, schema = request.getfixturevalue("pg_schema" if kind == "postgresql18" else "pg15_schema")
        database = PostgresDatabase(url, schema=schema)
    database.init_schema()
    return database


@pytest.fixture(params=CHUNK_BACKENDS)
def chunk_backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def chunk_db(chunk_backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """A chunk database (the catalog of libraries and their chunk stores) on each backend."""
    database = open_chunk_database(chunk_backend, request, tmp_path)
    yield database
    database.close()


@pytest.fixture
def db():
    """An in-memory SQLite database (the file-backed path is exercised through ``Stack``)."""
    database = SQLiteDatabase(":memory:")
    database.init_schema()
    yield database
    database.close()


@pytest.fixture
def settings_env(tmp_path: Path):
    """Builds a ``load_settings`` environ for a Stack whose store lives in ``tmp_path``."""

    def make(mode: str, embedding: str = "deterministic", **extra: str) -> dict[str, str]:
        env = {
            "RAGSPINE_CHUNK_STORE": str(tmp_path / "stack.db"),
            "RAGSPINE_EMBEDDING": embedding,
            "RAGSPINE_RETRIEVAL_MODE": mode,
            "RAGSPINE_CACHE_DIR": str(tmp_path / "cache"),
        }
        env.update(extra)
        return env

    return make
