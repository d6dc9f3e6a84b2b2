"""The GraphStore conformance pack, on both backends (in-process and networkx), with the
inverse cases: a store that writes half a batch, and one that answers in insertion order, fail it."""

from __future__ import annotations

import pytest

from ragspine.graph import build_relation_graph, dump_graph
from ragspine.graph.base import Edge, GraphError
from ragspine.graph.build import make_graph_store
from ragspine.graph.memory import InProcessGraphStore
from ragspine.structured import Glossary
from ragspine.testing import GraphStoreConformance
from ragspine.testing.graph_store import assert_answers_are_ordered_copies, assert_batches_are_atomic
from tests.helpers import needs

BACKENDS = ["memory", "networkx"]


@pytest.fixture(params=BACKENDS)
def graph_store(request):
    if request.param == "networkx":
        needs("networkx")
    store = make_graph_store(request.param)
    yield store
    store.close()


class TestGraphStores(GraphStoreConformance):
    pass


def test_both_backends_build_the_same_graph_byte_for_byte() -> None:
    needs("networkx")
    glossary = Glossary.default()
    dumps = {name: dump_graph(build_relation_graph(glossary, store=make_graph_store(name))) for name in BACKENDS}
    assert dumps["memory"] == dumps["networkx"] and '"subsidiary_of"' in dumps["memory"]


# -- inverse cases: broken stores must fail the invariants ------------------------------------------
class HalfWritingStore(InProcessGraphStore):
    """Writes each edge as it checks it: a refused batch leaves its first edges behind."""

    def add_edges(self, edges):  # type: ignore[no-untyped-def]
        added = 0
        for edge in edges:
            added += super().add_edges([edge])
        return added


class InsertionOrderStore(InProcessGraphStore):
    """Answers in insertion order, not sorted."""

    def edges(self, **filters):  # type: ignore[no-untyped-def]
        return [e for e in self._edges if e in set(super().edges(**filters))]

    def nodes(self, *, kind=None):  # type: ignore[no-untyped-def]
        return [n for n in self._nodes.values() if kind is None or n.kind == kind]


def test_a_store_writing_half_a_batch_fails_atomicity() -> None:
    with pytest.raises(AssertionError, match="refused edge batch"):
        assert_batches_are_atomic(HalfWritingStore())


def test_a_store_answering_in_insertion_order_fails_ordering() -> None:
    with pytest.raises(AssertionError):
        assert_answers_are_ordered_copies(InsertionOrderStore())


def test_an_edge_is_checked_before_any_store_sees_it() -> None:
    with pytest.raises(GraphError, match="every edge is cited"):
        Edge("entity:A", "subsidiary_of", "entity:B", "", "").check()
