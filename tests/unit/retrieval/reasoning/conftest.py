"""A small library whose lexical index records every query it is asked (the spy proves what
never reached an index), and a deny list naming one competitor."""

from __future__ import annotations

from typing import Any

import pytest

from ragspine.retrieval.lexical.index import InMemoryLexicalIndex
from ragspine.retrieval.link.narrative_link import NarrativeIndexRetriever
from ragspine.retrieval.pipeline import LibraryPipeline
from ragspine.security import SecurityGate
from ragspine.stores.sqlite import SQLiteDatabase

DOCS = {
    "gearbox": ("Gearbox revenue fell in 2023 because supply delays halted gearbox deliveries.", {"region": "north"}),
    "motor": ("Motor revenue rose in 2023 as the motor plant doubled output.", {"region": "south"}),
    "margin": ("The gross margin of the gearbox line narrowed after the price cuts.", {"region": "north"}),
    "weather": ("Rainfall in the northern valley was above average this spring.", {"region": "north"}),
}
SECRET = "xylophonequartz"


class SpyIndex(InMemoryLexicalIndex):
    """Records the tokens of every lexical search."""

    def __init__(self, store: Any) -> None:
        super().__init__(store)
        self.searched: list[list[str]] = []

    def search(self, query_tokens: Any, *args: Any, **kwargs: Any) -> Any:
        self.searched.append(list(query_tokens))
        return super().search(query_tokens, *args, **kwargs)

    def saw(self, word: str) -> bool:
        return any(word.lower() in tokens for tokens in self.searched)


@pytest.fixture
def library():
    database = SQLiteDatabase(":memory:")
    database.init_schema()
    store = database.chunk_store("lib")
    spy = SpyIndex(store)
    pipeline = LibraryPipeline(store, mode="economy", lexical_index=spy)
    for doc_id, (text, meta) in DOCS.items():
        pipeline.ingest_text(doc_id, text, title=doc_id, metadata=meta, source=doc_id)
    pipeline.ingest_text("memo", f"Gearbox revenue board memo {SECRET}.", title="memo", sensitivity="RESTRICTED", source="memo")
    yield pipeline, spy
    database.close()


@pytest.fixture
def exit_(library):
    pipeline, _ = library
    return NarrativeIndexRetriever(pipeline, retry_without_filters=False)


@pytest.fixture
def gate() -> SecurityGate:
    return SecurityGate({"ACME": ["Acme", "艾克米", "アクメ"]})
