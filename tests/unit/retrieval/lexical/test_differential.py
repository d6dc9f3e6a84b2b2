"""Every lexical layout against the reference BM25 over seeded random histories
(``ragspine.testing.lexical_history``): writes one document at a time with queries between
them, bulk batches, re-ingests, retirements, RESTRICTED documents, a library deleted and
written again, saves, reopened connections, child processes, concurrent writers — every
score bit for bit, every ranking identical, after every step.

The fast run (default suite) shrinks the in-process index's thresholds so a few thousand
chunks cross each of them (pruned top-k, rebuild batches, segment collapse, the kernel's
arena, the token-id cache); the merge threshold (1,000 rows) is crossed at its real value.
The slow run (``RAGSPINE_TEST_DIFFERENTIAL_CHUNKS=100000``, set by ``.ci/run``) grows each
library to that size with every threshold at its real value."""

from __future__ import annotations

import os

import pytest

from ragspine.retrieval.lexical import index as index_module
from ragspine.retrieval.lexical.index import InMemoryLexicalIndex
from ragspine.testing.lexical_history import HistoryPlan, run_history
from ragspine.testing.lexical_layouts import LexicalLayout, postgres_layout, sqlite_layout
from tests.helpers import needs

SLOW_CHUNKS = int(os.environ.get("RAGSPINE_TEST_DIFFERENTIAL_CHUNKS") or 0)
LAYOUTS = ["memory-sqlite-auto", "memory-sqlite-numpy", "memory-postgres", "postgres-postings"]
#: the warm layout is the in-process index and the postings, each run at full size above
FAST_LAYOUTS = [*LAYOUTS, "warm"]
FAST = HistoryPlan(seed=20261205, chunks=3_000, singles=240, batch_docs=120)


def _layout(name: str, request: pytest.FixtureRequest, tmp_path) -> LexicalLayout:
    if name.startswith("memory-sqlite"):
        return sqlite_layout(str(tmp_path / "chunks.db"), kernel=name.rsplit("-", 1)[1])
    needs("sqlalchemy")
    url, schema = request.getfixturevalue("pg15_schema")
    if name in ("memory-postgres", "warm"):
        return postgres_layout(url, schema, index=name.split("-")[0], persist_root=str(tmp_path / "lexical"))
    return postgres_layout(url, schema, index="postgres")


@pytest.fixture
def merges(monkeypatch) -> list[int]:
    """Merges of every in-process index in the test (each appends the rows it merged)."""
    done: list[int] = []
    original = InMemoryLexicalIndex._merge

    def counted(self: InMemoryLexicalIndex) -> None:
        done.append(len(self._lengths))
        original(self)

    monkeypatch.setattr(InMemoryLexicalIndex, "_merge", counted)
    return done


@pytest.fixture
def small_thresholds(monkeypatch) -> None:
    monkeypatch.setattr(InMemoryLexicalIndex, "prune_from", 300)  # pruned top-k (numpy MaxScore, the kernel)
    monkeypatch.setattr(index_module, "_ADD_BATCH", 700)  # a rebuild tokenizes in several segments
    monkeypatch.setattr(index_module, "_MAX_SEGMENTS", 4)  # single writes' segments collapse between merges
    monkeypatch.setattr(index_module, "_TERMS_CACHE", 4_000)  # the per-token caches start over
    monkeypatch.setattr(index_module, "_TID_CACHE", 64)


@pytest.mark.parametrize("name", FAST_LAYOUTS)
def test_random_history_matches_the_reference_at_every_step(name, request, tmp_path, small_thresholds, merges) -> None:
    report = run_history(_layout(name, request, tmp_path), FAST)
    assert report.peak_chunks >= FAST.chunks
    assert report.compared >= 150
    assert len(report.children) == FAST.restarts
    if name.startswith("memory"):
        assert sum(1 for rows in merges if rows > 1_000) >= 3, merges  # merges past the reported threshold
        assert "reopened (built)" in report.steps  # a rebuild at full size, in several tokenizing batches


@pytest.mark.slow
@pytest.mark.scale
@pytest.mark.skipif(not SLOW_CHUNKS, reason="the slow run: set RAGSPINE_TEST_DIFFERENTIAL_CHUNKS=100000 (.ci/run does)")
@pytest.mark.parametrize("name", LAYOUTS)
def test_random_history_at_scale_matches_the_reference(name, request, tmp_path, merges, capsys) -> None:
    plan = HistoryPlan(seed=7, chunks=SLOW_CHUNKS, singles=400, batch_docs=max(150, SLOW_CHUNKS // 40), queries=3)
    with capsys.disabled():
        report = run_history(_layout(name, request, tmp_path), plan, log=lambda m: print(f"  {m}", flush=True))
    assert report.peak_chunks >= SLOW_CHUNKS
    if name.startswith("memory"):
        assert max(merges) >= SLOW_CHUNKS and "reopened (built)" in report.steps
