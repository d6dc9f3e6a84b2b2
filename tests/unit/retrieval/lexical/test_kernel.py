"""Choosing the in-process index's top-k path (RAGSPINE_LEXICAL_KERNEL): the compiled kernel
when numba is there, numpy otherwise, a clear error when numba is asked for and missing; both
answer the same rankings (see test_index_persist for the bit-for-bit comparisons)."""

from __future__ import annotations

import builtins
import importlib.util

import pytest

from ragspine.config import load_settings
from ragspine.errors import ConfigError, MissingDependencyError
from ragspine.retrieval.lexical import kernel
from ragspine.retrieval.lexical.index import InMemoryLexicalIndex
from ragspine.stores.sqlite import SQLiteDatabase
from tests.helpers import make_chunk


@pytest.fixture
def store():
    db = SQLiteDatabase(":memory:")
    db.init_schema()
    s = db.chunk_store("lib")
    s.replace_many([(f"d{i}", [make_chunk(f"d{i}", 0, f"alpha beta w{i % 7}")]) for i in range(50)])
    yield s
    db.close()


@pytest.fixture
def no_numba(monkeypatch):
    real_import = builtins.__import__

    def refuse(name, *args, **kwargs):
        if name == "numba" or name.startswith("numba."):
            raise ImportError("No module named 'numba'")
        return real_import(name, *args, **kwargs)

    real_find = importlib.util.find_spec
    monkeypatch.setattr(builtins, "__import__", refuse)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "numba" else real_find(name, *a))
    monkeypatch.setattr(kernel, "_compiled", {})


def test_auto_is_numpy_without_numba_and_the_answers_are_the_same(store, no_numba) -> None:
    index = InMemoryLexicalIndex(store)
    assert index.kernel == "numpy"
    index.prune_from = 0
    index.refresh()
    assert index.search(["alpha", "w3"], top_k=5) == index.search(["alpha", "w3"])[:5]
    with pytest.raises(MissingDependencyError, match=r"ragspine\[fast\]"):
        InMemoryLexicalIndex(store, kernel="numba")


@pytest.mark.skipif(not kernel.available(), reason="numba is not installed")
def test_auto_is_the_kernel_with_numba_and_the_setting_reaches_the_index(store, tmp_path) -> None:
    assert InMemoryLexicalIndex(store).kernel == "numba"
    env = {"RAGSPINE_CHUNK_STORE": str(tmp_path / "x.db"), "RAGSPINE_LEXICAL_KERNEL": "numpy"}
    slow = InMemoryLexicalIndex.from_config(store, load_settings(env))
    fast = InMemoryLexicalIndex.from_config(store, load_settings({**env, "RAGSPINE_LEXICAL_KERNEL": "auto"}))
    assert (slow.kernel, fast.kernel) == ("numpy", "numba")
    fast.prune_from = 0  # a small library: take the kernel anyway
    for q in (["alpha"], ["beta", "w3"], ["w6", "w6", "alpha"], ["nothing"]):
        assert fast.search(q, top_k=5) == slow.search(q, top_k=5) == slow.search(q)[:5]


def test_an_unknown_kernel_is_a_config_error(store, tmp_path) -> None:
    with pytest.raises(ConfigError, match="RAGSPINE_LEXICAL_KERNEL"):
        load_settings({"RAGSPINE_CHUNK_STORE": str(tmp_path / "x.db"), "RAGSPINE_LEXICAL_KERNEL": "fortran"})
    with pytest.raises(ConfigError, match="auto, numba or numpy"):
        InMemoryLexicalIndex(store, kernel="fortran")


@pytest.mark.skipif(not kernel.available(), reason="numba is not installed")
def test_the_kernel_reads_base_and_later_postings_and_skips_retired_rows(store) -> None:
    """The kernel walks a token's base postings, then those written since the base, computing
    each term on the fly; retired rows are masked; the answers are the reference's to the bit."""
    index = InMemoryLexicalIndex(store, kernel="numba")
    index.prune_from = 0
    index.refresh()
    reference = InMemoryLexicalIndex(store, kernel="numpy")
    store.replace_many([(f"late{i}", [make_chunk(f"late{i}", 0, f"alpha alpha w{i % 5} gamma")]) for i in range(30)])
    store.replace_many([(f"d{i}", []) for i in range(0, 50, 3)])  # retired: dead rows until a merge
    index.refresh()
    reference.refresh()
    assert index._segments and index._dead_rows  # later postings and retired rows, not merged yet
    for q in (["alpha"], ["alpha", "gamma"], ["w3", "alpha", "w3"], ["beta", "gamma"], ["nothing"]):
        for k in (1, 3, 10, 100):
            assert index.search(q, top_k=k) == reference.search(q)[:k], (q, k)
