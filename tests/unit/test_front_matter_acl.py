"""A document's ACL in its front matter or sidecar (issue 29): ``acl: {allow, deny}``, top-level
``allow:`` / ``deny:``, ``acl: open`` — the document's ACL, never its metadata; a bad one is a
one-line error naming the file and the fix."""

from __future__ import annotations

import pytest

from ragspine.documents import read_document
from ragspine.errors import IngestError
from ragspine.front_matter import acl_key, parse_fields, split_acl
from ragspine.security.principals import ACL, OPEN


def _acl(text: str) -> tuple[dict, ACL | None]:
    return split_acl(parse_fields(text, "f.md"), "f.md")


@pytest.mark.parametrize("text, allow, deny", [
    ("allow: [group:hr, user:Alice]", ("group:hr", "user:alice"), ()),
    ("allow: group:hr, user:Alice", ("group:hr", "user:alice"), ()),
    ("allow:\n  - group:HR\ndeny: user:bob", ("group:hr",), ("user:bob",)),
    ("acl: {allow: [group:hr], deny: [user:bob]}", ("group:hr",), ("user:bob",)),
    ("acl: [group:hr]", ("group:hr",), ()),
    ("deny: [user:bob]", (), ("user:bob",)),  # every principal but bob
    ("Allow: group:hr", ("group:hr",), ()),  # any case, as the document fields
    ("ａｌｌｏｗ: group:hr", ("group:hr",), ()),  # full width
    ("\u0430llow: group:hr", ("group:hr",), ()),  # a Cyrillic а: the ACL, never metadata (fails closed)
])
def test_the_forms_a_user_writes(text, allow, deny) -> None:
    rest, acl = _acl(text + "\ntitle: T\nteam: ops")
    assert acl == ACL(allow, deny)
    assert rest == {"title": "T", "team": "ops"}


def test_open_and_none() -> None:
    assert _acl("acl: open")[1] == OPEN and _acl("ACL: Open")[1] == OPEN
    assert _acl("title: T") == ({"title": "T"}, None)  # nothing said: the document keeps its ACL
    assert acl_key("allowance") is None and acl_key("acl") == "acl" and acl_key(" DENY ") == "deny"


@pytest.mark.parametrize("text, needle", [
    ("allow: hr", "f.md: allow: ACL entry 'hr' must be 'user:<name>' or 'group:<name>'"),
    ("allow: [group:h r]", "f.md: allow: group name 'h r' holds"),
    ("acl: {allow: [group:hr], owner: x}", "f.md: acl: an ACL has keys 'allow' and 'deny', not owner"),
    ("allow: []", "f.md: the ACL names nobody; list who may read the document"),
    ("allow:", "f.md: allow: has no value"),
    ("acl: null", "f.md: acl: has no value"),
    ("acl: open\nallow: group:hr", "f.md: sets acl: and allow: beside it; write the ACL once"),
    ("allow: group:a\nALLOW: group:b", "f.md: 'allow' and 'ALLOW' both set allow; keep one"),
    ("allow: {group: hr}", "f.md: allow: ACL allow must be a list of 'user:<name>' / 'group:<name>' entries, got dict"),
])
def test_a_bad_acl_is_one_line_naming_the_file_and_the_fix(text, needle) -> None:
    with pytest.raises(IngestError) as err:
        _acl(text)
    assert needle in str(err.value) and "\n" not in str(err.value)


def test_front_matter_acl_is_the_documents_and_not_metadata(tmp_path) -> None:
    path = tmp_path / "hr.md"
    path.write_text("---\ntitle: Leave\nallow: [group:hr]\ndeny: user:bob\nteam: people\n---\n# Leave\nSixteen weeks.\n")
    doc = read_document(path, tmp_path)
    assert doc.acl == ACL(("group:hr",), ("user:bob",))
    assert dict(doc.metadata) == {"team": "people"}


def test_a_sidecar_acl_is_the_documents(tmp_path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("Plain notes.\n")
    (tmp_path / "notes.txt.meta.yaml").write_text("acl:\n  allow: [group:board]\ntopic: cranes\n")
    doc = read_document(path, tmp_path)
    assert doc.acl == ACL(("group:board",)) and dict(doc.metadata) == {"topic": "cranes"}
    (tmp_path / "notes.txt.meta.yaml").write_text("allow: board\n")
    with pytest.raises(IngestError, match=r"notes\.txt\.meta\.yaml: allow: ACL entry 'board' must be"):
        read_document(path, tmp_path)


def test_without_acl_fields_the_document_says_nothing(tmp_path) -> None:
    path = tmp_path / "a.md"
    path.write_text("---\ntitle: A\n---\nText.\n")
    assert read_document(path, tmp_path).acl is None
