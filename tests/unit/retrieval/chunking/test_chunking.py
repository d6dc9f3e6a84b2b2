"""The paragraph chunker: provenance of every span, the character budget, the overlap rules."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragspine.errors import IngestError
from ragspine.retrieval.chunking.chunking import (
    DEFAULT_CHUNK_CHARS,
    DEFAULT_OVERLAP_CHARS,
    SENTENCE_TERMINATORS,
    chunk_document,
    chunk_spans,
    make_locator,
    paragraph_spans,
)
from ragspine.retrieval.sensitivity import DEFAULT_SENSITIVITY

# -- generated text ----------------------------------------------------------------------
_WORDS = st.sampled_from(
    ["alpha", "beta", "Q3", "revenue", "x", "营收下滑", "売上高", "データ", "Müller", "3.14", "a_b"]
)
_SEPARATORS = st.sampled_from(
    [" ", " ", " ", "\n", "\n\n", "\n \n", "\r\n\r\n", "\t", ". ", "。", "！", "？", "；", "!", "?", ";", "\n\n\n  "]
)
_RUN = st.text(alphabet="abcdefghij营收下滑データ", min_size=30, max_size=400)  # no terminators


@st.composite
def documents(draw: st.DrawFn) -> str:
    parts: list[str] = []
    for _ in range(draw(st.integers(0, 60))):
        kind = draw(st.integers(0, 9))
        if kind == 0:
            parts.append(draw(_RUN))  # a long run with no terminator and no space: hard-cut
        elif kind == 1:
            parts.append(draw(st.text(min_size=0, max_size=20)))  # arbitrary unicode
        else:
            parts.append(draw(_WORDS))
        parts.append(draw(_SEPARATORS))
    return "".join(parts)


budgets = st.integers(min_value=1, max_value=200).flatmap(
    lambda m: st.tuples(st.just(m), st.integers(min_value=0, max_value=m - 1))
)


def _oversize_paragraphs(text: str, max_chars: int) -> list[tuple[int, int]]:
    return [(s, e) for s, e in paragraph_spans(text) if e - s > max_chars]


def _inside(span: tuple[int, int], outer: list[tuple[int, int]]) -> bool:
    return any(s <= span[0] and span[1] <= e for s, e in outer)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=documents(), budget=budgets, offset=st.integers(0, 5000))
def test_chunk_invariants_on_random_text(text: str, budget: tuple[int, int], offset: int) -> None:
    max_chars, overlap = budget
    chunks = chunk_document(
        text, "doc-1", source="files/doc.md", source_offset=offset, max_chars=max_chars, overlap_chars=overlap
    )
    oversize = _oversize_paragraphs(text, max_chars)
    for ordinal, chunk in enumerate(chunks):
        start, end = chunk.char_start - offset, chunk.char_end - offset
        assert chunk.ordinal == ordinal
        assert chunk.chunk_id == f"doc-1#{ordinal}"
        assert chunk.text == text[start:end]
        assert 0 < len(chunk.text) <= max_chars
        assert chunk.text == chunk.text.strip()  # trimmed spans, never whitespace-only
        assert chunk.source_locator == f"files/doc.md#char={chunk.char_start},{chunk.char_end}"

    # every non-whitespace character is in some chunk
    covered = [False] * len(text)
    for chunk in chunks:
        for i in range(chunk.char_start - offset, chunk.char_end - offset):
            covered[i] = True
    missing = [i for i, ch in enumerate(text) if not ch.isspace() and not covered[i]]
    assert not missing, f"uncovered characters at {missing[:5]}"

    # document order; overlap only between packed chunks, at most overlap_chars
    for prev, nxt in zip(chunks, chunks[1:], strict=False):
        assert nxt.char_start > prev.char_start
        assert nxt.char_end > prev.char_end
        shared = prev.char_end - nxt.char_start
        assert shared <= overlap
        p_span = (prev.char_start - offset, prev.char_end - offset)
        n_span = (nxt.char_start - offset, nxt.char_end - offset)
        if _inside(p_span, oversize) or _inside(n_span, oversize):
            assert shared <= 0, "sub-chunks of an oversize paragraph never overlap"


@settings(max_examples=60, deadline=None)
@given(text=documents())
def test_default_budget_and_no_overlap_when_zero(text: str) -> None:
    chunks = chunk_document(text, "d")
    assert all(len(c.text) <= DEFAULT_CHUNK_CHARS for c in chunks)
    no_overlap = chunk_document(text, "d", max_chars=50, overlap_chars=0)
    for prev, nxt in zip(no_overlap, no_overlap[1:], strict=False):
        assert nxt.char_start >= prev.char_end


def test_constants() -> None:
    assert DEFAULT_CHUNK_CHARS == 480
    assert DEFAULT_OVERLAP_CHARS == 80
    assert set(SENTENCE_TERMINATORS) == set("。！？；.!?;")


@pytest.mark.parametrize(
    ("max_chars", "overlap", "needle"),
    [(0, 0, "max_chars"), (-5, 0, "max_chars"), (10, -1, "overlap_chars"), (10, 10, "overlap_chars"), (10, 11, "overlap_chars")],
)
def test_bad_budgets_raise_value_error(max_chars: int, overlap: int, needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        chunk_document("some text", max_chars=max_chars, overlap_chars=overlap)


def test_smallest_valid_budget() -> None:
    chunks = chunk_document("abc de", max_chars=1, overlap_chars=0)
    assert [c.text for c in chunks] == ["a", "b", "c", "d", "e"]


def test_empty_and_blank_text_give_no_chunks() -> None:
    assert chunk_document("") == []
    assert chunk_document(" \n\n\t \r\n ") == []


def test_small_paragraphs_are_packed_into_one_chunk() -> None:
    text = "First para.\n\nSecond para.\n\n\nThird."
    chunks = chunk_document(text, "d", max_chars=100, overlap_chars=10)
    assert len(chunks) == 1
    assert chunks[0].text == text
    assert (chunks[0].char_start, chunks[0].char_end) == (0, len(text))


def test_packed_chunks_overlap_and_start_at_a_word() -> None:
    paragraphs = [" ".join(f"w{p}x{i}" for i in range(8)) for p in range(6)]  # ~47 chars each
    text = "\n\n".join(paragraphs)
    chunks = chunk_document(text, "d", max_chars=120, overlap_chars=30)
    assert len(chunks) >= 3
    overlaps = [prev.char_end - nxt.char_start for prev, nxt in zip(chunks, chunks[1:], strict=False)]
    assert all(0 < o <= 30 for o in overlaps), overlaps  # context is shared, within the budget
    for chunk in chunks[1:]:
        before = text[chunk.char_start - 1]
        assert before.isspace(), f"chunk starts mid-word: {chunk.text[:12]!r}"


def test_oversize_paragraph_splits_at_sentence_terminators() -> None:
    sentences = ["Revenue fell sharply in the third quarter.", "营收下滑了百分之十。", "Why? ", "Costs rose; margins shrank!"]
    paragraph = " ".join(s.strip() for s in sentences * 4)
    chunks = chunk_document(paragraph, "d", max_chars=60, overlap_chars=20)
    assert len(chunks) > 1
    for chunk in chunks:
        assert chunk.text[-1] in SENTENCE_TERMINATORS or chunk.char_end == len(paragraph), chunk.text
    for prev, nxt in zip(chunks, chunks[1:], strict=False):
        assert nxt.char_start >= prev.char_end  # no overlap between sub-chunks


def test_closing_quote_stays_with_its_sentence() -> None:
    text = "「売上は減った。」と彼は言った。" * 6
    chunks = chunk_document(text, "d", max_chars=20, overlap_chars=5)
    assert all(not c.text.startswith("」") for c in chunks)


def test_long_run_without_terminators_is_hard_cut_without_overlap() -> None:
    text = "营收下滑" * 100  # 400 CJK chars, no terminator, no space
    chunks = chunk_document(text, "d", max_chars=64, overlap_chars=16)
    assert [(c.char_start, c.char_end) for c in chunks] == [
        (s, min(s + 64, 400)) for s in range(0, 400, 64)
    ]
    assert "".join(c.text for c in chunks) == text


def test_overlap_is_not_taken_across_an_oversize_paragraph() -> None:
    short = "short one"
    text = f"{short}\n\n{'x' * 50}\n\n{short} again"
    spans = chunk_spans(text, max_chars=20, overlap_chars=10)
    for (_, e1), (s2, _) in zip(spans, spans[1:], strict=False):
        assert s2 >= e1


def test_source_offset_and_source_name_in_locators() -> None:
    file_text = "---\ntitle: t\n---\nHello world.\n\nSecond paragraph here."
    body_offset = file_text.index("Hello")
    chunks = chunk_document(
        file_text[body_offset:], "doc-7", source="notes/a.md", source_offset=body_offset, max_chars=15, overlap_chars=0
    )
    for chunk in chunks:
        assert file_text[chunk.char_start : chunk.char_end] == chunk.text
        assert chunk.source_locator == make_locator("notes/a.md", chunk.char_start, chunk.char_end)
    # without ``source`` the doc_id names the document
    plain = chunk_document("Hello.", "doc-7")
    assert plain[0].source_locator == "doc-7#char=0,6"


def test_chunk_fields_carry_title_metadata_and_sensitivity() -> None:
    meta = {"topic": "supply", "entity": "ACME", "year": 2024, "audited": True, "note": None}
    chunks = chunk_document("One.\n\nTwo.", "d", title="T", metadata=meta, sensitivity="RESTRICTED")
    chunk = chunks[0]
    assert chunk.title == "T"
    assert chunk.sensitivity == "RESTRICTED"
    assert dict(chunk.metadata) == meta
    assert chunk.metadata is not meta  # a copy: later edits to the caller's dict do not leak in
    assert (chunk.topic, chunk.entity, chunk.geography) == ("supply", "ACME", "")
    assert chunk_document("x", "d")[0].sensitivity == DEFAULT_SENSITIVITY


@pytest.mark.parametrize(
    "bad",
    [{"tags": ["a", "b"]}, {"nested": {"a": 1}}, {"": "empty key"}, {"x" * 257: 1}, {"v": float("nan")}],
)
def test_bad_metadata_raises_ingest_error(bad: dict) -> None:
    with pytest.raises(IngestError):
        chunk_document("text", "d", metadata=bad)


def test_paragraph_spans_are_trimmed() -> None:
    text = "  one\n\n \t\n two \r\n\r\nthree  "
    assert [text[s:e] for s, e in paragraph_spans(text)] == ["one", "two", "three"]
