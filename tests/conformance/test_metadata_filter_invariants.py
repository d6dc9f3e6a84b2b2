"""ADR 0016 pack 1: metadata filters only narrow, keep order, are deterministic, never match a
missing field, and cannot surface RESTRICTED content — per operator, with a widening stub
that must make the checker fail."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import pytest

from ragspine.retrieval.filtering.filters import (
    OPERATORS,
    FilterCondition,
    MetadataFilter,
    metadata_of,
)
from ragspine.retrieval.link.narrative_link import NarrativeIndexRetriever
from ragspine.retrieval.narrative_index import NarrativeIndex
from ragspine.retrieval.sensitivity import is_restricted
from ragspine.retrieval.vector.embedding_backends import DeterministicEmbeddingBackend
from ragspine.stores.sqlite import SQLiteDatabase
from tests.conformance.conftest import (
    QUERY,
    assert_no_restricted,
    exposed_index,
    ingest,
    library_a_docs,
    library_b_docs,
)

_MISSING = object()


# -- an independent oracle of docs/concepts.md "Metadata filters" -----------------------------
def _kind(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    return "string"


def _eq(a: Any, b: Any) -> bool:
    return _kind(a) == _kind(b) and a == b


def oracle(op: str, value: Any, operand: Any) -> bool:
    if value is _MISSING:
        return False
    if op == "eq":
        return _eq(value, operand)
    if value is None:
        return False
    if op == "ne":
        return operand is None or not _eq(value, operand)
    if op == "in":
        return any(_eq(value, x) for x in operand)
    if op == "nin":
        return not any(_eq(value, x) for x in operand)
    lo_kind = _kind(operand[0] if op == "between" else operand)
    if _kind(value) != lo_kind:
        return False
    if op == "between":
        return operand[0] <= value <= operand[1]
    return {"gt": value > operand, "gte": value >= operand, "lt": value < operand, "lte": value <= operand}[op]


# -- the cases: every operator, on a number field and on a string field ----------------------
NUMBER_CASES = {
    "eq": 2023,
    "ne": 2023,
    "in": [2022, 2024],
    "nin": [2022],
    "gt": 2022,
    "gte": 2023,
    "lt": 2024,
    "lte": 2023,
    "between": [2022, 2023],
}
STRING_CASES = {
    "eq": "2023-Q2",
    "ne": "2023-Q2",
    "in": ["2022-Q1", "2024-Q3"],
    "nin": ["2021-Q4"],
    "gt": "2023",
    "gte": "2023-Q2",
    "lt": "2023-Q3",
    "lte": "2023-Q3",
    "between": ["2022", "2023-Q3"],
}
#: Open documents each number case must return (the RESTRICTED memo has year 2023 too).
EXPECTED_YEAR = {
    "eq": {"a/south-2023"},
    "ne": {"a/north-2022", "a/east-2024", "a/string-year"},
    "in": {"a/north-2022", "a/east-2024"},
    "nin": {"a/south-2023", "a/east-2024", "a/string-year"},
    "gt": {"a/south-2023", "a/east-2024"},
    "gte": {"a/south-2023", "a/east-2024"},
    "lt": {"a/north-2022", "a/south-2023"},
    "lte": {"a/north-2022", "a/south-2023"},
    "between": {"a/north-2022", "a/south-2023"},
}
CASES = [pytest.param("year", op, v, id=f"year-{op}") for op, v in NUMBER_CASES.items()] + [
    pytest.param("period", op, v, id=f"period-{op}") for op, v in STRING_CASES.items()
]
#: Each operator selecting exactly the RESTRICTED memo (the only doc with ``classification``).
RESTRICTED_SELECTORS = {
    "eq": "board-only",
    "ne": "public",
    "in": ["board-only"],
    "nin": ["public"],
    "gt": "a",
    "gte": "board-only",
    "lt": "z",
    "lte": "board-only",
    "between": ["a", "c"],
}


def test_cases_cover_all_nine_operators():
    assert set(NUMBER_CASES) == set(STRING_CASES) == set(RESTRICTED_SELECTORS) == set(OPERATORS)
    assert len(OPERATORS) == 9


# -- reusable checkers ----------------------------------------------------------------------
def check_apply_narrows(filt: MetadataFilter, items: Sequence[Any], key: Callable[[Any], Any] = metadata_of) -> list[Any]:
    """``filt.apply(items)`` is the exact, order-preserving subsequence of matching items."""
    out = filt.apply(list(items), key)
    # narrowing + order: a subsequence of the input (by identity)
    pos = -1
    for item in out:
        later = [i for i, x in enumerate(items) if x is item and i > pos]
        assert later, f"apply returned {item!r}, which is not a later element of its input"
        pos = later[0]
    assert len(out) <= len(items)
    for item in out:
        assert filt.matches(key(item)), f"apply kept a non-matching item {item!r}"
    kept = {id(x) for x in out}
    for item in items:
        if filt.matches(key(item)):
            assert id(item) in kept, f"apply dropped a matching item {item!r}"
    assert [id(x) for x in filt.apply(list(items), key)] == [id(x) for x in out], "apply is not deterministic"
    return out


def check_filtered_retrieval(
    unfiltered: Sequence[Any], filtered: Sequence[Any], filt: MetadataFilter, *, same_order: bool = True
) -> None:
    """A filtered retrieval is a subset of the unfiltered candidates, every result matches the
    filter, and (single-ranking modes) it keeps the unfiltered relative order."""
    all_ids = [r.chunk_id for r in unfiltered]
    ids = [r.chunk_id for r in filtered]
    assert len(set(ids)) == len(ids), f"duplicate results {ids}"
    extra = set(ids) - set(all_ids)
    assert not extra, f"a filter widened the candidates: {sorted(extra)}"
    for r in filtered:
        assert filt.matches(metadata_of(r)), f"{r.chunk_id} does not satisfy the filter"
    if same_order:
        assert ids == [i for i in all_ids if i in set(ids)], "a filter reordered the candidates"


# -- fixtures -------------------------------------------------------------------------------
@pytest.fixture(scope="module", params=["economy", "hybrid"])
def index(request):
    """One library (lib-a) next to another (lib-b) in one database; read-only in these tests."""
    db = SQLiteDatabase(":memory:")
    db.init_schema()
    backend = DeterministicEmbeddingBackend() if request.param == "hybrid" else None
    idx = exposed_index(db.chunk_store("lib-a"), embedding_backend=backend, mode=request.param)
    ingest(idx, library_a_docs())
    other = NarrativeIndex(db.chunk_store("lib-b"))
    ingest(other, library_b_docs())
    yield idx
    db.close()


def _year_or_missing(chunk: Any, field: str) -> Any:
    return chunk.metadata.get(field, _MISSING)


# -- per operator ---------------------------------------------------------------------------
@pytest.mark.parametrize("field,op,operand", CASES)
def test_apply_is_an_exact_order_preserving_subsequence(index, field, op, operand):
    chunks = index.store.iter_chunks()
    filt = MetadataFilter((FilterCondition(field, op, operand),))
    out = check_apply_narrows(filt, chunks)
    expected = [c for c in chunks if oracle(op, _year_or_missing(c, field), operand)]
    assert [c.chunk_id for c in out] == [c.chunk_id for c in expected]
    # reversed input: still the input's order, not a canonical one
    rev = list(reversed(chunks))
    assert [c.chunk_id for c in check_apply_narrows(filt, rev)] == [c.chunk_id for c in reversed(out)]


@pytest.mark.parametrize("field,op,operand", CASES)
def test_filtered_retrieval_narrows_and_keeps_order(index, field, op, operand):
    filt = MetadataFilter((FilterCondition(field, op, operand),))
    unfiltered = index.retrieve(QUERY, top_k=100)
    assert len(unfiltered) == len(index.store.iter_chunks())  # every chunk is a candidate
    filtered = index.retrieve(QUERY, top_k=100, metadata_filter=filt)
    single_ranking = index.mode.name == "economy"
    check_filtered_retrieval(unfiltered, filtered, filt, same_order=single_ranking)
    expected = {r.chunk_id for r in unfiltered if oracle(op, _year_or_missing(r.chunk, field), operand)}
    assert {r.chunk_id for r in filtered} == expected
    if single_ranking:  # the filter is a mask: scores do not change
        before = {r.chunk_id: r.scores["bm25"] for r in unfiltered}
        assert all(r.scores["bm25"] == before[r.chunk_id] for r in filtered)
    if field == "year":
        open_docs = {r.chunk.doc_id for r in filtered if not is_restricted(r.chunk.sensitivity)}
        assert open_docs == EXPECTED_YEAR[op]


@pytest.mark.parametrize("field,op,operand", CASES)
def test_filtered_retrieval_is_deterministic(index, field, op, operand):
    filt = MetadataFilter((FilterCondition(field, op, operand),))
    runs = [index.retrieve(QUERY, top_k=100, metadata_filter=filt) for _ in range(3)]
    fresh = exposed_index(index.store, embedding_backend=index.embedding_backend, mode=index.mode)
    fresh.sync_vectors()  # another process: its own vectors, computed as `ragspine embed` would
    runs.append(fresh.retrieve(QUERY, top_k=100, metadata_filter=filt))
    signature = [[(r.chunk_id, r.scores["bm25"], r.scores["fused"]) for r in run] for run in runs]
    assert all(s == signature[0] for s in signature)


@pytest.mark.parametrize("op", OPERATORS)
def test_missing_field_never_matches(index, op):
    operand = NUMBER_CASES[op]
    filt = MetadataFilter((FilterCondition("year", op, operand),))
    filtered = index.retrieve(QUERY, top_k=100, metadata_filter=filt)
    assert "a/west-undated" not in {r.chunk.doc_id for r in filtered}
    # a field no chunk has matches nothing, whatever the operator (ne / nin included)
    nowhere = MetadataFilter((FilterCondition("no-such-field", op, operand),))
    assert index.retrieve(QUERY, top_k=100, metadata_filter=nowhere) == []
    assert nowhere.apply(index.store.iter_chunks()) == []


@pytest.mark.parametrize("retry", [True, False], ids=["retry", "no-retry"])
@pytest.mark.parametrize("op", OPERATORS)
def test_filter_selecting_only_restricted_returns_no_restricted(index, op, retry):
    spec = {"classification": {op: RESTRICTED_SELECTORS[op]}}
    # non-vacuous: inside the index, the filter selects exactly the RESTRICTED memo
    inside = index.retrieve(QUERY, top_k=100, metadata_filter=spec)
    assert inside and {r.chunk.doc_id for r in inside} == {"a/board-memo"}
    assert all(is_restricted(r.chunk.sensitivity) for r in inside)
    retriever = NarrativeIndexRetriever(index, retry_without_filters=retry)
    snippets = retriever.retrieve(QUERY, filters=spec, top_k=10)
    assert_no_restricted(snippets)
    assert all(s["library_id"] == "lib-a" for s in snippets)
    if not retry:
        assert snippets == []
    # no existence oracle: the same answer as a filter that matches nothing at all
    nothing = retriever.retrieve(QUERY, filters={"classification": {"eq": "no-such-value"}}, top_k=10)
    assert snippets == nothing
    # list form and MetadataFilter form behave the same
    for form in ([{"field": "classification", "op": op, "value": RESTRICTED_SELECTORS[op]}],
                 MetadataFilter((FilterCondition("classification", op, RESTRICTED_SELECTORS[op]),))):
        assert retriever.retrieve(QUERY, filters=form, top_k=10) == snippets


@pytest.mark.parametrize("op", OPERATORS)
def test_filtered_snippets_through_the_exit_are_a_subset(index, op):
    retriever = NarrativeIndexRetriever(index, retry_without_filters=False)
    unfiltered = retriever.retrieve(QUERY, top_k=100)
    filt = {"year": {op: NUMBER_CASES[op]}}
    filtered = retriever.retrieve(QUERY, filters=filt, top_k=100)
    assert {s["chunk_id"] for s in filtered} <= {s["chunk_id"] for s in unfiltered}
    assert {s["doc_id"] for s in filtered} == EXPECTED_YEAR[op]
    assert_no_restricted(filtered)
    assert_no_restricted(unfiltered)


# -- the inverse proofs: the checkers catch a widening / reordering filter ------------------
class WideningFilter(MetadataFilter):
    """Broken on purpose: apply also lets through the first non-matching item."""

    def apply(self, items, key=None):  # type: ignore[override]
        items = list(items)
        out = super().apply(items, key)
        extra = [x for x in items if not self.matches((key or metadata_of)(x))][:1]
        return out + extra


class ReorderingFilter(MetadataFilter):
    """Broken on purpose: apply returns the matches reversed."""

    def apply(self, items, key=None):  # type: ignore[override]
        return list(reversed(super().apply(items, key)))


class DroppingFilter(MetadataFilter):
    """Broken on purpose: apply forgets the last match."""

    def apply(self, items, key=None):  # type: ignore[override]
        return super().apply(items, key)[:-1]


@pytest.mark.parametrize("op", OPERATORS)
def test_inverse_apply_checker_catches_a_broken_filter(index, op):
    chunks = index.store.iter_chunks()
    cond = FilterCondition("year", op, NUMBER_CASES[op])
    check_apply_narrows(MetadataFilter((cond,)), chunks)  # the real one passes
    for broken in (WideningFilter, ReorderingFilter, DroppingFilter):
        with pytest.raises(AssertionError):
            check_apply_narrows(broken((cond,)), chunks)


class WideningIndex:
    """A broken index: the filtered answer also carries a chunk of another library."""

    def __init__(self, index: NarrativeIndex, foreign: Any) -> None:
        self.index = index
        self.foreign = foreign

    def retrieve(self, query, *, top_k=10, metadata_filter=None, **fields):
        results = self.index.retrieve(query, top_k=top_k, metadata_filter=metadata_filter)
        return results + [self.foreign] if metadata_filter else results


@pytest.mark.parametrize("op", OPERATORS)
def test_inverse_retrieval_checker_catches_widening_and_reordering(index, op):
    filt = MetadataFilter((FilterCondition("year", op, NUMBER_CASES[op]),))
    unfiltered = index.retrieve(QUERY, top_k=100)
    good = index.retrieve(QUERY, top_k=100, metadata_filter=filt)
    check_filtered_retrieval(unfiltered, good, filt, same_order=index.mode.name == "economy")
    foreign = NarrativeIndex(index.store.db.chunk_store("lib-b")).retrieve(QUERY, top_k=1)
    widened = WideningIndex(index, foreign[0]).retrieve(QUERY, top_k=100, metadata_filter=filt)
    with pytest.raises(AssertionError):
        check_filtered_retrieval(unfiltered, widened, filt)
    non_matching = [r for r in unfiltered if not filt.matches(metadata_of(r))][:1]
    assert non_matching
    with pytest.raises(AssertionError):
        check_filtered_retrieval(unfiltered, good + non_matching, filt)
    if len(good) >= 2 and index.mode.name == "economy":
        with pytest.raises(AssertionError):
            check_filtered_retrieval(unfiltered, list(reversed(good)), filt, same_order=True)
