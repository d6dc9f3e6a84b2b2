"""A fact read from a document a viewer may not read is, to that viewer, a missing fact."""

from __future__ import annotations

from decimal import Decimal

from ragspine.security.principals import ACL, ANONYMOUS, EVERYTHING, Principal, Viewer
from ragspine.stores.sqlite.chunk_store import SQLiteChunkStore
from ragspine.stores.sqlite.database import SQLiteDatabase
from ragspine.stores.sqlite.fact_store import SQLiteFactStore
from ragspine.structured.base import Fact, SourceFacts
from ragspine.structured.channel import StructuredChannel


def test_a_hidden_source_answers_not_found_exactly_as_a_missing_fact(tmp_path) -> None:
    db = SQLiteDatabase(str(tmp_path / "f.db"))
    chunks = SQLiteChunkStore(db, library_id="fin")
    facts = SQLiteFactStore(db, library_id="fin")
    facts.replace_facts([SourceFacts("kestrel/q3", [Fact("revenue", "KESTREL", "2024Q3", Decimal("182"), "kestrel/q3", "p. 1", "2024-10-01", "EUR_M")])])
    channel = StructuredChannel(facts, acls=chunks)
    board, hr = Viewer(Principal.of("bob", ["board"])), Viewer(Principal.of("ann", ["hr"]))
    for viewer in (None, ANONYMOUS, board, hr, EVERYTHING):
        assert channel.query_metric("revenue", "Kestrel", "2024Q3", viewer=viewer).found
    chunks.set_acls({"kestrel/q3": ACL.parse("group:board")}, by="admin")
    assert channel.query_metric("revenue", "Kestrel", "2024Q3", viewer=board).found
    hidden = channel.query_metric("revenue", "Kestrel", "2024Q3", viewer=hr)
    missing = channel.query_metric("revenue", "Kestrel", "2023Q3", viewer=board)
    assert not hidden.found and hidden == missing  # the same value: status, text, language, no fact fields
    assert not channel.query_metric("revenue", "Kestrel", "2024Q3", viewer=ANONYMOUS).found
    assert channel.query_metric("revenue", "Kestrel", "2024Q3").found  # no viewer: the library's own use
