"""Labels that look like RESTRICTED over HTTP, on both stacks (issue 25).

Every label of ``ragspine.testing.lookalikes`` (a zero-width space, a BOM, full-width, Cyrillic,
Greek and mathematical letters, accents ...) given as a JSON document's sensitivity, in a batch,
in an uploaded file's front matter and as an upload's form field is stored as RESTRICTED: no
``/v1/retrieve`` and no Dify answer ever holds it, while an open document with the same words
comes back. As a fact's sensitivity (JSON rows and CSV) it is counted RESTRICTED and
``/v1/metric`` answers ``not_found``. Front matter that writes a key twice or ``sensitivity:
null`` is refused with 422 and no job; so is ``"sensitivity": null`` in JSON. The facts route
bounds what it does and says: a 20,000-key row and a 40,000-column header are one short 422
naming MAX_FACT_COLUMNS, a key held by a RESTRICTED fact answers exactly like one held by an
open fact (no source named), and a formula cell is refused.
"""

from __future__ import annotations

import json
import time

from ragspine.structured.ingest import CLASH_MESSAGE, MAX_FACT_COLUMNS
from ragspine.testing.lookalikes import RESTRICTED_LOOKALIKES
from tests.service.conftest import Service, ok_job
from tests.unit.service.conftest import doc, ingest, new_library, new_tenant, wait_job

SECRET = "KESTREL"
MEMO = f"Board memo: the zanzibar merger closes in May under the codename {SECRET}."
OPEN = "Press note: the zanzibar merger was discussed at the board."
LABELS = list(RESTRICTED_LOOKALIKES.values())
FACT = {"metric": "revenue", "entity": "Kestrel", "period": "2024Q3", "value": 182, "unit": "EUR_M",
        "source_doc_id": "kestrel/board-memo-q3", "source_locator": "para 1", "valid_as_of": "2024-10-30"}


def _upload(service: Service, headers: dict, name: str, content: str, **form: str) -> None:
    r = service.client.post("/v1/libraries/kb/documents/upload", files={"file": (name, content.encode(), "text/markdown")},
                            data=form, headers=headers)
    assert r.status_code == 202, r.text
    ok_job(service, wait_job(service.client, headers, r.json()["job_id"]))


def test_lookalike_labels_are_never_served_on_any_upload_path(service: Service) -> None:
    client = service.client
    headers = new_tenant(client)
    new_library(client, headers, "kb", retrieval_mode="hybrid")
    ok_job(service, ingest(client, headers, "kb", doc("memo-json", MEMO, sensitivity=LABELS[0])))
    ok_job(service, ingest(client, headers, "kb", *[doc(f"memo-batch-{i}", f"{MEMO} copy {i}", sensitivity=label)
                                                     for i, label in enumerate(LABELS)]))
    for i, label in enumerate(LABELS):
        _upload(service, headers, f"memo-{i}.md", f"---\ndoc_id: memo-file-{i}\nsensitivity: {json.dumps(label, ensure_ascii=False)}\n---\n{MEMO}\n")
    _upload(service, headers, "memo-form.md", f"{MEMO}\n", sensitivity=LABELS[4], doc_id="memo-form")
    ok_job(service, ingest(client, headers, "kb", doc("open", OPEN, sensitivity="PUBLIC")))
    assert len(client.get("/v1/libraries/kb/documents", headers=headers).json()["doc_ids"]) == 2 * len(LABELS) + 3  # all stored
    r = client.post("/v1/retrieve", json={"query": "zanzibar merger codename board memo", "top_k": 50}, headers=headers)
    assert r.status_code == 200 and SECRET not in r.text, r.text[:500]
    assert [s["doc_id"] for s in r.json()["snippets"]] == ["open"]


def test_front_matter_and_json_that_would_fail_open_are_refused(service: Service) -> None:
    client = service.client
    headers = new_tenant(client)
    new_library(client, headers, "kb")
    for front, words in (("sensitivity: RESTRICTED\nsensitivity: PUBLIC", "sets 'sensitivity' twice"),
                         ("sensitivity: null", "sensitivity is null"),
                         ("Sensitivity: RESTRICTED\nｓｅｎｓｉｔｉｖｉｔｙ: PUBLIC", "both set sensitivity")):
        r = client.post("/v1/libraries/kb/documents/upload", headers=headers,
                        files={"file": ("memo.md", f"---\n{front}\n---\n{MEMO}\n".encode(), "text/markdown")})
        assert r.status_code == 422 and words in r.text, r.text
    r = client.post("/v1/libraries/kb/documents", json={"doc_id": "m", "text": MEMO, "sensitivity": None}, headers=headers)
    assert r.status_code == 422 and "sensitivity is null" in r.text, r.text
    assert client.get("/v1/jobs", headers=headers).json() == []


def test_lookalike_fact_labels_are_restricted(service: Service) -> None:
    client = service.client
    headers = new_tenant(client)
    new_library(client, headers, "kb")
    rows = [{**FACT, "period": f"{2010 + i}Q1", "sensitivity": label} for i, label in enumerate(LABELS)]
    r = client.post("/v1/facts", json={"library": "kb", "facts": rows}, headers=headers)
    assert r.status_code == 200 and r.json()["restricted"] == len(LABELS), r.text
    csv = "metric,entity,period,value,source_doc_id,source_locator,valid_as_of,sensitivity\n" + "".join(
        f"gross margin,Kestrel,{2010 + i}Q1,4,kestrel/memo-csv,p,2024-10-30,{label}\n" for i, label in enumerate(LABELS))
    r = client.post("/v1/facts", json={"library": "kb", "csv": csv}, headers=headers)
    assert r.status_code == 200 and r.json()["restricted"] == len(LABELS), r.text
    for metric in ("revenue", "gross margin"):
        for i in range(len(LABELS)):
            answer = client.get("/v1/metric", params={"metric": metric, "entity": "Kestrel", "period": f"{2010 + i}Q1"},
                                headers=headers).json()
            assert answer["status"] == "not_found" and SECRET not in json.dumps(answer), answer
    r = client.post("/v1/facts", json={"library": "kb", "facts": [{**FACT, "sensitivity": None}]}, headers=headers)
    assert r.status_code == 422 and "is null" in r.text


def test_the_facts_route_bounds_its_work_and_its_errors(service: Service) -> None:
    client = service.client
    headers = new_tenant(client)
    new_library(client, headers, "kb")
    wide = {**FACT, **{f"unknown_{i}": "x" for i in range(20_000)}}
    r = client.post("/v1/facts", json={"library": "kb", "facts": [wide]}, headers=headers)
    assert r.status_code == 422 and f"at most {MAX_FACT_COLUMNS} (MAX_FACT_COLUMNS)" in r.text and len(r.content) < 2000, len(r.content)
    header = "metric,entity,period,value,source_doc_id,source_locator,valid_as_of," + ",".join(f"c{i}" for i in range(40_000))
    start = time.perf_counter()
    r = client.post("/v1/facts", json={"library": "kb", "csv": header + "\n"}, headers=headers)
    assert r.status_code == 422 and "40,007 columns" in r.text and len(r.content) < 2000
    assert time.perf_counter() - start < 2.0  # was 67.6 s: a quadratic duplicate-column check
    many = [{**FACT, "period": f"2023-{m:02d}", **{f"k{i}": "x" for i in range(40)}} for m in range(1, 13)] * 50
    r = client.post("/v1/facts", json={"library": "kb", "facts": many}, headers=headers)
    assert r.status_code == 422 and len(r.json()["errors"]) == 100 and "3600 problems" in r.json()["detail"] and len(r.content) < 40_000
    r = client.post("/v1/facts", json={"library": "kb", "facts": [{**FACT, "source_locator": '=HYPERLINK("http://evil.example","p")'}]},
                    headers=headers)
    assert r.status_code == 422 and "like a spreadsheet formula" in r.text


def test_a_clash_with_a_restricted_fact_reads_like_a_clash_with_an_open_one(service: Service) -> None:
    client = service.client
    headers = new_tenant(client)
    new_library(client, headers, "kb")
    held = [{**FACT, "sensitivity": "RESTRICTED"},
            {**FACT, "metric": "gross margin", "value": 41, "unit": "percent", "source_doc_id": "kestrel/q3-results"}]
    assert client.post("/v1/facts", json={"library": "kb", "facts": held}, headers=headers).status_code == 200
    answers = []
    for metric in ("revenue", "gross margin"):
        r = client.post("/v1/facts", json={"library": "kb", "facts": [{**FACT, "metric": metric, "source_doc_id": "probe"}]}, headers=headers)
        assert r.status_code == 422 and "kestrel/" not in r.text, r.text
        answers.append(r.json())
    assert answers[0] == answers[1] and answers[0]["errors"][0]["message"] == CLASH_MESSAGE
