"""The layout-aware chunker: heading rules, sections never crossed, CRLF, the hooks."""

from __future__ import annotations

import re

import pytest

from ragspine.retrieval.chunking.assemble import ChunkExtra, Doc
from ragspine.retrieval.chunking.chunking import chunk_spans
from ragspine.retrieval.chunking.headings import heading_pattern
from ragspine.retrieval.chunking.layout import LayoutAwareChunker, Section

MD = (
    "Preamble text.\n\n# Guide\n\nIntro.\n\n## Install ##\n\n```\n# a comment\n```\nAfter the fence.\n\n"
    "## Empty\n### Deeper\nDeep text.\n    # indented code, not a heading\n"
)


def headings_of(text: str, chunker: LayoutAwareChunker | None = None) -> list[str]:
    return [h for _, h in (chunker or LayoutAwareChunker()).headings(text)]


def test_markdown_headings_set_the_heading_without_marks() -> None:
    chunks = LayoutAwareChunker().chunk(MD, "d")
    assert [(c.heading, c.text) for c in chunks] == [
        ("", "Preamble text."),
        ("Guide", "# Guide\n\nIntro."),
        ("Install", "## Install ##\n\n```\n# a comment\n```\nAfter the fence."),
        ("Empty", "## Empty"),  # an empty section: one chunk of its heading line
        ("Deeper", "### Deeper\nDeep text.\n    # indented code, not a heading"),
    ]


@pytest.mark.parametrize(
    ("line", "heading"),
    [
        ("1. Overview", "1. Overview"),
        ("1.2 Scope", "1.2 Scope"),
        ("2.3.1 Details of the plan", "2.3.1 Details of the plan"),
        ("1.2　范围", "1.2　范围"),
        ("一、总则", "一、总则"),
        ("（一）基本原则", "（一）基本原则"),
        ("(二) 其他事项", "(二) 其他事项"),
        ("（三）", "（三）"),
        ("  # Indented up to three  ", "Indented up to three"),
        ("###### Six", "Six"),
    ],
)
def test_heading_lines(line: str, heading: str) -> None:
    assert headings_of(f"Before.\n{line}\nAfter.") == [heading]


@pytest.mark.parametrize(
    "line",
    [
        "3.14159 is pi",  # a number, not a section number
        "2024 was a good year",  # no dot
        "1. This line is a sentence.",  # ends in a terminator
        "1.2 Requirements:",  # ends in a colon
        "1.2" + " word" * 30,  # too long for a heading
        "（一）违反本法规定的；",  # an item that goes on
        "一、",  # no title
        "#hashtag",
        "####### seven marks",
        "    # four spaces: code",
        "说明：一、二、三",  # not at the line start
    ],
)
def test_not_heading_lines(line: str) -> None:
    assert headings_of(f"Before.\n{line}\nAfter.") == []


def test_hash_lines_inside_code_fences_are_not_headings() -> None:
    text = "# Real\n```python\n# comment\n```\n~~~\n# also code\n~~~\n## Next\n```\n# unclosed fence: a heading\n"
    assert headings_of(text) == ["Real", "Next", "unclosed fence: a heading"]


def test_chunks_never_cross_sections_and_overlap_stays_inside() -> None:
    para = "Sentence one is here. Sentence two is here too."
    text = "\n\n".join([f"# Part {i}\n\n" + "\n\n".join([para] * 4) for i in range(3)])
    chunker = LayoutAwareChunker(max_chars=110, overlap_chars=40)
    sections = chunker.sections(Doc(text, "d", "d"))
    chunks = chunker.chunk(text, "d")
    assert len(sections) == 3
    for c in chunks:
        (owner,) = [s for s in sections if s.start <= c.char_start < s.end]
        assert c.char_end <= owner.end and c.heading == owner.heading
    for s in sections:  # the first chunk of a section starts with its heading line
        first = next(c for c in chunks if c.heading == s.heading)
        assert first.char_start == s.start and first.text.startswith(s.heading.join(["# ", ""]))
    assert any(b.char_start < a.char_end for a, b in zip(chunks, chunks[1:], strict=False)), "overlap happens inside a section"


def test_each_section_is_packed_like_the_default_chunker() -> None:
    text = MD + "\n\n" + "\n\n".join(f"Paragraph {i}. " * (i + 1) for i in range(12))
    chunker = LayoutAwareChunker(max_chars=60, overlap_chars=15)
    expected = []
    for s in chunker.sections(Doc(text, "d", "d")):
        expected += [(s.start + a, s.start + b) for a, b in chunk_spans(s.text, max_chars=60, overlap_chars=15)]
    assert [(c.char_start, c.char_end) for c in chunker.chunk(text, "d")] == expected


def test_crlf_line_ends_keep_headings_and_exact_offsets() -> None:
    lf = "Intro.\n\n# Title\n\nBody one.\nBody two.\n\n1.2 Scope\nScope text.\n\n一、总则\n内容。\n"
    crlf = lf.replace("\n", "\r\n")
    chunks = LayoutAwareChunker().chunk(crlf, "d", source_offset=10)
    assert [c.heading for c in chunks] == ["", "Title", "1.2 Scope", "一、总则"]
    for c in chunks:
        assert c.text == crlf[c.char_start - 10 : c.char_end - 10] and "\r" not in c.heading
    assert [c.text.replace("\r\n", "\n") for c in chunks] == [c.text for c in LayoutAwareChunker().chunk(lf, "d")]


def test_a_document_without_headings_is_one_section_without_heading() -> None:
    text = "Just prose.\n\nMore prose."
    chunks = LayoutAwareChunker().chunk(text, "d")
    assert [(c.heading, c.text) for c in chunks] == [("", text)]
    assert LayoutAwareChunker().chunk("", "d") == []


class Shouting(LayoutAwareChunker):
    """A preset: upper-case lines are the headings; every chunk names its section's start."""

    heading_pattern = heading_pattern("([A-Z][A-Z ]+[A-Z])\\r?$")

    def _child_extra(self, section: Section, chunk_span: tuple[int, int]) -> ChunkExtra:
        return {"parent_id": f"starts-at-{section.start}"}


def test_presets_change_heading_detection_and_the_hook_adds_fields() -> None:
    text = "INTRO PART\nHello there.\n# Not a heading here\nSECOND PART\nBye."
    chunks = Shouting().chunk(text, "d")
    assert [(c.heading, c.parent_id, c.text) for c in chunks] == [
        ("INTRO PART", "starts-at-0", "INTRO PART\nHello there.\n# Not a heading here"),
        ("SECOND PART", f"starts-at-{text.index('SECOND')}", "SECOND PART\nBye."),
    ]
    assert LayoutAwareChunker()._child_extra(Section(Doc("x", "d", "d"), 0, 1, "", "x"), (0, 1)) == {}


def test_bad_budgets_raise_value_error() -> None:
    with pytest.raises(ValueError, match="overlap_chars"):
        LayoutAwareChunker(max_chars=10, overlap_chars=10)
    assert re.fullmatch(r"LayoutAwareChunker\(max_chars=480, overlap_chars=80\)", repr(LayoutAwareChunker()))


def test_a_numbered_list_is_not_a_run_of_sections() -> None:
    from ragspine.retrieval.chunking.layout import LayoutAwareChunker

    text = "# Setup\n\nSteps:\n1. Install the package\n2. Run it\r\n3. Check\n\n1. Introduction\n\nText here.\n\n2.1 Details\nMore."
    assert [h for _, h in LayoutAwareChunker().headings(text)] == ["Setup", "1. Introduction", "2.1 Details"]
    chunks = LayoutAwareChunker().chunk(text, "d")
    assert any("1. Install the package\n2. Run it" in c.text and c.heading == "Setup" for c in chunks)



def test_unit_packing_keeps_every_paragraph_its_own_chunk_and_the_heading_with_the_first() -> None:
    text = "# Guide\n\nIntro one.\n\nIntro two.\n\n## Next\nLine right under.\n\nSecond.\n\n第一条　总则。\n\n附则。"
    packed = LayoutAwareChunker(max_chars=480, overlap_chars=80).chunk(text, "d")
    unit = LayoutAwareChunker(max_chars=480, overlap_chars=80, packing="unit").chunk(text, "d")
    assert [c.text for c in packed] == ["# Guide\n\nIntro one.\n\nIntro two.", "## Next\nLine right under.\n\nSecond.\n\n第一条　总则。\n\n附则。"]
    assert [(c.heading, c.text) for c in unit] == [
        ("Guide", "# Guide\n\nIntro one."),  # the heading line joins its first paragraph
        ("Guide", "Intro two."),
        ("Next", "## Next\nLine right under."),
        ("Next", "Second."),
        ("Next", "第一条　总则。"),
        ("Next", "附则。"),
    ]
    for c in unit:
        assert text[c.char_start:c.char_end] == c.text


def test_unit_packing_splits_an_oversize_paragraph_like_packing_does() -> None:
    long = " ".join(f"Sentence {i} is here." for i in range(40))
    text = f"Short.\n\n{long}"
    packed = [c.text for c in LayoutAwareChunker(max_chars=120, overlap_chars=0).chunk(text, "d")]
    unit = [c.text for c in LayoutAwareChunker(max_chars=120, overlap_chars=0, packing="unit").chunk(text, "d")]
    assert unit[0] == "Short." and unit[1:] == [t for t in packed if t != "Short."]
    assert all(len(t) <= 120 for t in unit)


def test_unit_packing_a_lone_heading_stays_when_its_paragraph_does_not_fit() -> None:
    text = "# Title\n\n" + "x" * 50
    chunks = LayoutAwareChunker(max_chars=50, overlap_chars=0, packing="unit").chunk(text, "d")
    assert [c.text for c in chunks] == ["# Title", "x" * 50]


def test_packing_is_validated() -> None:
    with pytest.raises(ValueError, match="packing must be one of pack, unit"):
        LayoutAwareChunker(packing="paragraphs")
