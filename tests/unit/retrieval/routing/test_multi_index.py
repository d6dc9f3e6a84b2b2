"""MultiIndexRetriever: routing with fallback, per-library search, RRF fusion, library_id stamps."""

from __future__ import annotations

from typing import Any

import pytest

from ragspine.retrieval.filtering.filters import parse_filter
from ragspine.retrieval.fusion import rrf_fuse
from ragspine.retrieval.link.narrative_link import NarrativeIndexRetriever, Retrieval
from ragspine.retrieval.narrative_index import NarrativeIndex
from ragspine.retrieval.routing.multi_index import MultiIndexRetriever
from ragspine.retrieval.routing.routers import KeywordLibraryRouter


def snip(chunk_id: str, text: str = "", **extra: Any) -> dict[str, Any]:
    return {
        "chunk_id": chunk_id,
        "doc_id": chunk_id.split("#")[0],
        "text": text or f"text {chunk_id}",
        "sensitivity": "INTERNAL",
        "library_id": "",
        "scores": {"bm25": 1.0, "vector": 0.0, "fused": 0.5},
        **extra,
    }


class Fixed:
    """A library retriever answering a fixed list; records its calls."""

    def __init__(self, snippets: list[dict[str, Any]]) -> None:
        self.snippets = snippets
        self.calls: list[tuple[str, Any, int]] = []

    def search(self, query, *, filters=None, top_k=50):
        self.calls.append((query, filters, top_k))
        return Retrieval([dict(s) for s in self.snippets[:top_k]])


class Router:
    def __init__(self, answer=None, error=None):
        self.answer = answer
        self.error = error
        self.seen = []

    def route(self, query, libraries):
        self.seen.append([lib.library_id for lib in libraries])
        if self.error:
            raise self.error
        return self.answer


def test_needs_at_least_one_library():
    with pytest.raises(ValueError):
        MultiIndexRetriever({})


def test_without_router_every_library_is_searched_and_stamped():
    a, b = Fixed([snip("x#0"), snip("y#0")]), Fixed([snip("z#0")])
    multi = MultiIndexRetriever({"A": a, "B": b})
    out = multi.retrieve("q", filters={"topic": "t"}, top_k=7)
    wanted = parse_filter({"topic": "t"})
    assert a.calls == [("q", wanted, 7)] and b.calls == [("q", wanted, 7)]
    assert {(s["library_id"], s["chunk_id"]) for s in out} == {("A", "x#0"), ("A", "y#0"), ("B", "z#0")}


def test_fusion_is_rrf_over_the_libraries_with_deterministic_ties():
    a, b = Fixed([snip("x#0"), snip("y#0")]), Fixed([snip("z#0"), snip("w#0")])
    out = MultiIndexRetriever({"A": a, "B": b}, rrf_k=60).retrieve("q")
    expected = rrf_fuse([[("A", "x#0"), ("A", "y#0")], [("B", "z#0"), ("B", "w#0")]], k=60)
    assert [(s["library_id"], s["chunk_id"]) for s in out] == [("A", "x#0"), ("B", "z#0"), ("A", "y#0"), ("B", "w#0")]
    for s in out:
        assert s["scores"]["fused"] == pytest.approx(expected[(s["library_id"], s["chunk_id"])])
        assert s["scores"]["bm25"] == 1.0  # the library's own scores are kept


def test_top_k_applies_to_the_fused_list():
    a, b = Fixed([snip(f"a{i}#0") for i in range(5)]), Fixed([snip(f"b{i}#0") for i in range(5)])
    assert len(MultiIndexRetriever({"A": a, "B": b}).retrieve("q", top_k=3)) == 3


def test_equal_chunk_ids_in_two_libraries_stay_apart():
    a, b = Fixed([snip("same#0", "alpha text")]), Fixed([snip("same#0", "beta text")])
    out = MultiIndexRetriever({"A": a, "B": b}).retrieve("q")
    assert sorted((s["library_id"], s["text"]) for s in out) == [("A", "alpha text"), ("B", "beta text")]


def test_router_choice_is_honoured_in_routing_order():
    a, b, c = Fixed([snip("a#0")]), Fixed([snip("b#0")]), Fixed([snip("c#0")])
    router = Router(["C", "A", "C"])
    multi = MultiIndexRetriever({"A": a, "B": b, "C": c}, router=router, descriptions={"A": "alpha"})
    assert multi.route("q") == ["C", "A"]
    out = multi.retrieve("q")
    assert {s["library_id"] for s in out} == {"A", "C"}
    assert b.calls == []
    assert router.seen[0] == ["A", "B", "C"]
    assert [lib.description for lib in multi.libraries] == ["alpha", "", ""]


@pytest.mark.parametrize(
    "router",
    [Router(error=RuntimeError("down")), Router([]), Router(None), Router(["nope"]), Router("AB"), Router(7),
     Router([["A"]])],
    ids=["raises", "empty", "none", "unknown", "unknown-string", "not-a-list", "unhashable"],
)
def test_routing_failure_or_empty_answer_searches_everything(router):
    a, b = Fixed([snip("a#0")]), Fixed([snip("b#0")])
    multi = MultiIndexRetriever({"A": a, "B": b}, router=router)
    assert multi.route("q") == ["A", "B"]
    assert {s["library_id"] for s in multi.retrieve("q")} == {"A", "B"}


def test_a_bare_string_answer_is_one_library_id_not_its_characters():
    a, b = Fixed([snip("a#0")]), Fixed([snip("b#0")])
    assert MultiIndexRetriever({"A": a, "B": b}, router=Router("B")).route("q") == ["B"]
    assert MultiIndexRetriever({"A": a, "B": b}, router=Router("BA")).route("q") == ["A", "B"]


def test_the_stamp_overrides_what_a_library_claims():
    liar = Fixed([snip("x#0", library_id="B")])
    out = MultiIndexRetriever({"A": liar}).retrieve("q")
    assert out[0]["library_id"] == "A"


def test_snippets_are_copies():
    source = snip("x#0")
    lib = Fixed([source])
    out = MultiIndexRetriever({"A": lib}).retrieve("q")
    out[0]["text"] = "changed"
    assert lib.snippets[0]["text"] == "text x#0"


def test_over_real_libraries_with_the_keyword_router(sqlite_db):
    docs = {"finance": "revenue fell in the third quarter", "support": "warranty claims rose in the third quarter"}
    retrievers = {}
    for lib, text in docs.items():
        index = NarrativeIndex(sqlite_db.chunk_store(lib))
        index.ingest_text("doc", text)  # the same doc_id (and chunk_id) in both libraries
        retrievers[lib] = NarrativeIndexRetriever(index)
    multi = MultiIndexRetriever(
        retrievers, router=KeywordLibraryRouter(),
        descriptions={"finance": "revenue and results", "support": "warranty and claims"},
    )
    assert [(s["library_id"], s["text"]) for s in multi.retrieve("warranty claims third quarter")] == [
        ("support", docs["support"])
    ]
    both = multi.retrieve("third quarter")  # no description overlap: every library
    assert sorted(s["library_id"] for s in both) == ["finance", "support"]
    assert all(s["chunk_id"] == "doc#0" for s in both)


def scored(chunk_id: str, bm25: float) -> dict[str, Any]:
    return snip(chunk_id, scores={"bm25": bm25, "vector": 0.0, "fused": 0.5})


def test_confidence_fusion_keeps_a_weak_librarys_best_hit_below_a_strong_librarys_hits():
    cmake = Fixed([scored("cmake-install#0", 12.6), scored("cmake-build#0", 11.0), scored("cmake-ctest#0", 9.0)])
    zstd = Fixed([scored("zstd-readme#0", 6.6), scored("zstd-api#0", 3.0)])
    plain = MultiIndexRetriever({"cmake": cmake, "zstd": zstd}, library_fusion="rrf").retrieve("how do I install with cmake")
    assert [s["chunk_id"] for s in plain][:2] == ["cmake-install#0", "zstd-readme#0"]  # interleaved: rank 1 of each alike
    weighted = MultiIndexRetriever({"cmake": cmake, "zstd": zstd}, library_fusion="confidence").retrieve("how do I install with cmake")
    assert [s["chunk_id"] for s in weighted][:3] == ["cmake-install#0", "cmake-build#0", "cmake-ctest#0"]
    # by hand: cmake weighs 1, zstd 6.6 / 12.6; zstd's rank 1 then scores below cmake's rank 3
    assert weighted[3]["scores"]["fused"] == pytest.approx((6.6 / 12.6) / 61)
    assert {s["library_id"] for s in weighted} == {"cmake", "zstd"}  # nothing dropped, provenance kept


def test_confidence_fusion_without_bm25_scores_is_plain_rrf():
    a, b = Fixed([scored("x#0", 0.0)]), Fixed([scored("y#0", 0.0)])
    plain = MultiIndexRetriever({"A": a, "B": b}, library_fusion="rrf").retrieve("q")
    assert MultiIndexRetriever({"A": a, "B": b}).retrieve("q") == plain  # confidence is the default
    with pytest.raises(ValueError, match="library_fusion"):
        MultiIndexRetriever({"A": a}, library_fusion="magic")
