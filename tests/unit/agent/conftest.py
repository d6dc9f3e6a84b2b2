"""Fakes for the agent's unit tests: a fact store with a few facts, a retriever returning fixed
snippets (and recording what it was asked), and a gate refusing one entity."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from ragspine.agent import Agent, NarrativePath, StructuredPath
from ragspine.retrieval.link.narrative_link import Retrieval
from ragspine.stores.sqlite import SQLiteDatabase
from ragspine.structured import StructuredChannel, ingest_facts, make_fact_store

FACTS = [
    {"metric": "revenue", "entity": "Kestrel", "period": "2024Q3", "value": "182", "unit": "EUR_M",
     "source_doc_id": "kestrel/q3-2024-results", "source_locator": "paragraph 1", "valid_as_of": "2024-10-30"},
    {"metric": "net profit", "entity": "Kestrel", "period": "2024Q3", "value": "-3", "unit": "EUR_M", "sensitivity": "RESTRICTED",
     "source_doc_id": "kestrel/board-memo", "source_locator": "paragraph 2", "valid_as_of": "2024-10-20"},
]
RESULTS = {"text": "Revenue fell because K2 shipments slipped by six weeks; order intake in Germany fell by a fifth.",
           "chunk_id": "c-results", "doc_id": "kestrel/q3-2024-results", "title": "Q3 results", "library_id": "lib",
           "source_locator": "results.md#char=0,95", "sensitivity": "PUBLIC"}
GROSS = {"text": "Gross margin held at 41 percent and operating profit was 57 million euros.", "chunk_id": "c-margin",
         "doc_id": "kestrel/q3-2024-results", "title": "Q3 results", "library_id": "lib",
         "source_locator": "results.md#char=96,170", "sensitivity": "INTERNAL"}
MEMO = {"text": "Board only: xylophonequartz reversal of 9 million euros.", "chunk_id": "c-memo", "doc_id": "kestrel/board-memo",
        "title": "Board memo", "library_id": "lib", "source_locator": "memo.md#char=0,60", "sensitivity": "restricted"}


@dataclass
class FakeRetriever:
    snippets: list[dict[str, Any]]
    queries: list[str] = field(default_factory=list)

    def search(self, query: str, *, filters: Any = None, top_k: int = 50) -> Retrieval:
        self.queries.append(query)
        return Retrieval([dict(s) for s in self.snippets[:top_k]])

    def retrieve(self, query: str, *, filters: Any = None, top_k: int = 50) -> list[dict[str, Any]]:
        return self.search(query, top_k=top_k).snippets


@dataclass(frozen=True)
class Decision:
    allowed: bool
    entity: str | None = None


@dataclass
class FakeGate:
    denied: str = "acme"
    checked: list[str] = field(default_factory=list)

    def check(self, text: str) -> Decision:
        self.checked.append(text)
        return Decision(False, "ACME") if self.denied in text.lower() else Decision(True)


@pytest.fixture
def fact_store(tmp_path):
    db = SQLiteDatabase(tmp_path / "facts.db")
    db.init_schema()
    store = make_fact_store("lib", database=db)
    ingest_facts(store, FACTS)
    yield store
    db.close()


@pytest.fixture
def make_agent(fact_store):
    def make(snippets=(RESULTS, GROSS), *, provider=None, gate=None, router=None, store=fact_store) -> tuple[Agent, FakeRetriever]:
        retriever = FakeRetriever(list(snippets))
        agent = Agent(structured=StructuredPath({"lib": StructuredChannel(store)}),
                      narrative=NarrativePath(retriever, provider=provider, top_k=3), gate=gate, router=router)
        return agent, retriever

    return make
