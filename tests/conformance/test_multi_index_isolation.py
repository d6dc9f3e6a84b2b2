"""ADR 0016 pack 2: multi-library routing keeps libraries apart and provenance intact — per
router, with a leaky base retriever that must make the checker fail."""

from __future__ import annotations

from typing import Any, Callable, Mapping

import pytest

from ragspine.retrieval.link.narrative_link import NarrativeIndexRetriever, Retrieval, to_snippet
from ragspine.retrieval.narrative_index import NarrativeIndex
from ragspine.retrieval.routing.multi_index import MultiIndexRetriever
from ragspine.retrieval.routing.routers import make_library_router
from ragspine.retrieval.sensitivity import is_restricted
from tests.conformance.conftest import (
    DESCRIPTIONS,
    QUERY,
    SHARED_DOC_ID,
    SHARED_TEXT,
    RecordingProvider,
    assert_no_restricted,
    corpus_of,
    exposed_index,
    ingest,
    library_a_docs,
    library_b_docs,
)

LIBS = ("lib-a", "lib-b")
#: Both libraries hold chunks matching it; only lib-b's description ("claims") does.
B_QUERY = "gearbox claims"


class SpyRetriever:
    """Wraps a library's retriever and records that it was searched."""

    def __init__(self, inner: Any, log: list[str], library_id: str) -> None:
        self.inner = inner
        self.log = log
        self.library_id = library_id

    def retrieve(self, query: str, *, filters: Any = None, top_k: int = 50) -> list[dict[str, Any]]:
        self.log.append(self.library_id)
        return self.inner.retrieve(query, filters=filters, top_k=top_k)

    def search(self, query: str, *, filters: Any = None, top_k: int = 50) -> Any:
        self.log.append(self.library_id)
        return self.inner.search(query, filters=filters, top_k=top_k)


class RaisingRouter:
    def route(self, query, libraries):
        raise RuntimeError("router is down")


class UnknownIdsRouter:
    def route(self, query, libraries):
        return ["lib-zzz", "", "LIB-A"]


class NoneRouter:
    def route(self, query, libraries):
        return None


def _routers() -> dict[str, tuple[Callable[[], Any], set[str]]]:
    """name -> (router factory, libraries searched for B_QUERY)."""
    return {
        "none": (lambda: make_library_router("none"), set(LIBS)),
        "keyword": (lambda: make_library_router("keyword"), {"lib-b"}),
        "llm": (lambda: make_library_router("llm", provider=RecordingProvider('["lib-b"]')), {"lib-b"}),
        "llm-unknown-ids": (lambda: make_library_router("llm", provider=RecordingProvider('["nope"]')), set(LIBS)),
        "llm-garbage": (lambda: make_library_router("llm", provider=RecordingProvider("no idea")), set(LIBS)),
        "raising": (RaisingRouter, set(LIBS)),
        "unknown-ids": (UnknownIdsRouter, set(LIBS)),
        "returns-none": (NoneRouter, set(LIBS)),
    }


ROUTERS = _routers()


@pytest.fixture(scope="module")
def libraries():
    """lib-a and lib-b in one database, each with a RESTRICTED best match and a chunk whose
    chunk_id equals one in the other library."""
    from ragspine.stores.sqlite import SQLiteDatabase
    from tests.conformance.conftest import Doc

    db = SQLiteDatabase(":memory:")
    db.init_schema()
    indexes = {}
    for lib, docs in (("lib-a", library_a_docs()), ("lib-b", library_b_docs())):
        db.ensure_library(lib, DESCRIPTIONS[lib])
        idx = exposed_index(db.chunk_store(lib))
        ingest(idx, docs + [Doc(SHARED_DOC_ID, SHARED_TEXT[lib])])
        indexes[lib] = idx
    yield indexes
    db.close()


@pytest.fixture(scope="module")
def corpora(libraries) -> dict[str, dict[str, Any]]:
    return {lib: corpus_of(idx) for lib, idx in libraries.items()}


def build(libraries, router: Any, log: list[str], wrap: Mapping[str, Callable[[Any], Any]] | None = None):
    retrievers = {}
    for lib, idx in libraries.items():
        base: Any = NarrativeIndexRetriever(idx)
        if wrap and lib in wrap:
            base = wrap[lib](base)
        retrievers[lib] = SpyRetriever(base, log, lib)
    return MultiIndexRetriever(retrievers, router=router, descriptions=DESCRIPTIONS)


# -- the reusable checker -------------------------------------------------------------------
def check_isolation(
    snippets: list[dict[str, Any]],
    searched: set[str],
    corpora: Mapping[str, Mapping[str, Any]],
    *,
    asked: set[str] | None = None,
) -> None:
    """Every snippet comes from a searched (and asked) library whose corpus holds exactly that
    chunk, is stamped with that library, is not RESTRICTED, and appears once."""
    allowed = searched if asked is None else searched & asked
    keys = set()
    for s in snippets:
        lib = s.get("library_id")
        assert lib in allowed, f"snippet {s['chunk_id']!r} from {lib!r}, searched only {sorted(allowed)}"
        chunk = corpora[lib].get(s["chunk_id"])
        assert chunk is not None, f"{s['chunk_id']!r} is not a chunk of {lib!r}"
        assert chunk.text == s["text"] and chunk.doc_id == s["doc_id"], (
            f"{s['chunk_id']!r} stamped {lib!r} carries another library's text"
        )
        assert s["source_locator"] == chunk.source_locator
        assert not is_restricted(s["sensitivity"]) and not is_restricted(chunk.sensitivity), (
            f"RESTRICTED {s['chunk_id']!r} from {lib!r}"
        )
        key = (lib, s["chunk_id"])
        assert key not in keys, f"{key} returned twice"
        keys.add(key)
    assert_no_restricted(snippets)


# -- per router -----------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(ROUTERS))
def test_every_snippet_comes_from_a_searched_library(libraries, corpora, name):
    factory, expected = ROUTERS[name]
    log: list[str] = []
    multi = build(libraries, factory(), log)
    snippets = multi.retrieve(B_QUERY, top_k=50)
    assert set(log) == expected and len(log) == len(set(log))
    assert snippets
    check_isolation(snippets, set(log), corpora)
    assert {s["library_id"] for s in snippets} == expected  # fallback searches (and finds in) all
    for s in snippets:
        assert set(s["scores"]) >= {"bm25", "vector", "fused"}


@pytest.mark.parametrize("name", list(ROUTERS))
def test_only_the_asked_library_is_returned(libraries, corpora, name):
    factory, _ = ROUTERS[name]
    for asked in LIBS:
        log: list[str] = []
        multi = MultiIndexRetriever(
            {asked: SpyRetriever(NarrativeIndexRetriever(libraries[asked]), log, asked)},
            router=factory(),
            descriptions=DESCRIPTIONS,
        )
        snippets = multi.retrieve(B_QUERY, top_k=50)
        assert log == [asked] and snippets
        check_isolation(snippets, set(log), corpora, asked={asked})
        other = next(lib for lib in LIBS if lib != asked)
        other_texts = {c.text for c in corpora[other].values()}
        assert not [s for s in snippets if s["text"] in other_texts]


@pytest.mark.parametrize("name", list(ROUTERS))
def test_same_chunk_id_in_two_libraries_stays_distinct(libraries, corpora, name):
    factory, expected = ROUTERS[name]
    multi = build(libraries, factory(), [])
    snippets = multi.retrieve(B_QUERY, top_k=50)
    shared = [s for s in snippets if s["doc_id"] == SHARED_DOC_ID]
    assert {s["library_id"] for s in shared} == expected
    for s in shared:
        assert s["text"] == SHARED_TEXT[s["library_id"]]
    check_isolation(snippets, expected, corpora)


@pytest.mark.parametrize("name", list(ROUTERS))
@pytest.mark.parametrize("filters", [None, {"year": {"gte": 2023}}], ids=["no-filter", "filter"])
def test_no_restricted_snippet_for_its_best_query(libraries, corpora, name, filters):
    factory, _ = ROUTERS[name]
    # non-vacuous: the RESTRICTED chunk is the top lexical match in each library
    for idx in libraries.values():
        top = idx.retrieve(QUERY, top_k=1, metadata_filter=filters)[0]
        assert is_restricted(top.chunk.sensitivity)
    log: list[str] = []
    snippets = build(libraries, factory(), log).retrieve(QUERY, filters=filters, top_k=50)
    assert snippets
    check_isolation(snippets, set(log), corpora)


def test_routing_failure_searches_every_library(libraries):
    for router in (RaisingRouter(), UnknownIdsRouter(), NoneRouter()):
        multi = build(libraries, router, [])
        assert multi.route(B_QUERY) == list(LIBS)
    keyword = build(libraries, make_library_router("keyword"), [])
    assert keyword.route("no overlap with any description") == list(LIBS)
    assert keyword.route(B_QUERY) == ["lib-b"]


def test_llm_router_prompt_names_libraries_and_not_chunks(libraries):
    provider = RecordingProvider('["lib-a"]')
    multi = build(libraries, make_library_router("llm", provider=provider), [])
    snippets = multi.retrieve(QUERY, top_k=10)
    assert {s["library_id"] for s in snippets} == {"lib-a"}
    assert len(provider.prompts) == 1
    assert "lib-a" in provider.prompts[0] and DESCRIPTIONS["lib-b"] in provider.prompts[0]
    assert_no_restricted([], provider.prompts)


# -- the inverse proofs: leaky bases must fail the checker -----------------------------------
class _Leak:
    """A library retriever whose ``search`` is its (leaky) ``retrieve``."""

    def search(self, query, *, filters=None, top_k=50):
        return Retrieval(self.retrieve(query, filters=filters, top_k=top_k))


class ForeignLeak(_Leak):
    """Broken on purpose: lib-a's base also returns a snippet of lib-b."""

    def __init__(self, inner: Any, foreign: NarrativeIndex) -> None:
        self.inner = inner
        self.foreign = foreign

    def retrieve(self, query, *, filters=None, top_k=50):
        own = self.inner.retrieve(query, filters=filters, top_k=top_k)
        leaked = [to_snippet(r) for r in self.foreign.retrieve(query, top_k=5)
                  if not is_restricted(r.chunk.sensitivity) and r.chunk.doc_id != SHARED_DOC_ID]
        return leaked[:1] + own


class RestrictedLeak(_Leak):
    """Broken on purpose: the base builds snippets without the RESTRICTED exit."""

    def __init__(self, inner: Any, index: NarrativeIndex) -> None:
        self.inner = inner
        self.index = index

    def retrieve(self, query, *, filters=None, top_k=50):
        return [to_snippet(r) for r in self.index.retrieve(query, top_k=top_k, metadata_filter=filters)]


class SharedIdSwap(_Leak):
    """Broken on purpose: lib-a answers its shared chunk id with lib-b's text."""

    def __init__(self, inner: Any, foreign: NarrativeIndex) -> None:
        self.inner = inner
        self.foreign = foreign

    def retrieve(self, query, *, filters=None, top_k=50):
        out = []
        for s in self.inner.retrieve(query, filters=filters, top_k=top_k):
            if s["doc_id"] == SHARED_DOC_ID:
                s = {**s, "text": SHARED_TEXT["lib-b"]}
            out.append(s)
        return out


LEAKS = {
    "foreign-snippet": lambda libs: {"lib-a": lambda base: ForeignLeak(base, libs["lib-b"])},
    "restricted-snippet": lambda libs: {"lib-a": lambda base: RestrictedLeak(base, libs["lib-a"])},
    "shared-id-swap": lambda libs: {"lib-a": lambda base: SharedIdSwap(base, libs["lib-b"])},
}


@pytest.mark.parametrize("leak", list(LEAKS))
@pytest.mark.parametrize("name", ["none", "keyword", "raising"])
def test_inverse_a_leaky_base_fails_the_checker(libraries, corpora, name, leak):
    factory, _ = ROUTERS[name]
    query = "gearbox supply claims"  # matches the shared chunks too; keyword routes to lib-b only
    log: list[str] = []
    honest = build(libraries, factory(), log).retrieve(query, top_k=50)
    check_isolation(honest, set(log), corpora)
    log = []
    router = factory() if name != "keyword" else RaisingRouter()  # make sure lib-a is searched
    leaky = build(libraries, router, log, wrap=LEAKS[leak](libraries)).retrieve(query, top_k=50)
    assert "lib-a" in log
    with pytest.raises(AssertionError):
        check_isolation(leaky, set(log), corpora)


def test_inverse_snippet_from_an_unsearched_library_fails(libraries, corpora):
    log: list[str] = []
    snippets = build(libraries, make_library_router("keyword"), log).retrieve(B_QUERY, top_k=50)
    assert log == ["lib-b"]
    check_isolation(snippets, set(log), corpora)
    stray = to_snippet(libraries["lib-a"].retrieve("gearbox castings", top_k=1)[0])
    with pytest.raises(AssertionError):
        check_isolation(snippets + [stray], set(log), corpora)
    with pytest.raises(AssertionError):  # a duplicate (library, chunk) pair
        check_isolation(snippets + snippets[:1], set(log), corpora)
