"""Parent-child chunking and the laws / qa / book presets: parents, ids, what opens a section."""

from __future__ import annotations

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
