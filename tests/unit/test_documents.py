"""Reading documents: front matter, validation, directory walks, honest offsets."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragspine import documents
from ragspine.documents import collect_files, read_document
from ragspine.errors import IngestError
from ragspine.front_matter import split_front_matter
from ragspine.retrieval.chunking.chunking import chunk_document
from ragspine.retrieval.sensitivity import DEFAULT_SENSITIVITY

FRONT = """---
title: Q3 results
doc_id: reports/q3-2024
sensitivity: RESTRICTED
valid_as_of: 2024-09-30
entity: ACME
year: 2024
ratio: 0.25
audited: true
note: null
published: 2024-10-05
captured: 2024-10-05T08:30:00Z
---
# Heading that is not the title

Revenue fell 12% in Q3 because of supply shortages in China.

营收下滑的原因是供应短缺。
"""


def _write(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_bytes(content.encode("utf-8"))  # no newline translation
    return path


def test_front_matter_sets_reserved_fields_and_metadata(tmp_path) -> None:
    path = _write(tmp_path / "q3.md", FRONT)
    doc = read_document(path, tmp_path)
    assert doc.doc_id == "reports/q3-2024"
    assert doc.title == "Q3 results"
    assert doc.sensitivity == "RESTRICTED"
    assert doc.valid_as_of == "2024-09-30"
    assert dict(doc.metadata) == {
        "entity": "ACME",
        "year": 2024,
        "ratio": 0.25,
        "audited": True,
        "note": None,
        "published": "2024-10-05",
        "captured": "2024-10-05T08:30:00+00:00",
    }
    assert not set(documents.RESERVED_KEYS) & set(doc.metadata)
    assert doc.text.startswith("# Heading")
    assert doc.source == str(path)


def test_body_offset_makes_chunk_offsets_point_into_the_file(tmp_path) -> None:
    path = _write(tmp_path / "q3.md", FRONT.replace("\n", "\r\n"))  # CRLF survives too
    file_text = path.read_bytes().decode("utf-8")
    doc = read_document(path, tmp_path)
    assert file_text[doc.body_offset :] == doc.text
    chunks = chunk_document(
        doc.text, doc.doc_id, source=doc.source, source_offset=doc.body_offset, max_chars=40, overlap_chars=10
    )
    assert len(chunks) > 2
    for chunk in chunks:
        assert file_text[chunk.char_start : chunk.char_end] == chunk.text
        assert chunk.source_locator == f"{path}#char={chunk.char_start},{chunk.char_end}"


def test_bom_is_not_part_of_the_text(tmp_path) -> None:
    path = _write(tmp_path / "bom.md", b"\xef\xbb\xbf---\ntitle: T\n---\nBody text.")
    doc = read_document(path)
    assert doc.title == "T" and doc.text == "Body text."
    decoded = path.read_bytes().decode("utf-8-sig")
    assert decoded[doc.body_offset :] == doc.text


def test_defaults_without_front_matter(tmp_path) -> None:
    path = _write(tmp_path / "sub" / "dir" / "notes.txt", "\n## Supply chain update ##\n\nBody.")
    doc = read_document(path, tmp_path)
    assert doc.doc_id == "sub/dir/notes.txt"  # relative to the root, POSIX separators
    assert doc.title == "Supply chain update"
    assert doc.body_offset == 0 and doc.text == path.read_text(encoding="utf-8")
    assert doc.sensitivity == DEFAULT_SENSITIVITY
    assert doc.valid_as_of == ""
    assert dict(doc.metadata) == {}
    assert read_document(path).doc_id == "notes.txt"  # no root: the file name
    assert read_document(path, tmp_path / "elsewhere").doc_id == "notes.txt"


def test_title_falls_back_to_the_stem(tmp_path) -> None:
    path = _write(tmp_path / "plain-memo.txt", "#hashtag is not a heading\nplain text")
    assert read_document(path).title == "plain-memo"


def test_call_defaults_are_overridden_by_front_matter(tmp_path) -> None:
    path = _write(tmp_path / "a.md", "---\nentity: ACME\n---\nbody")
    doc = read_document(path, defaults={"entity": "Default", "geography": "CN"}, sensitivity="PUBLIC")
    assert dict(doc.metadata) == {"entity": "ACME", "geography": "CN"}
    assert doc.sensitivity == "PUBLIC"
    path2 = _write(tmp_path / "b.md", "---\nsensitivity: restricted\n---\nbody")
    assert read_document(path2, sensitivity="PUBLIC").sensitivity == "RESTRICTED"  # any spelling, stored canonically


@pytest.mark.parametrize(
    ("front", "needle"),
    [
        ("tags: [a, b]", "tags"),
        ("tags:\n  - a\n  - b", "tags"),
        ("owner: {name: x}", "owner"),
        ("score: .nan", "score"),
    ],
)
def test_non_scalar_metadata_is_rejected_naming_the_file(tmp_path, front: str, needle: str) -> None:
    path = _write(tmp_path / "bad.md", f"---\n{front}\n---\nbody")
    with pytest.raises(IngestError, match=needle) as info:
        read_document(path)
    assert str(path) in str(info.value)


def test_bad_defaults_are_rejected(tmp_path) -> None:
    path = _write(tmp_path / "a.md", "body")
    with pytest.raises(IngestError, match="tags"):
        read_document(path, defaults={"tags": ["x"]})


@pytest.mark.parametrize(
    "front",
    ["title: [unclosed", "- just\n- a list", "just a string"],
)
def test_bad_front_matter_is_rejected_naming_the_file(tmp_path, front: str) -> None:
    path = _write(tmp_path / "bad.md", f"---\n{front}\n---\nbody")
    with pytest.raises(IngestError) as info:
        read_document(path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize(
    ("name", "content", "needle"),
    [
        ("bin.txt", b"abc\x00def", "binary"),
        ("utf16.txt", "hello".encode("utf-16"), "binary"),
        ("latin1.txt", "café".encode("latin-1"), "UTF-8"),
        ("empty.txt", b"", "empty"),
        ("blank.md", b" \n\n\t\r\n", "empty"),
        ("only-front.md", b"---\ntitle: x\n---\n\n  \n", "empty"),
    ],
)
def test_unreadable_files_raise_ingest_error(tmp_path, name: str, content: bytes, needle: str) -> None:
    path = _write(tmp_path / name, content)
    with pytest.raises(IngestError, match=needle) as info:
        read_document(path)
    assert str(path) in str(info.value)


def test_missing_and_oversize_files(tmp_path, monkeypatch) -> None:
    with pytest.raises(IngestError, match="nope"):
        read_document(tmp_path / "nope.md")
    with pytest.raises(IngestError, match="no such file"):
        collect_files([tmp_path / "nope"])
    path = _write(tmp_path / "big.txt", "x" * 100)
    with pytest.raises(IngestError, match="100 bytes is over the 99-byte limit .RAGSPINE_MAX_FILE_BYTES."):
        read_document(path, max_bytes=99)
    assert read_document(path, max_bytes=100).text == "x" * 100


def test_a_named_file_of_another_kind_is_refused_like_a_walk_skips_it(tmp_path) -> None:
    doc = _write(tmp_path / "report.doc", "legacy Word")
    with pytest.raises(IngestError, match=r"report.doc: not a .txt/.md/.markdown/.pdf/.docx/.* file; ingest reads text, Markdown, PDF"):
        collect_files([doc])
    problems: list[str] = []
    good = _write(tmp_path / "a.md", "text")
    assert collect_files([doc, tmp_path / "missing.md", good], problems) == [(good, tmp_path)]
    assert len(problems) == 2 and "report.doc" in problems[0] and "no such file" in problems[1]


def test_directory_walk_picks_text_files_only(tmp_path) -> None:
    root = tmp_path / "corpus"
    for rel in ("b.md", "a.txt", "sub/c.MD", "sub/deeper/d.txt", "e.markdown"):
        _write(root / rel, "text")
    for rel in ("notes.rst", "script.py", "data.json", "README", "sub/img.png", "md"):
        _write(root / rel, "text")
    (root / "folder.md").mkdir()  # a directory named like a document is not a file
    single = _write(tmp_path / "single.txt", "text")
    found = collect_files([root, single])
    rels = [p.relative_to(root).as_posix() for p, r in found if r == root]
    assert rels == ["a.txt", "b.md", "e.markdown", "sub/c.MD", "sub/deeper/d.txt"]
    assert found[-1] == (single, tmp_path)
    docs = [read_document(p, r) for p, r in found]
    assert [d.doc_id for d in docs] == rels + ["single.txt"]


def test_a_directory_without_text_files_is_an_error(tmp_path) -> None:
    _write(tmp_path / "only" / "x.py", "print()")
    with pytest.raises(IngestError, match="no"):
        collect_files([tmp_path / "only"])


def test_split_front_matter() -> None:
    assert split_front_matter("no front matter") == ({}, "no front matter", 0)
    assert split_front_matter("---\na: 1\n---") == ({"a": 1}, "", 12)
    front, body, offset = split_front_matter("---\r\na: 1\r\n---\r\nbody")
    assert (front, body, offset) == ({"a": 1}, "body", 16)
    text = "--- \n1: x\n---\t\nrest"
    front, body, offset = split_front_matter(text)
    assert front == {"1": "x"} and text[offset:] == body == "rest"  # keys become strings
    # a "---" that is not on the first line is body text
    assert split_front_matter("intro\n---\na: 1\n---\n")[0] == {}


@pytest.mark.parametrize("front, given, want", [
    ("sensitivity: INTERNAL\n", "RESTRICTED", "RESTRICTED"),  # --sensitivity RESTRICTED is not opened by the file
    ("sensitivity: RESTRICTED\n", "PUBLIC", "RESTRICTED"),
    ("sensitivity: INTERNAL\n", "PUBLIC", "INTERNAL"),  # otherwise the file's own label wins
    ("", "PUBLIC", "PUBLIC"),
])
def test_restricted_from_either_the_file_or_the_flag_wins(tmp_path, front, given, want) -> None:
    path = _write(tmp_path / "a.md", f"---\n{front}title: A\n---\nbody\n")
    assert read_document(path, tmp_path, sensitivity=given).sensitivity == want


def test_a_directory_walk_takes_images_only_when_ocr_can_read_them(tmp_path) -> None:
    _write(tmp_path / "a.md", "# A\n\nbody\n")
    _write(tmp_path / "scan.png", b"\x89PNG\r\n\x1a\n")
    assert [p.name for p, _ in collect_files([tmp_path])] == ["a.md"]
    assert sorted(p.name for p, _ in collect_files([tmp_path], images=True)) == ["a.md", "scan.png"]
    with pytest.raises(IngestError, match="RAGSPINE_OCR"):
        collect_files([tmp_path / "scan.png"])


def test_a_directory_walk_says_which_files_it_did_not_read_and_why(tmp_path) -> None:
    _write(tmp_path / "a.md", "# A\n\nbody\n")
    _write(tmp_path / "old.doc", b"\xd0\xcf\x11\xe0")
    _write(tmp_path / "scan.png", b"\x89PNG\r\n\x1a\n")
    _write(tmp_path / "a.md.meta.yaml", "topic: x\n")  # read (as a.md's fields), not listed
    _write(tmp_path / ".git" / "config", "[core]\n")  # hidden: not listed
    passed_over: list[str] = []
    problems: list[str] = []
    assert [p.name for p, _ in collect_files([tmp_path], problems, passed_over=passed_over)] == ["a.md"]
    assert passed_over == [f"{tmp_path / 'old.doc'}: .doc: not a format ingest reads",
                           f"{tmp_path / 'scan.png'}: an image: ingest reads images through OCR (set RAGSPINE_OCR)"]
    passed_over.clear()
    collect_files([tmp_path], problems, images=True, passed_over=passed_over)
    assert passed_over == [f"{tmp_path / 'old.doc'}: .doc: not a format ingest reads"]
