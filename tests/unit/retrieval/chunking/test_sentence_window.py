"""The sentence-window chunker: one chunk per sentence, symmetric bounded windows, the edges."""

from __future__ import annotations

import random

import pytest

from ragspine.retrieval.chunking.chunking import make_locator
from ragspine.retrieval.chunking.sentence_window import SentenceWindowChunker, windows

TEXT = "Aa one. Bb two. Cc three. Dd four. Ee five.\n\nFf six. Gg seven."


def test_one_chunk_per_sentence_across_paragraphs() -> None:
    chunks = SentenceWindowChunker(max_chars=40, overlap_chars=0).chunk(TEXT, "d")
    assert [c.text for c in chunks] == ["Aa one.", "Bb two.", "Cc three.", "Dd four.", "Ee five.", "Ff six.", "Gg seven."]
    assert all(c.parent_id == "" for c in chunks)


def test_windows_are_symmetric_contiguous_and_bounded() -> None:
    text = "".join(f"S{i:02d}xx. " for i in range(9)).strip()  # sentences of 7 characters, one space apart
    chunks = SentenceWindowChunker(max_chars=7, overlap_chars=0, window_chars=40).chunk(text, "d", source="s", source_offset=3)
    middle = chunks[4]
    assert middle.window_text == "S02xx. S03xx. S04xx. S05xx. S06xx."  # k = 2 before and after: 34 chars; k = 3 is 50
    start = text.index("S02")
    assert middle.parent_locator == make_locator("s", start + 3, start + 3 + 34)
    for c in chunks:
        assert c.text in c.window_text and len(c.window_text) <= 40
        w_start, w_end = (int(x) for x in c.parent_locator.split("=")[1].split(","))
        assert c.window_text == text[w_start - 3 : w_end - 3]


def test_the_first_and_last_sentences_get_windows_cut_at_the_edges() -> None:
    text = "".join(f"S{i:02d}xx. " for i in range(9)).strip()
    chunks = SentenceWindowChunker(max_chars=7, overlap_chars=0, window_chars=40).chunk(text, "d")
    first, last = chunks[0], chunks[-1]
    assert first.window_text.startswith("S00xx.") and first.window_text == "S00xx. S01xx. S02xx. S03xx. S04xx."
    assert last.window_text.endswith("S08xx.") and last.window_text == "S04xx. S05xx. S06xx. S07xx. S08xx."
    assert first.char_start == 0 and last.char_end == len(text)


def test_windows_count_characters_in_cjk() -> None:
    text = "一二三。四五六。七八九。十十十。"
    chunks = SentenceWindowChunker(max_chars=4, overlap_chars=0, window_chars=12).chunk(text, "z")
    assert [c.text for c in chunks] == ["一二三。", "四五六。", "七八九。", "十十十。"]
    # 12 characters: one sentence either side in the middle; at an edge the window grows on its one side
    assert [c.window_text for c in chunks] == ["一二三。四五六。七八九。", "一二三。四五六。七八九。", "四五六。七八九。十十十。", "四五六。七八九。十十十。"]


def test_a_sentence_over_the_budget_is_hard_cut() -> None:
    chunks = SentenceWindowChunker(max_chars=10, overlap_chars=0).chunk("x" * 25 + ". Short.", "d")
    assert [c.text for c in chunks] == ["x" * 10, "x" * 10, "xxxxx.", "Short."]


def test_window_chars_below_max_chars_is_refused() -> None:
    with pytest.raises(ValueError, match="window_chars"):
        SentenceWindowChunker(max_chars=100, overlap_chars=0, window_chars=50)
    assert SentenceWindowChunker().window_chars == 480


def brute_force(spans: list[tuple[int, int]], window_chars: int) -> list[tuple[int, int]]:
    n, out = len(spans), []
    for i in range(n):
        best = spans[i]
        for k in range(1, n):
            start, end = spans[max(i - k, 0)][0], spans[min(i + k, n - 1)][1]
            if end - start > window_chars:
                break
            best = (start, end)
        out.append(best)
    return out


def test_the_linear_window_search_matches_brute_force() -> None:
    rng = random.Random(7)
    for _ in range(300):
        spans, pos = [], 0
        for _ in range(rng.randint(0, 25)):
            pos += rng.randint(0, 3)
            length = rng.randint(1, 12)
            spans.append((pos, pos + length))
            pos += length
        window = rng.randint(12, 60)
        assert windows(spans, window) == brute_force(spans, window)
