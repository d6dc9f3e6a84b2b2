"""Document ACLs in the service's ingest (issue 29): a job payload's ``"acl"`` is written with the
document (one document or a group), an upload's front matter ACL is read as ``ragspine ingest``
reads it, and the form's ``acl`` field wins over it."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from ragspine.errors import IngestError
from ragspine.retrieval.pipeline import LibraryPipeline
from ragspine.security.principals import ACL
from ragspine.service.ingest import _write_group, document_payload, file_payload, form_acl, plan
from ragspine.stores.sqlite.chunk_store import SQLiteChunkStore

MD = b"---\ntitle: Leave\nallow: [group:hr]\nteam: people\n---\n# Leave\nParental leave is sixteen weeks.\n"


def _payload(doc_id: str, acl: dict | None = None) -> dict:
    doc = {"doc_id": doc_id, "title": doc_id, "text": f"{doc_id} text about parental leave.", "metadata": {},
           "sensitivity": "INTERNAL", "valid_as_of": "", "source": doc_id, "source_offset": 0}
    if acl is not None:
        doc["acl"] = acl
    return doc


@pytest.fixture
def index(tmp_path):
    store = SQLiteChunkStore(tmp_path / "c.db", library_id="lib")
    yield LibraryPipeline(store, mode="economy")
    store.close()


def _write(index, *docs: dict) -> int:
    warnings: list[str] = []
    written = _write_group(index, [(d, plan(index.chunker, d)) for d in docs], warnings)
    assert warnings == []
    return written


def test_one_payload_document_with_an_acl_writes_it(index) -> None:
    assert _write(index, _payload("a", {"allow": ["group:HR"], "deny": ["user:bob"]})) > 0
    assert index.store.document_acls()[1] == {"a": ACL(("group:hr",), ("user:bob",))}
    assert [h.changed_by for h in index.store.acl_history("a")] == ["ingest"]
    _write(index, _payload("a"))  # no "acl": the document keeps its ACL
    assert index.store.document_acls()[1] == {"a": ACL(("group:hr",), ("user:bob",))}
    _write(index, _payload("a", {"allow": [], "deny": []}))  # an explicit empty ACL: open again
    assert index.store.document_acls()[1] == {}


def test_a_group_writes_each_documents_acl_with_its_chunks(index) -> None:
    _write(index, _payload("a", {"allow": ["group:hr"]}), _payload("b"), _payload("c", {"allow": ["user:alice"]}))
    assert index.store.document_acls()[1] == {"a": ACL(("group:hr",)), "c": ACL(("user:alice",))}
    assert {c.doc_id for c in index.store.iter_chunks()} == {"a", "b", "c"}
    assert all("acl" not in c.metadata for c in index.store.iter_chunks())


def test_an_uploads_front_matter_acl_is_the_documents_and_the_form_wins() -> None:
    payload = file_payload("leave.md", MD, {})
    assert payload["acl"] == {"allow": ["group:hr"], "deny": []} and payload["metadata"] == {"team": "people"}
    assert file_payload("leave.md", MD, {"acl": json.dumps({"allow": ["user:Alice"], "deny": ["user:bob"]})})["acl"] == {
        "allow": ["user:alice"], "deny": ["user:bob"]}
    assert file_payload("leave.md", MD, {"acl": "group:it, user:carol"})["acl"] == {"allow": ["group:it", "user:carol"], "deny": []}
    assert file_payload("leave.md", MD, {"acl": "open"})["acl"] == {"allow": [], "deny": []}
    assert "acl" not in file_payload("plain.md", b"# Plain\nNo ACL here.\n", {})  # the payload as it always was


@pytest.mark.parametrize("fields, raw, needle", [
    ({"acl": "hr"}, MD, "acl: ACL entry 'hr' must be 'user:<name>' or 'group:<name>'"),
    ({"acl": "[]"}, MD, "acl: names nobody"),
    ({"metadata": json.dumps({"Allow": "group:hr"})}, MD, "metadata: 'Allow' is the document's ACL; send it as a form field"),
    ({}, MD.replace(b"group:hr", b"hr"), "leave.md: allow: ACL entry 'hr' must be"),
])
def test_a_bad_upload_acl_is_refused_before_the_job(fields, raw, needle) -> None:
    with pytest.raises(IngestError) as err:
        file_payload("leave.md", raw, fields)
    assert needle in str(err.value) and "\n" not in str(err.value)


def test_a_document_models_acl_goes_into_its_payload() -> None:
    doc = SimpleNamespace(doc_id="d", title="D", text="Text.", metadata={}, sensitivity=None, valid_as_of="",
                          acl={"allow": ["group:HR"]})
    assert document_payload(doc)["acl"] == {"allow": ["group:hr"], "deny": []}
    assert "acl" not in document_payload(SimpleNamespace(**{**vars(doc), "acl": None}))
    assert form_acl("OPEN").is_open
