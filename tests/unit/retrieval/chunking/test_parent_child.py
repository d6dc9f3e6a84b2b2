"""Parent-child chunking and the laws / qa / book presets: parents, ids, what opens a section."""

from __future__ import annotations

import pytest

from ragspine.retrieval.chunking.base import make_chunker
from ragspine.retrieval.chunking.chunking import Chunk, make_locator
from ragspine.retrieval.chunking.domain_presets import BookChunker, LawsChunker, ParentChildChunker, QAChunker, parent_id_for
from ragspine.retrieval.chunking.layout import LayoutAwareChunker

DOC = "Intro.\n\n# One\n\n" + "Alpha sentence here. " * 8 + "\n\n# Two\n\nShort body."


def by_parent(chunks: list[Chunk]) -> dict[str, list[Chunk]]:
    out: dict[str, list[Chunk]] = {}
    for c in chunks:
        out.setdefault(c.parent_id, []).append(c)
    return out


def test_children_share_their_section_as_parent_with_stable_ids() -> None:
    chunks = ParentChildChunker(max_chars=60, overlap_chars=10).chunk(DOC, "doc", source="f.md", source_offset=5)
    groups = by_parent(chunks)
    assert len(groups) == 3 and len(groups[next(iter(k for k in groups if "#sec=13," in k))]) > 1
    for pid, children in groups.items():
        start, end = (int(x) for x in pid.split("#sec=")[1].split(","))
        assert pid == parent_id_for("doc", start, end) == f"doc#sec={start},{end}"
        for c in children:
            assert c.parent_locator == make_locator("f.md", start, end)
            assert c.window_text == DOC[start - 5 : end - 5]
            assert start <= c.char_start and c.char_end <= end
    assert chunks[1].window_text.startswith("# One") and chunks[-1].window_text == "# Two\n\nShort body."
    again = ParentChildChunker(max_chars=60, overlap_chars=10).chunk(DOC, "doc", source="f.md", source_offset=5)
    assert [c.parent_id for c in again] == [c.parent_id for c in chunks]


def test_parent_child_cuts_like_layout_and_only_adds_the_parent() -> None:
    pc = ParentChildChunker(max_chars=60, overlap_chars=10).chunk(DOC, "d")
    layout = LayoutAwareChunker(max_chars=60, overlap_chars=10).chunk(DOC, "d")
    assert [(c.text, c.char_start, c.heading) for c in pc] == [(c.text, c.char_start, c.heading) for c in layout]
    assert all(not c.parent_id and not c.window_text for c in layout)
    assert type(make_chunker("small_to_big")) is ParentChildChunker


STATUTE = (
    "示例法\n\n第一章　总则\n\n第一条　为了规范示例行为，制定本法。\n"
    "第二条　有下列情形之一的，依照本法第三十条的规定处理：\n（一）违反本法规定的；\n（二）拒不改正的。\n"
    "前款规定的情形，由主管部门认定。\n依照本法\n第三十条的规定，另行处理。\n"
    "第三十条　违反本法规定的，处罚款。\n第12条 数字条号。"
)


def test_laws_articles_start_at_line_start_only() -> None:
    chunks = LawsChunker().chunk(STATUTE, "law")
    assert [c.heading for c in chunks] == ["", "第一章　总则", "第一条", "第二条", "第三十条", "第12条"]
    article_2 = next(c for c in chunks if c.heading == "第二条")
    # the in-sentence cross-reference and the one a line break puts at a line start stay inside
    assert "依照本法第三十条的规定处理" in article_2.text and article_2.text.endswith("第三十条的规定，另行处理。")
    assert article_2.window_text == article_2.text


def test_laws_children_are_the_articles_units_sharing_the_article_as_parent() -> None:
    chunks = LawsChunker(max_chars=30, overlap_chars=0).chunk(STATUTE, "law")
    article_2 = [c for c in chunks if c.heading == "第二条"]
    assert len({c.parent_id for c in article_2}) == 1 and len(article_2) > 2
    assert article_2[0].window_text.startswith("第二条") and article_2[0].window_text.endswith("另行处理。")
    texts = [c.text for c in article_2]
    assert "（一）违反本法规定的；\n（二）拒不改正的。" in texts  # 项 lines packed to the budget
    assert all(len(t) <= 30 for t in texts)
    # a unit over the budget is cut at its sentence terminators
    long_unit = LawsChunker(max_chars=20, overlap_chars=0).chunk("第五条　第一句话在这里。第二句话也在这里。", "l")
    assert [c.text for c in long_unit] == ["第五条　第一句话在这里。", "第二句话也在这里。"]


JAPANESE = (
    "（目的）\n第一条　この法律は、目的とする。\n\n（定義）\n第二条　この法律において用語の意義を定める。\n"
    "２　前項の規定は、第三条の場合に準用する。\n３　前二項の規定は、適用しない。\n"
    "第三条の二　第一条の規定にかかわらず、適用しない。"
)


def test_japanese_articles_with_captions_and_paragraph_lines() -> None:
    chunks = LawsChunker(max_chars=30, overlap_chars=0).chunk(JAPANESE, "jp")
    assert [c.heading for c in chunks] == ["第一条", "第二条", "第二条", "第二条", "第三条の二"]
    assert chunks[0].text.startswith("（目的）\n第一条")  # the caption opens its article
    assert [c.text[:2] for c in chunks[1:4]] == ["（定", "２　", "３　"]
    assert len({c.parent_id for c in chunks[1:4]}) == 1 and chunks[1].window_text.endswith("適用しない。")
    assert "第三条の場合" in chunks[2].text  # an in-sentence 第三条 opens nothing


FAQ = (
    "Welcome to the FAQ.\n\nQ: How do I reset?\nA: Open settings.\n\nThen press reset twice.\n"
    "问：怎么导出\n答：点击导出。\n質問：料金は\n回答：無料です。\nIs there an offline mode?\nYes. Why? Because it is local.\n"
    "数据保存在哪里？\n保存在本地。"
)


def test_qa_pairs_share_one_parent() -> None:
    chunks = QAChunker(max_chars=25, overlap_chars=0).chunk(FAQ, "faq")
    groups = by_parent(chunks)
    headings = [children[0].heading for children in groups.values()]
    assert headings == ["", "Q: How do I reset?", "问：怎么导出", "質問：料金は", "Is there an offline mode?", "数据保存在哪里？"]
    reset = next(children for children in groups.values() if children[0].heading == "Q: How do I reset?")
    assert len(reset) > 1 and reset[0].window_text == "Q: How do I reset?\nA: Open settings.\n\nThen press reset twice."
    offline = next(children for children in groups.values() if children[0].heading.startswith("Is there"))
    assert offline[0].window_text.endswith("Because it is local.")  # "Why?" mid-line opens nothing


def test_book_headings() -> None:
    book = "序\n第一章 陨落的天才\n正文一。\n第二回\n正文二。\n第3節　小节\n正文三。\nChapter 4\nText four.\n# Epilogue\nEnd.\n2.1 Notes\nN."
    chunks = BookChunker().chunk(book, "b")
    assert [c.heading for c in chunks] == ["", "第一章 陨落的天才", "第二回", "第3節　小节", "Chapter 4", "Epilogue", "2.1 Notes"]
    assert len({c.parent_id for c in chunks}) == len(chunks)


# -- a parent has a bounded size ----------------------------------------------------------------
def _parent_extents(chunks: list[Chunk]) -> list[tuple[int, int]]:
    return sorted({tuple(int(x) for x in c.parent_locator.rsplit("#char=", 1)[1].split(",")) for c in chunks})


def test_a_headingless_text_file_gets_bounded_parents_cut_at_paragraphs_then_sentences() -> None:
    from ragspine.testing.chunker import check_chunks, check_coverage, headingless_document

    text = headingless_document()  # 54,020 characters, no heading: one section
    chunker = ParentChildChunker()
    assert chunker.parent_chars == 4 * chunker.max_chars == 1920
    chunks = chunker.chunk(text, "copyright.txt")
    check_chunks(chunks, text, "copyright.txt", max_chars=480, max_parent_chars=1920)
    check_coverage(chunks, text)
    extents = _parent_extents(chunks)
    assert len(extents) > 27 and max(e - s for s, e in extents) <= 1920
    cuts = {"paragraph": 0, "sentence": 0, "line": 0, "inside a word": 0}
    for (_, end), (start, _) in zip(extents, extents[1:], strict=False):
        gap = text[end:start]
        assert end <= start and not gap.strip()  # parents never overlap and lose nothing
        if "\n\n" in gap:
            cuts["paragraph"] += 1
        elif text[end - 1] in "。！？；.!?;”’」』)）":
            cuts["sentence"] += 1
        elif "\n" in gap:  # the wrapped paragraph: a sentence of 40 lines
            cuts["line"] += 1
        else:  # only inside a word longer than the bound: the run of z
            assert gap == "" and text[end - 1] == text[start] == "z", text[end - 20:start + 20]
            cuts["inside a word"] += 1
    assert all(cuts.values()), cuts


def test_the_parent_bound_is_an_option_of_every_parent_child_chunker() -> None:
    text = "\n\n".join(f"Paragraph {i} says something. It goes on a little." for i in range(40))
    for cls in (ParentChildChunker, LawsChunker, QAChunker, BookChunker):
        chunks = cls(max_chars=120, overlap_chars=20, parent_chars=300).chunk(text, "d")
        assert max(e - s for s, e in _parent_extents(chunks)) <= 300, cls
        assert all(text[s:e].startswith("Paragraph") for s, e in _parent_extents(chunks)), cls  # at paragraph starts
    with pytest.raises(ValueError, match="parent_chars"):
        ParentChildChunker(max_chars=120, overlap_chars=20, parent_chars=100)
    assert "parent_chars=300" in repr(ParentChildChunker(max_chars=120, overlap_chars=20, parent_chars=300))


def test_a_section_within_the_bound_stays_one_parent() -> None:
    small = ParentChildChunker(max_chars=60, overlap_chars=10).chunk(DOC, "d")
    assert _parent_extents(small) == _parent_extents(ParentChildChunker(max_chars=60, overlap_chars=10, parent_chars=10_000).chunk(DOC, "d"))


def test_ingest_reads_ragspine_parent_chars_and_the_prompt_text_is_bounded(tmp_path, capsys, monkeypatch) -> None:
    import json

    from ragspine import cli
    from ragspine.testing.chunker import headingless_document

    monkeypatch.setenv("RAGSPINE_EMBEDDING", "none")
    (tmp_path / "copyright.txt").write_text(headingless_document(), encoding="utf-8")
    db = str(tmp_path / "kb.db")
    for bound in (None, "800"):
        if bound:
            monkeypatch.setenv("RAGSPINE_PARENT_CHARS", bound)
        assert cli.main(["--db", db, "ingest", str(tmp_path / "copyright.txt"), "--library", "kb", "--chunker", "parent_child",
                         "--force"]) == 0
        capsys.readouterr()
        assert cli.main(["--db", db, "query", "permission granted free of charge", "--json", "--top-k", "5"]) == 0
        snippets = json.loads(capsys.readouterr().out)
        prompts = [s["prompt_text"] for s in snippets if s.get("prompt_text")]
        assert prompts and max(map(len, prompts)) <= int(bound or 1920), [len(p) for p in prompts]


def test_bounded_spans_cut_a_long_line_at_words_and_lose_nothing() -> None:
    from ragspine.retrieval.chunking.chunking import paragraph_spans
    from ragspine.retrieval.chunking.units import bounded_spans
    from ragspine.testing.chunker import random_documents

    line = ("alpha beta gamma " * 30).strip()
    blocks = bounded_spans(line, [(0, len(line))], 100)
    assert all(e - s <= 100 and (e == len(line) or line[e] == " ") and line[s] != " " for s, e in blocks)
    assert " ".join(line[s:e] for s, e in blocks) == line
    for limit in (1, 7, 40, 300):
        for text in random_documents(limit):
            units = list(paragraph_spans(text))
            blocks = bounded_spans(text, units, limit)
            assert all(0 < e - s <= limit and not text[s].isspace() and not text[e - 1].isspace() for s, e in blocks)
            assert all(a[1] <= b[0] for a, b in zip(blocks, blocks[1:], strict=False))
            kept = "".join(text[s:e] for s, e in blocks)
            assert "".join(kept.split()) == "".join(text.split())  # every non-whitespace character, once
