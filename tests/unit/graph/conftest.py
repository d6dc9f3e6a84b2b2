"""A fact store holding :func:`ragspine.testing.graph_utilities.sample_facts`, its channel and graph."""

from __future__ import annotations

import pytest

from ragspine.graph import build_relation_graph
from ragspine.stores.sqlite import SQLiteDatabase
from ragspine.structured import Glossary, StructuredChannel, make_fact_store
from ragspine.testing.graph_utilities import sample_facts


@pytest.fixture
def facts(tmp_path):
    db = SQLiteDatabase(tmp_path / "kb.db")
    store = make_fact_store("lib", database=db)
    store.init_schema()
    store.replace_facts(sample_facts())
    yield store
    db.close()


@pytest.fixture
def channel(facts):
    return StructuredChannel(facts, Glossary.default())


@pytest.fixture
def graph(facts):
    return build_relation_graph(Glossary.default(), facts=facts.iter_facts())
