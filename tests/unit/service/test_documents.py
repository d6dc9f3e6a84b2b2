"""Uploads become background jobs: JSON, batches and files; versioned re-upload; retire;
validation at upload (413/415/422); a failed job keeps the previous version and says why."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from ragspine.service.app import create_app
from tests.unit.service.conftest import (
    doc,
    ingest,
    make_settings,
    new_library,
    new_tenant,
    retrieve,
    wait_job,
)


def test_json_upload_runs_as_a_job_then_is_retrievable(client) -> None:
    headers = new_tenant(client)
    new_library(client, headers, "hb")
    r = client.post("/v1/libraries/hb/documents", json=doc("vac", "Employees get 25 vacation days.", metadata={"year": 2024}), headers=headers)
    assert r.status_code == 202
    job = r.json()
    assert job["state"] in ("queued", "running", "succeeded") and job["progress"].endswith("/1") and job["library"] == "hb"
    done = wait_job(client, headers, job["job_id"])
    assert (done["state"], done["progress"], done["chunks"], done["error"]) == ("succeeded", "1/1", 1, None)
    snippet = retrieve(client, headers, "vacation days").json()["snippets"][0]
    assert (snippet["doc_id"], snippet["library_id"], snippet["metadata"], snippet["version"]) == ("vac", "hb", {"year": 2024}, 1)
    assert snippet["source_locator"] == "vac#char=0,31"
    assert client.get("/v1/libraries/hb/documents", headers=headers).json()["doc_ids"] == ["vac"]
    assert [j["job_id"] for j in client.get("/v1/jobs?library=hb", headers=headers).json()] == [job["job_id"]]


def test_batch_progress_counts_documents(client) -> None:
    headers = new_tenant(client)
    new_library(client, headers, "hb")
    job = ingest(client, headers, "hb", *[doc(f"d{i}", f"Document number {i} about gearboxes.") for i in range(5)])
    assert (job["state"], job["progress"], job["doc_ids"]) == ("succeeded", "5/5", [f"d{i}" for i in range(5)])
    r = client.post("/v1/libraries/hb/documents/batch", json={"documents": [doc("x", "a"), doc("x", "b")]}, headers=headers)
    assert r.status_code == 422 and "appears twice" in r.json()["message"]


def test_file_upload_with_front_matter_points_into_the_file(client) -> None:
    headers = new_tenant(client)
    new_library(client, headers, "hb")
    content = "---\ndoc_id: policy-7\nyear: 2024\nsensitivity: PUBLIC\n---\n# Travel policy\n\nTrains are preferred over flights.\n"
    files = {"file": ("travel.md", content.encode(), "text/markdown")}
    r = client.post("/v1/libraries/hb/documents/upload", files=files, data={"metadata": json.dumps({"team": "ops"})}, headers=headers)
    assert r.status_code == 202, r.text
    assert wait_job(client, headers, r.json()["job_id"])["state"] == "succeeded"
    s = retrieve(client, headers, "trains flights").json()["snippets"][0]
    assert (s["doc_id"], s["title"], s["sensitivity"], s["metadata"]) == ("policy-7", "Travel policy", "PUBLIC", {"team": "ops", "year": 2024})
    start, end = map(int, s["source_locator"].split("#char=")[1].split(","))
    assert s["source_locator"].startswith("travel.md#") and content[start:end] == s["text"]


def test_bad_uploads_are_refused_before_a_job_exists(client) -> None:
    headers = new_tenant(client)
    new_library(client, headers, "hb")
    cases = [
        (doc("d", "   "), "text"),
        (doc("d", "x", metadata={"tags": ["a", "b"]}), "metadata"),
        (doc("d", "x", metadata={"sensitivity": "RESTRICTED"}), "metadata"),
        ({"doc_id": "d"}, "text"),
        (doc("", "x"), "doc_id"),
        (doc("d", "x", colour="red"), "colour"),
    ]
    for body, field in cases:
        r = client.post("/v1/libraries/hb/documents", json=body, headers=headers)
        assert r.status_code == 422 and field in r.json()["message"], (body, r.json())
    r = client.post("/v1/libraries/hb/documents", content=b'{"doc_id": "d", "text": ', headers={**headers, "Content-Type": "application/json"})
    assert r.status_code == 422 and "malformed JSON" in r.json()["message"]
    r = client.post("/v1/libraries/hb/documents/upload", files={"file": ("a.png", b"\x89PNG\r\n", "image/png")}, headers=headers)
    assert r.status_code == 415
    r = client.post("/v1/libraries/hb/documents/upload", files={"file": ("a.txt", b"\xff\xfe bad", "text/plain")}, headers=headers)
    assert r.status_code == 422 and "UTF-8" in r.json()["message"]
    r = client.post("/v1/libraries/hb/documents/upload", files={"file": ("a.md", b"x", "text/markdown")}, data={"metadata": "[1]"}, headers=headers)
    assert r.status_code == 422 and "metadata" in r.json()["message"]
    assert client.get("/v1/jobs", headers=headers).json() == []


def test_oversized_body_is_413_before_parsing(tmp_path) -> None:
    with TestClient(create_app(make_settings(tmp_path, RAGSPINE_MAX_BODY_BYTES="2000"))) as client:
        headers = new_tenant(client)
        new_library(client, headers, "hb")
        r = client.post("/v1/libraries/hb/documents", json=doc("d", "x" * 5000), headers=headers)
        assert r.status_code == 413 and "RAGSPINE_MAX_BODY_BYTES" in r.json()["detail"]
        chunked = client.post(  # no Content-Length: counted while streaming
            "/v1/libraries/hb/documents", content=iter([b'{"doc_id": "d", "text": "', b"y" * 3000, b'"}']),
            headers={**headers, "Content-Type": "application/json"},
        )
        assert chunked.status_code == 413
        assert client.post("/v1/libraries/hb/documents", json=doc("d", "small"), headers=headers).status_code == 202


def test_reupload_is_a_versioned_replace_and_delete_retires(client) -> None:
    headers = new_tenant(client)
    new_library(client, headers, "hb")
    ingest(client, headers, "hb", doc("d1", "The warranty lasts 24 months."))
    ingest(client, headers, "hb", doc("d1", "The warranty lasts 36 months."))
    snippets = retrieve(client, headers, "warranty months").json()["snippets"]
    assert [(s["text"], s["version"]) for s in snippets] == [("The warranty lasts 36 months.", 2)]
    r = client.delete("/v1/libraries/hb/documents/d1", headers=headers)
    assert r.status_code == 200 and r.json()["retired"] is True
    assert retrieve(client, headers, "warranty months").json()["snippets"] == []
    assert client.delete("/v1/libraries/hb/documents/d1", headers=headers).status_code == 404
    ingest(client, headers, "hb", doc("a/b.md", "Slashes in ids work."))
    assert client.delete("/v1/libraries/hb/documents/a/b.md", headers=headers).status_code == 200


def test_a_failed_job_keeps_the_previous_version_and_reports_why(client, monkeypatch) -> None:
    headers = new_tenant(client)
    new_library(client, headers, "hb")
    ingest(client, headers, "hb", doc("d1", "Version one of the gearbox manual."))
    ctx = client.app.state.service
    retriever = ctx.index(ctx.store.get_library("acme", "hb")).retriever

    def broken(chunks):
        raise RuntimeError("embedding service unavailable")

    monkeypatch.setattr(retriever, "warm_cache", broken)
    job = ingest(client, headers, "hb", doc("d1", "Version two of the gearbox manual."))
    assert job["state"] == "failed" and job["progress"] == "0/1"
    assert "'d1'" in job["error"] and "embedding service unavailable" in job["error"] and "previous version" in job["error"]
    snippets = retrieve(client, headers, "gearbox manual").json()["snippets"]
    assert [(s["text"], s["version"]) for s in snippets] == [("Version one of the gearbox manual.", 1)]


def test_a_jobs_documents_are_written_in_groups_and_a_failure_still_names_its_document(client, monkeypatch) -> None:
    """Groups of documents are one replace each (not one transaction per document); when a
    group's replace fails the job goes document by document: the documents before the
    failing one are written, it and the ones after keep their previous version."""
    from ragspine.service import ingest as ingest_module

    headers = new_tenant(client)
    new_library(client, headers, "hb")
    ctx = client.app.state.service
    index = ctx.index(ctx.store.get_library("acme", "hb"))
    groups: list[int] = []
    real = index.replace_docs
    monkeypatch.setattr(index, "replace_docs", lambda docs, **kw: (groups.append(len(docs)), real(docs, **kw))[1])
    monkeypatch.setattr(ingest_module, "GROUP_TARGET_S", 60.0)  # sizes grow 1, 2, 4, ... on any machine
    first = [doc(f"d{i:02d}", f"Part {i} of the gearbox manual, version one.") for i in range(40)]
    job = ingest(client, headers, "hb", *first)
    assert job["state"] == "succeeded" and job["chunks"] == 40
    assert groups == [1, 2, 4, 8, 16, 9]  # one replace per group, sizes doubling from one document
    store = index.store
    real_many = store.replace_many

    def refuse_d17(docs):
        if any(d.doc_id == "d17" for d in docs):
            raise RuntimeError("disk full")
        return real_many(docs)

    monkeypatch.setattr(store, "replace_many", refuse_d17)
    second = [doc(f"d{i:02d}", f"Part {i} of the gearbox manual, version two.") for i in range(40)]
    job = ingest(client, headers, "hb", *second)
    assert job["state"] == "failed" and "'d17'" in job["error"] and "disk full" in job["error"], job
    assert job["progress"] == "17/40"
    versions = {c.doc_id: c.version for c in store.iter_chunks()}
    assert versions == {f"d{i:02d}": 2 if i < 17 else 1 for i in range(40)}


def test_jobs_are_private_to_their_tenant(client) -> None:
    acme, globex = new_tenant(client, "acme"), new_tenant(client, "globex")
    new_library(client, acme, "hb")
    job = ingest(client, acme, "hb", doc("d1", "text"))
    assert client.get(f"/v1/jobs/{job['job_id']}", headers=globex).status_code == 404
    assert client.get("/v1/jobs/nope", headers=acme).status_code == 404
    assert client.get("/v1/jobs", headers=globex).json() == []


@pytest.mark.parametrize(
    "body, status",
    [
        ({"doc_id": "m", "text": "board memo", "sensitivity": ["RESTRICTED"]}, 422),
        ({"doc_id": "m", "text": "board memo", "metadata": {"Sensitivity": "RESTRICTED"}}, 422),
        ({"doc_id": "m", "text": "board memo", "metadata": {" sensitivity ": "PUBLIC"}}, 422),
        ({"doc_id": "m", "text": "board memo", "sensitivity": "  Restricted "}, 202),
    ],
)
def test_json_sensitivity_fails_closed(client, body, status) -> None:
    headers = new_tenant(client)
    new_library(client, headers, "hb")
    r = client.post("/v1/libraries/hb/documents", json=body, headers=headers)
    assert r.status_code == status, r.text
    r = client.post("/v1/libraries/hb/documents/batch", json={"documents": [body]}, headers=headers)
    assert r.status_code == status, r.text
    if status == 202:
        wait_job(client, headers, r.json()["job_id"])
        assert client.post("/v1/retrieve", json={"query": "board memo"}, headers=headers).json()["snippets"] == []


@pytest.mark.parametrize("front", [b"sensitivity: [RESTRICTED]", b"Sensitivity: RESTRICTED\nsensitivity: PUBLIC"])
def test_upload_sensitivity_fails_closed(client, front) -> None:
    headers = new_tenant(client)
    new_library(client, headers, "hb")
    raw = b"---\n" + front + b"\n---\nboard memo\n"
    r = client.post("/v1/libraries/hb/documents/upload", files={"file": ("m.md", raw, "text/markdown")}, headers=headers)
    assert r.status_code == 422 and "sensitivity" in r.text.lower()


def test_upload_with_a_case_variant_key_is_restricted(client) -> None:
    headers = new_tenant(client)
    new_library(client, headers, "hb")
    raw = b"---\nSensitivity: restricted\n---\nZanzibar board memo\n"
    r = client.post("/v1/libraries/hb/documents/upload", files={"file": ("m.md", raw, "text/markdown")}, headers=headers)
    assert r.status_code == 202, r.text
    assert wait_job(client, headers, r.json()["job_id"])["state"] == "succeeded"
    assert client.post("/v1/retrieve", json={"query": "zanzibar board memo"}, headers=headers).json()["snippets"] == []


def test_an_upload_cannot_choose_its_own_chunker(client) -> None:
    headers = new_tenant(client)
    new_library(client, headers, "hb")
    r = client.post("/v1/libraries/hb/documents/upload", files={"file": ("a.md", b"---\nchunker: laws\n---\ntext\n", "text/markdown")},
                    headers=headers)
    assert r.status_code == 422 and "chunker" in r.text and "POST /v1/libraries" in r.text, r.text


@pytest.mark.parametrize("front, form", [("RESTRICTED", "PUBLIC"), ("INTERNAL", "restricted"), ("[RESTRICTED]", "PUBLIC")])
def test_a_form_label_never_opens_a_restricted_file_nor_the_reverse(client, front, form) -> None:
    """RESTRICTED from either side wins: the form's label overrides the file's otherwise."""
    headers = new_tenant(client)
    new_library(client, headers, "hb")
    raw = f"---\nsensitivity: '{front}'\n---\nZanzibar board memo\n".encode()
    r = client.post("/v1/libraries/hb/documents/upload", files={"file": ("m.md", raw, "text/markdown")},
                    data={"sensitivity": form}, headers=headers)
    assert r.status_code == 202, r.text
    assert wait_job(client, headers, r.json()["job_id"])["state"] == "succeeded"
    assert client.post("/v1/retrieve", json={"query": "zanzibar board memo"}, headers=headers).json()["snippets"] == []


def test_a_form_label_overrides_an_open_files_label(client) -> None:
    headers = new_tenant(client)
    new_library(client, headers, "hb")
    raw = b"---\nsensitivity: INTERNAL\n---\nZanzibar board memo\n"
    r = client.post("/v1/libraries/hb/documents/upload", files={"file": ("m.md", raw, "text/markdown")},
                    data={"sensitivity": "PUBLIC"}, headers=headers)
    wait_job(client, headers, r.json()["job_id"])
    snippets = client.post("/v1/retrieve", json={"query": "zanzibar board memo"}, headers=headers).json()["snippets"]
    assert snippets and {s["sensitivity"] for s in snippets} == {"PUBLIC"}
