"""``ChunkerConformance``: a Chunker keeps the provenance contract on any text.

Fixture needed: ``chunker_factory`` — ``factory(max_chars, overlap_chars) -> Chunker``.

The contract (:mod:`ragspine.retrieval.chunking.base`), checked by :func:`check_chunks` on a
mixed corpus (:func:`mixed_corpus`: English, Chinese, Japanese, nested Markdown with a code
fence and an empty section, Chinese and Japanese statutes with a cross-reference, an FAQ,
CRLF line ends), on seeded random documents, at several budgets and with ``source_offset >
0``, and on a ~1 MB document (:func:`large_document`), which must chunk in under
:data:`LARGE_DOC_SECONDS` of CPU time:

* ``text == document[char_start - source_offset : char_end - source_offset]``, never empty
  nor whitespace only, at most ``max_chars`` characters;
* ``source_locator == make_locator(source or doc_id, char_start, char_end)``;
* ids ``chunk_id_for(doc_id, ordinal)``, ordinals ``0..n-1`` in document order;
* title, sensitivity and the validated metadata on every chunk;
* ``parent_locator``, when set, covers the chunk, and ``window_text`` (set only with it) is the
  document at that extent; chunks of one ``parent_id`` share locator and window;
* a parent (or window) is bounded: a chunker that sets ``parent_locator`` declares its bound
  as ``parent_chars``, and no extent exceeds it — on the corpus and on a heading-less document
  of ~54,000 characters (:func:`headingless_document`: one section, a paragraph of thousands
  of characters, a run without terminators);
* the same text gives the same chunks; an empty or blank document gives none; bad metadata
  raises ``IngestError`` and a bad budget ``ValueError``;
* every non-whitespace character is in some chunk (nothing is lost).
"""

from __future__ import annotations

import random
import time
from typing import Callable, Mapping, Sequence

import numpy as np
import pytest

from ragspine.errors import IngestError
from ragspine.retrieval.chunking.base import Chunker
from ragspine.retrieval.chunking.chunking import Chunk, chunk_id_for, make_locator
from ragspine.retrieval.metadata import validate_metadata
from ragspine.retrieval.sensitivity import DEFAULT_SENSITIVITY

ChunkerFactory = Callable[[int, int], Chunker]
BUDGETS = ((480, 80), (120, 30), (24, 0))
LARGE_DOC_CHARS = 1_000_000
LARGE_DOC_SECONDS = 2.0
N_RANDOM_DOCS = 30
META = {"topic": "conformance", "year": 2024, "audited": True, "note": None}

ENGLISH = (
    "The gearbox plant in the north reported supply delays in the second quarter. Deliveries slipped by "
    "three weeks on average; the largest supplier blamed a shortage of castings!\n\n"
    "Management expects the backlog to clear by autumn. Is that realistic? Analysts doubt it, citing "
    "\"persistent bottlenecks\" (and rising freight costs).\n\n"
    + "A very long sentence without any terminator that keeps going and going " * 12
    + "\n\nShort closing paragraph."
)
CHINESE = (
    "今年第二季度，北方齿轮箱工厂的交付平均延迟了三周。最大的供应商将原因归结为铸件短缺！\n\n"
    "管理层预计积压订单将在秋季前清理完毕。这现实吗？分析师对此表示怀疑；他们提到“持续的瓶颈”。\n"
    + "营收下滑" * 150
)
JAPANESE = (
    "第二四半期、北部のギアボックス工場では納期が平均三週間遅れた。最大の仕入先は鋳物の不足を理由に挙げた。\n\n"
    "経営陣は秋までに受注残が解消すると見込んでいる。本当にそうだろうか？アナリストは「根強い隘路」を指摘する。"
)
MARKDOWN = (
    "Preamble before any heading.\n\n# Guide\n\nIntro to the guide.\n\n## Install\n\n```\n# a comment, not a heading\n"
    "pip install ragspine\n```\n\n## Empty section\n### Deeper\nText under a third-level heading.\n\n"
    "1. Overview\nNumbered section text.\n\n1.2 Scope\nScope text. More scope.\n\n2.3.1 Details\nDetail text.\n\n"
    "一、总则\n总则的内容。\n\n（一）基本原则\n基本原则的内容。\n(二) 其他\n其他内容。"
)
STATUTE = (
    "中华人民共和国示例法\n\n目录\n第一章　总则\n\n第一章　总则\n\n第一条　为了规范示例行为，制定本法。\n"
    "第二条　有下列情形之一的，依照本法第三十条的规定处理：\n（一）违反本法规定的；\n（二）拒不改正的。\n"
    "前款规定的情形，由主管部门认定。\n依照本法\n第三十条的规定，另行处理。\n\n第二节　罚则\n"
    "第三十条　违反本法规定的，处一万元以下罚款。" + "情节严重的，处十万元以下罚款。" * 8
)
JAPANESE_STATUTE = (
    "（目的）\n第一条　この法律は、示例行為を規律することを目的とする。\n\n（定義）\n第二条　この法律において、"
    "次の各号に掲げる用語の意義は、当該各号に定めるところによる。\n２　前項の規定は、第三条の場合に準用する。\n"
    "第三条の二　第一条の規定にかかわらず、適用しない。\n３　前二項の規定は、適用しない。"
)
FAQ = (
    "Frequently asked questions\n\nQ: How do I reset my password?\nA: Open settings and choose reset.\n\n"
    "It takes a minute.\n\nQ：支持中文吗？\nA：支持。\n问：如何导出数据\n答：在设置中选择导出。\n"
    "質問：料金はかかりますか\n回答：かかりません。\nIs there an offline mode?\nYes, everything runs offline.\n"
    "数据保存在哪里？\n保存在本地。"
)
CRLF = "# Title\r\n\r\nFirst paragraph.\r\nSecond line.\r\n\r\n## Part two\r\n第一条　内容。\r\n1.2 Scope\r\nText.\r\n"
CORPUS = {
    "english": ENGLISH, "chinese": CHINESE, "japanese": JAPANESE, "markdown": MARKDOWN, "statute": STATUTE,
    "japanese-statute": JAPANESE_STATUTE, "faq": FAQ, "crlf": CRLF, "one-word": "word", "hard-cut": "x" * 1000,
}
_FRAGMENTS = (
    "alpha beta", "营收下滑", "売上高。", "3.14", ". ", "。", "？", "!", "; ", "\n", "\n\n", "\r\n", "\r\n\r\n", "\n \n",
    "\n# Heading\n", "\n## Sub ##\n", "\n1.2 Scope\n", "\n一、总则\n", "\n（一）项目\n", "\n第三十条　条文。\n",
    "依照第三十条的规定", "\nQ: why?\n", "\n问：怎么办\n", "\nIs it?\n", "\n```\n# code\n```\n", "\n２　項。\n",
    "\n第一章 总则\n", "\t", "  ", "“引用。”", "x" * 60,
)


HEADINGLESS_CHARS = 54_020


def headingless_document(chars: int = HEADINGLESS_CHARS) -> str:
    """A plain-text file without a heading line (a ``copyright`` or ``README`` of
    /usr/share/doc): blank-line paragraphs, a paragraph of one sentence in wrapped lines and one
    of sixty sentences (each thousands of characters long), CJK prose without spaces and a run
    without any sentence terminator or space."""
    wrapped = "\n".join(["Permission is hereby granted, free of charge, to any person obtaining a copy of this software,"] * 40)
    sentences = " ".join(f"Clause {i} of the notice applies to every copy of the files." for i in range(60))
    parts = [ENGLISH, wrapped + ".", CHINESE, sentences, JAPANESE, "z" * 3000, STATUTE.replace("\n\n", "\n")]
    out, size, i = [], 0, 0
    while size < chars:
        part = parts[i % len(parts)]
        out.append(part)
        size += len(part) + 2
        i += 1
    return "\n\n".join(out)[:chars]


def mixed_corpus() -> dict[str, str]:
    """``{doc_id: text}`` of the corpus described in the module docstring."""
    return dict(CORPUS)


def random_documents(seed: int, n: int = N_RANDOM_DOCS) -> list[str]:
    """``n`` seeded documents of mixed fragments (headings, CRLF, CJK, terminators, fences)."""
    rng = random.Random(seed)
    return ["".join(rng.choice(_FRAGMENTS) for _ in range(rng.randint(0, 60))) for _ in range(n)]


def large_document(chars: int = LARGE_DOC_CHARS) -> str:
    """About ``chars`` characters: the corpus repeated, with numbered Markdown headings."""
    parts, size, i = [], 0, 0
    texts = list(CORPUS.values())
    while size < chars:
        part = f"\n\n## Part {i}\n\n{texts[i % len(texts)]}"
        parts.append(part)
        size += len(part)
        i += 1
    return "".join(parts)


def _extent(locator: str, where: str) -> tuple[int, int]:
    head, _, span = locator.rpartition("#char=")
    assert head == where, f"locator {locator!r} does not name {where!r}"
    start, _, end = span.partition(",")
    return int(start), int(end)


def check_chunks(
    chunks: Sequence[Chunk],
    text: str,
    doc_id: str,
    *,
    max_chars: int,
    source: str | None = None,
    source_offset: int = 0,
    title: str = "",
    metadata: Mapping[str, object] | None = None,
    sensitivity: str = DEFAULT_SENSITIVITY,
    max_parent_chars: int | None = None,
) -> None:
    """Raise ``AssertionError`` naming the first chunk that breaks the contract
    (``max_parent_chars``: the chunker's parent bound, checked when given)."""
    where = source if source is not None else doc_id
    meta = validate_metadata(metadata)
    parents: dict[str, tuple[str, str]] = {}
    previous: tuple[int, int] | None = None
    for ordinal, c in enumerate(chunks):
        at = f"chunk #{ordinal} {c.text[:40]!r}"
        start, end = c.char_start - source_offset, c.char_end - source_offset
        assert (c.ordinal, c.chunk_id, c.doc_id) == (ordinal, chunk_id_for(doc_id, ordinal), doc_id), f"{at}: id/ordinal"
        assert 0 <= start < end <= len(text), f"{at}: span {c.char_start},{c.char_end} outside the document"
        assert c.text == text[start:end], f"{at}: text is not document[{start}:{end}]"
        assert c.text.strip(), f"{at}: whitespace-only text"
        assert len(c.text) <= max_chars, f"{at}: {len(c.text)} characters > max_chars {max_chars}"
        assert c.source_locator == make_locator(where, c.char_start, c.char_end), f"{at}: source_locator {c.source_locator!r}"
        assert (c.title, c.sensitivity, dict(c.metadata)) == (title, sensitivity, meta), f"{at}: title/sensitivity/metadata"
        if previous is not None:
            assert previous[0] <= start and previous[1] <= end and previous != (start, end), f"{at}: out of document order"
        previous = (start, end)
        assert not c.window_text or c.parent_locator, f"{at}: window_text without parent_locator"
        if c.parent_locator:
            p_start, p_end = _extent(c.parent_locator, where)
            assert p_start <= c.char_start and c.char_end <= p_end, f"{at}: parent_locator {c.parent_locator!r} misses it"
            assert max_parent_chars is None or p_end - p_start <= max_parent_chars, (
                f"{at}: parent {c.parent_locator!r} has {p_end - p_start} characters > parent_chars {max_parent_chars}"
            )
            if c.window_text:
                window = text[p_start - source_offset : p_end - source_offset]
                assert c.window_text == window, f"{at}: window_text is not the document at {c.parent_locator!r}"
        if c.parent_id:
            seen = parents.setdefault(c.parent_id, (c.parent_locator, c.window_text))
            assert seen == (c.parent_locator, c.window_text), f"{at}: parent {c.parent_id!r} with two extents"


def check_coverage(chunks: Sequence[Chunk], text: str, source_offset: int = 0) -> None:
    """Every non-whitespace character of ``text`` is in some chunk."""
    delta = np.zeros(len(text) + 1, dtype=np.int64)  # +1 where a chunk starts, -1 where it ends
    np.add.at(delta, np.array([c.char_start - source_offset for c in chunks], dtype=np.int64), 1)
    np.add.at(delta, np.array([c.char_end - source_offset for c in chunks], dtype=np.int64), -1)
    for i in np.flatnonzero(np.cumsum(delta[:-1]) <= 0):
        assert text[i].isspace(), f"character {i} ({text[i]!r}) is in no chunk: ...{text[max(0, i - 20):i + 20]!r}..."


class ChunkerProvenanceTests:
    @pytest.mark.parametrize("budget", BUDGETS, ids=[f"{m}-{o}" for m, o in BUDGETS])
    def test_mixed_corpus_keeps_provenance(self, chunker_factory: ChunkerFactory, budget: tuple[int, int]) -> None:
        chunker = chunker_factory(*budget)
        for doc_id, text in mixed_corpus().items():
            chunks = chunker.chunk(text, doc_id, title="T", metadata=META, sensitivity="PUBLIC")
            assert chunks, f"{doc_id}: no chunks"
            check_chunks(chunks, text, doc_id, max_chars=budget[0], title="T", metadata=META, sensitivity="PUBLIC")

    def test_random_documents_keep_provenance(self, chunker_factory: ChunkerFactory) -> None:
        for seed, budget in enumerate(BUDGETS[1:]):
            chunker = chunker_factory(*budget)
            for i, text in enumerate(random_documents(seed)):
                chunks = chunker.chunk(text, f"r{i}")
                check_chunks(chunks, text, f"r{i}", max_chars=budget[0])
                check_coverage(chunks, text)

    def test_source_and_source_offset_shift_every_locator(self, chunker_factory: ChunkerFactory) -> None:
        chunker = chunker_factory(120, 30)
        for doc_id, text in mixed_corpus().items():
            chunks = chunker.chunk(text, doc_id, source="files/doc.md", source_offset=1234)
            check_chunks(chunks, text, doc_id, max_chars=120, source="files/doc.md", source_offset=1234)
            plain = chunker.chunk(text, doc_id)
            assert [(c.char_start - 1234, c.char_end - 1234, c.text) for c in chunks] == [
                (c.char_start, c.char_end, c.text) for c in plain
            ], f"{doc_id}: the offset changes the cut"


class ChunkerIdempotenceTests:
    def test_the_same_text_gives_the_same_chunks(self, chunker_factory: ChunkerFactory) -> None:
        chunker = chunker_factory(120, 30)
        for doc_id, text in mixed_corpus().items():
            assert chunker.chunk(text, doc_id, metadata=META) == chunker.chunk(text, doc_id, metadata=META), doc_id


class ChunkerEdgeCaseTests:
    def test_empty_and_blank_documents_give_no_chunks(self, chunker_factory: ChunkerFactory) -> None:
        chunker = chunker_factory(120, 30)
        for text in ("", " ", "\n\n\t \r\n ", "\u3000\r\n"):
            assert chunker.chunk(text, "blank") == []

    def test_bad_metadata_raises_ingest_error(self, chunker_factory: ChunkerFactory) -> None:
        with pytest.raises(IngestError):
            chunker_factory(120, 30).chunk("Some text.", "d", metadata={"bad": [1, 2]})

    @pytest.mark.parametrize(("max_chars", "overlap"), [(0, 0), (-1, 0), (10, -1), (10, 10)])
    def test_bad_budgets_raise_value_error(self, chunker_factory: ChunkerFactory, max_chars: int, overlap: int) -> None:
        with pytest.raises(ValueError):
            chunker_factory(max_chars, overlap)


class ChunkerCoverageTests:
    def test_no_text_is_lost(self, chunker_factory: ChunkerFactory) -> None:
        for budget in BUDGETS:
            chunker = chunker_factory(*budget)
            for doc_id, text in mixed_corpus().items():
                check_coverage(chunker.chunk(text, doc_id), text)


class ChunkerParentBoundTests:
    def test_a_parent_never_exceeds_the_bound(self, chunker_factory: ChunkerFactory) -> None:
        documents = {**mixed_corpus(), "headingless": headingless_document()}
        for budget in BUDGETS:
            chunker = chunker_factory(*budget)
            bound = getattr(chunker, "parent_chars", None)
            for doc_id, text in documents.items():
                chunks = chunker.chunk(text, doc_id)
                if any(c.parent_locator for c in chunks):
                    assert isinstance(bound, int) and bound >= budget[0], (
                        f"{chunker!r} sets parents but declares no parent_chars bound at least max_chars"
                    )
                check_chunks(chunks, text, doc_id, max_chars=budget[0], max_parent_chars=bound)
                if doc_id == "headingless":
                    check_coverage(chunks, text)


class ChunkerScaleTests:
    def test_a_megabyte_chunks_in_linear_time(self, chunker_factory: ChunkerFactory) -> None:
        text = large_document()
        chunker = chunker_factory(480, 80)
        began = time.process_time()
        chunks = chunker.chunk(text, "big", source_offset=7)
        took = time.process_time() - began
        assert took < LARGE_DOC_SECONDS, f"{len(text)} characters took {took:.2f} s of CPU"
        check_chunks(chunks, text, "big", max_chars=480, source_offset=7, max_parent_chars=getattr(chunker, "parent_chars", None))
        check_coverage(chunks, text, source_offset=7)


class ChunkerConformance(
    ChunkerProvenanceTests, ChunkerIdempotenceTests, ChunkerEdgeCaseTests, ChunkerCoverageTests, ChunkerParentBoundTests,
    ChunkerScaleTests,
):
    """Every Chunker property; needs ``chunker_factory``."""


__all__ = [
    "ChunkerConformance", "check_chunks", "check_coverage", "headingless_document", "large_document", "mixed_corpus", "random_documents",
]
