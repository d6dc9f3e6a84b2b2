"""scripts/render_documents.py renders documents the readers read back whole, on the pages its
layout record says: the ground truth of ``scripts/bench.py --documents`` (issue 28, "Measured")."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from ragspine.documents import read_document
from tests.helpers import needs

needs("reportlab", "pypdfium2", "docx")

SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "render_documents.py"

EN = [" ".join(f"The {word} of sector {i} reported {n} units in the quarter." for n in range(20))
      for i, word in enumerate(("output", "revenue", "harvest", "traffic"))]
ZH_HANS = ["第三季度收入增长百分之十二，北方工厂的产量创下新高。" * 20, "会议纪要：董事会批准了新的投资计划（Tesla 1856 年）。" * 20,
           "南方港口的货运量下降，原因是天气恶劣。" * 20]
ZH_HANT = ["臺灣大學的研究團隊發現了新的蛋白質結構。" * 40, "漢諾瓦足球俱樂部於一八九六年成立，總部設在下薩克森邦。" * 30]
DOCUMENTS = {"en": ("Northern plants", EN), "zh-Hans": ("季度报告", ZH_HANS), "zh-Hant": ("研究紀要", ZH_HANT)}


def _renderer() -> ModuleType:
    spec = importlib.util.spec_from_file_location("render_documents", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("render_documents", module)
    spec.loader.exec_module(module)
    return module


def test_pdf_text_and_pages_match_the_layout_record(tmp_path: Path) -> None:
    render = _renderer()
    split_paragraphs = 0
    for lang, (title, texts) in DOCUMENTS.items():
        paragraphs = [(f"{lang}-{i}", text) for i, text in enumerate(texts)]
        path = tmp_path / f"{lang}.pdf"
        record = render.render_pdf(title, paragraphs, path, lang=lang)
        assert record["pages"] >= 2, lang  # the text flows over pages
        doc = read_document(path, tmp_path)
        structure = doc.structure
        assert structure is not None and doc.title == title and len(structure.pages) == record["pages"]
        # every character comes back, in order (line breaks aside)
        assert render.nonspace(doc.text) == render.nonspace(title + "".join(texts)), lang
        if lang == "en":  # and every word, whole
            assert doc.text.split() == (title + " " + " ".join(texts)).split()
        spans = render.align(doc.text, texts)
        assert None not in spans
        for i, (start, end) in enumerate(spans):
            # the page the reader puts the paragraph's first character on is the renderer's
            assert structure.pages_of(start, start + 1) == [record["paragraphs"][i]["pages"][0][0]], (lang, i)
            kept = [k for k in range(start, end) if render.kept(doc.text[k])]
            for page, offset in record["paragraphs"][i]["pages"][1:]:  # where a split paragraph goes on
                split_paragraphs += 1
                assert structure.pages_of(kept[offset], kept[offset] + 1) == [page], (lang, i, offset)
                assert structure.pages_of(kept[offset - 1], kept[offset]) == [page - 1], (lang, i, offset)
                assert render.page_at(record, i, offset) == page and render.page_at(record, i, offset - 1) == page - 1
    assert split_paragraphs >= 2  # the page-break case is exercised, not only whole paragraphs


def test_docx_and_txt_hold_the_same_text(tmp_path: Path) -> None:
    render = _renderer()
    for lang, (title, texts) in DOCUMENTS.items():
        paragraphs = [(f"{lang}-{i}", text) for i, text in enumerate(texts)]
        render.render_docx(title, paragraphs, tmp_path / "docx" / f"{lang}.docx")
        render.render_txt(title, paragraphs, tmp_path / "txt" / f"{lang}.txt")
        for form in ("docx", "txt"):
            doc = read_document(tmp_path / form / f"{lang}.{form}", tmp_path / form)
            assert doc.title == title, (lang, form)
            assert doc.text.rstrip("\n").split("\n\n") == [f"# {title}", *texts], (lang, form)  # a heading, each paragraph whole


def test_language_of_a_set() -> None:
    render = _renderer()
    assert [render.language(texts) for texts in (EN, ZH_HANS, ZH_HANT)] == ["en", "zh-Hans", "zh-Hant"]
