"""``read_document`` over every format: text/Markdown byte-identical to the old path, page
fields on paged documents' chunks only, provenance, the directory walk, sensitivity."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragspine.demo import CORPUS_DIR
from ragspine.documents import chunk_source, collect_files, read_document
from ragspine.errors import IngestError
from ragspine.front_matter import decode_document, first_heading
from ragspine.retrieval.chunking.base import make_chunker
from ragspine.retrieval.chunking.chunking import chunk_document
from ragspine.retrieval.metadata import validate_metadata
from ragspine.retrieval.sensitivity import DEFAULT_SENSITIVITY, split_document_fields
from tests.helpers import needs
from tests.unit.readers.conftest import docx_bytes, pptx_bytes, report_pdf, xlsx_bytes

TEXT_FILES = sorted(CORPUS_DIR.glob("*.md"))


def _old_read(path: Path) -> tuple[str, str, int, str, dict[str, object]]:
    """What ``read_document`` did before the readers: decode, front matter, first heading."""
    front_matter, body, offset = decode_document(path.read_bytes(), str(path))
    front, extra = split_document_fields(front_matter, str(path))
    title = str(front.get("title") or first_heading(body, path.name) or path.stem)
    return body, title, offset, str(front.get("doc_id") or path.name), validate_metadata(extra)


@pytest.mark.parametrize("path", TEXT_FILES + [Path(__file__).parents[3] / "ragspine/testing/data/agent_eval/SOURCES.md"],
                         ids=lambda p: p.name)
@pytest.mark.parametrize("chunker", ["default", "layout"])
def test_text_and_markdown_read_and_chunk_byte_identically(path: Path, chunker: str) -> None:
    body, title, offset, doc_id, metadata = _old_read(path)
    doc = read_document(path, path.parent)
    assert (doc.text, doc.title, doc.body_offset, doc.doc_id, dict(doc.metadata)) == (body, title, offset, doc_id, metadata)
    assert doc.pages_of(0, 10) == []
    cutter = make_chunker(chunker)
    old = cutter.chunk(body, doc_id, title=title, metadata=metadata, sensitivity=doc.sensitivity, source=str(path),
                       source_offset=offset)
    assert chunk_source(doc, cutter) == old and old
    if chunker == "default":
        assert old == chunk_document(body, doc_id, title=title, metadata=metadata, sensitivity=doc.sensitivity,
                                     source=str(path), source_offset=offset)


def test_a_txt_with_a_pdf_inside_is_read_as_a_pdf(tmp_path) -> None:
    needs("pypdfium2")
    path = tmp_path / "looks-like-notes.txt"
    path.write_bytes(report_pdf())
    doc = read_document(path, tmp_path)
    assert doc.structure is not None and doc.structure.format == "pdf" and doc.title == "Plant review 2024"


@pytest.mark.parametrize(("name", "build", "pages"), [
    ("report.pdf", report_pdf, 3), ("deck.pptx", pptx_bytes, 2), ("plants.xlsx", xlsx_bytes, 2), ("handbook.docx", docx_bytes, 0),
])
def test_paged_chunks_carry_page_and_page_end_and_every_chunk_is_a_substring(tmp_path, name, build, pages) -> None:
    needs({"pdf": "pypdfium2", "pptx": "pptx", "xlsx": "openpyxl", "docx": "docx"}[name.rsplit(".", 1)[1]])
    path = tmp_path / name
    path.write_bytes(build())
    doc = read_document(path, tmp_path, sensitivity="internal")
    assert doc.sensitivity == "internal" and doc.body_offset == 0
    assert read_document(path, tmp_path).sensitivity == DEFAULT_SENSITIVITY  # no front matter: the default, as a .txt
    chunks = chunk_source(doc, make_chunker("default", max_chars=60, overlap_chars=10))
    assert len(chunks) > 1
    for chunk in chunks:
        assert doc.text[chunk.char_start : chunk.char_end] == chunk.text  # provenance: a substring of the stored text
        assert chunk.source_locator == f"{path}#char={chunk.char_start},{chunk.char_end}"
        if pages:
            first, last = chunk.metadata["page"], chunk.metadata["page_end"]
            assert 1 <= first <= last <= pages and doc.pages_of(chunk.char_start, chunk.char_end) == list(range(first, last + 1))
        else:
            assert "page" not in chunk.metadata and "page_end" not in chunk.metadata
    if pages:
        assert {c.metadata["page"] for c in chunks} == set(range(1, pages + 1))
    if name == "report.pdf":
        (cjk,) = [c for c in chunks if "会议纪要" in c.text]
        assert cjk.metadata["page"] == 2


def test_the_directory_walk_takes_every_supported_format(tmp_path) -> None:
    for name in ("a.txt", "b.md", "c.pdf", "d.docx", "e.pptx", "f.xlsx", "g.csv", "h.html", "i.htm", "j.tsv",
                 "skip.doc", "skip.png", "skip.json"):
        (tmp_path / name).write_bytes(b"x")
    found = [p.name for p, _ in collect_files([tmp_path])]
    assert found == ["a.txt", "b.md", "c.pdf", "d.docx", "e.pptx", "f.xlsx", "g.csv", "h.html", "i.htm", "j.tsv"]
    with pytest.raises(IngestError, match=r"skip.doc: not a .*\.pdf.* file; ingest reads text, Markdown, PDF, Word"):
        collect_files([tmp_path / "skip.doc"])


def test_a_bad_file_of_a_new_format_is_an_error_naming_it(tmp_path) -> None:
    path = tmp_path / "fake.pdf"
    path.write_text("just text, not a PDF")
    with pytest.raises(IngestError, match=r"fake.pdf: not a PDF file \(no %PDF- header\)"):
        read_document(path)
