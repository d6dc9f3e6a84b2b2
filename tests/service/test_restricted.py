"""RESTRICTED isolation at the HTTP exits, on both stacks.

A RESTRICTED board memo is the best match for the query — lexically (its words are the
query's) and, with the deterministic embedding, as a vector — in a library of every
retrieval mode, uploaded as JSON, in a batch and as a file with front matter, with the
sensitivity spelled three ways. No response of ``/v1/retrieve`` (every mode the API accepts,
one library or several, with and without filters, with the retry without filters, top_k 1)
or of Dify's ``/retrieval`` (every library, with conditions) ever contains it: not its
doc id, not its text, not a RESTRICTED snippet. A control tenant holding the same memo as
PUBLIC gets it first for the same query, which shows the memo really is the best match.
"""

from __future__ import annotations

from typing import Any

from ragspine.retrieval.mode import RETRIEVAL_MODES
from tests.service.conftest import Service, ok_job
from tests.unit.service.conftest import doc, ingest, new_library, new_tenant, wait_job

QUERY = "zanzibar merger codename board"
SECRET = "KESTREL"
MEMO = f"Board memo: the zanzibar merger closes in May under the codename {SECRET}; the board approves the zanzibar merger."
NEWS = "Press release: a merger with a partner was announced to the board of the press club."
LIBRARY_MODES = ("auto", "hybrid", "vector", "economy")
SPELLINGS = ("RESTRICTED", "restricted", "Restricted", "rEsTrIcTeD")
RESTRICTED_IDS = {"memo", "memo-batch", "memo-file"}
FILTERS: list[Any] = [
    None,
    {"team": "board"},
    {"year": {"gte": 2024}},
    [{"field": "team", "op": "in", "value": ["board", "press"]}],
    {"team": {"ne": "press"}},
]
CONDITIONS: list[Any] = [
    None,
    {"logical_operator": "and", "conditions": [{"name": ["team"], "comparison_operator": "is", "value": "board"}]},
    {"logical_operator": "and", "conditions": [{"name": ["year"], "comparison_operator": "≥", "value": "2024"}]},
    {"logical_operator": None, "conditions": [{"name": ["team"], "comparison_operator": "in", "value": "board,press"}]},
]


def fill(service: Service, headers: dict, library: str, sensitivity: str) -> None:
    client = service.client
    ok_job(service, ingest(client, headers, library, doc("memo", MEMO, sensitivity=sensitivity, metadata={"year": 2024, "team": "board"})))
    ok_job(service, ingest(
        client, headers, library,
        doc("memo-batch", MEMO + " Copy for the archive.", sensitivity=sensitivity, metadata={"year": 2025, "team": "board"}),
        doc("news", NEWS, sensitivity="PUBLIC", metadata={"year": 2024, "team": "press"}),
    ))
    memo_md = f"---\ndoc_id: memo-file\nsensitivity: {sensitivity.lower()}\nyear: 2024\nteam: board\n---\n# Board memo\n\n{MEMO}\n"
    r = client.post(f"/v1/libraries/{library}/documents/upload", files={"file": ("memo.md", memo_md.encode(), "text/markdown")}, headers=headers)
    assert r.status_code == 202, r.text
    ok_job(service, wait_job(client, headers, r.json()["job_id"]))


def assert_clean(response: Any, where: str) -> list[str]:
    assert response.status_code == 200, (where, response.status_code, response.text[:300])
    assert SECRET not in response.text, where
    body = response.json()
    if "records" in body:
        ids = [r["metadata"]["document_id"] for r in body["records"]]
        sensitivities = [str(r["metadata"].get("sensitivity", "")) for r in body["records"]]
    else:
        ids = [s["doc_id"] for s in body["snippets"]]
        sensitivities = [s["sensitivity"] for s in body["snippets"]]
    assert not RESTRICTED_IDS & set(ids), (where, ids)
    assert all(s.upper() != "RESTRICTED" for s in sensitivities), (where, sensitivities)
    return ids


def test_restricted_never_leaves_through_the_api(service: Service) -> None:
    client = service.client
    headers = new_tenant(client, "acme")
    for mode, sensitivity in zip(LIBRARY_MODES, SPELLINGS, strict=False):
        library = f"r-{mode}"
        assert new_library(client, headers, library, description="board merger memos", retrieval_mode=mode)["retrieval_mode"] == mode
        fill(service, headers, library, sensitivity)
        assert sorted(client.get(f"/v1/libraries/{library}/documents", headers=headers).json()["doc_ids"]) == ["memo", "memo-batch", "memo-file", "news"]

    # the control: the same memo, PUBLIC, in another tenant, is the best match in every mode
    control = new_tenant(client, "control")
    new_library(client, control, "c")
    ok_job(service, ingest(client, control, "c", doc("memo", MEMO, sensitivity="PUBLIC"), doc("news", NEWS, sensitivity="PUBLIC")))
    for mode in RETRIEVAL_MODES:
        top = client.post("/v1/retrieve", json={"query": QUERY, "mode": mode, "top_k": 1}, headers=control).json()["snippets"]
        assert [s["doc_id"] for s in top] == ["memo"], mode
    assert client.post("/retrieval", json={"knowledge_id": "c", "query": QUERY}, headers=control).json()["records"][0]["metadata"]["document_id"] == "memo"

    libraries = [f"r-{mode}" for mode in LIBRARY_MODES]
    returned: set[str] = set()
    for mode in RETRIEVAL_MODES:
        for chosen in ([libraries[0]], libraries[2:], None):
            for filters in FILTERS:
                for extra in ({}, {"retry_without_filters": True, "top_k": 1}):
                    body = {"query": QUERY, "mode": mode, "filters": filters, "top_k": 50, **extra}
                    if chosen is not None:
                        body["libraries"] = chosen
                    ids = assert_clean(client.post("/v1/retrieve", json=body, headers=headers), str(body))
                    returned.update(ids)
    assert returned == {"news"}  # the queries did find things: everything but the memos

    for library in libraries:
        for condition in CONDITIONS:
            for top_k in (1, 10):
                body = {"knowledge_id": library, "query": QUERY, "retrieval_setting": {"top_k": top_k, "score_threshold": 0.0}}
                if condition is not None:
                    body["metadata_condition"] = condition
                ids = assert_clean(client.post("/retrieval", json=body, headers=headers), str(body))
                board_only = condition is not None and condition["conditions"][0]["value"] == "board"
                assert ids == ([] if board_only else ["news"]), (body, ids)


OPEN_DOCS = [
    doc("news", NEWS, sensitivity="PUBLIC", metadata={"year": 2024, "team": "press"}),
    doc("brief", "Brief: the merger codename is discussed at the board offsite in May.", metadata={"year": 2025, "team": "board"}),
    doc("note", "Note on zanzibar logistics for the press team.", metadata={"year": 2023, "team": "press"}),
]


def _answers(client: Any, headers: dict, library: str) -> list[Any]:
    """Every exposed answer of a battery of requests on one library (library names removed)."""
    out: list[Any] = []
    for mode in RETRIEVAL_MODES:
        for filters in FILTERS:
            for top_k in (1, 3, 10):
                body = {"query": QUERY, "mode": mode, "filters": filters, "top_k": top_k, "libraries": [library],
                        "retry_without_filters": True}
                r = client.post("/v1/retrieve", json=body, headers=headers)
                assert r.status_code == 200, r.text
                answer = r.json()
                out.append((mode, str(filters), top_k, answer["filters_dropped"],
                            [{k: v for k, v in s.items() if k != "library_id"} for s in answer["snippets"]]))
    for condition in CONDITIONS:
        for top_k in (1, 4):
            body = {"knowledge_id": library, "query": QUERY, "retrieval_setting": {"top_k": top_k, "score_threshold": 0.0}}
            if condition is not None:
                body["metadata_condition"] = condition
            r = client.post("/retrieval", json=body, headers=headers)
            assert r.status_code == 200, r.text
            out.append([{**rec, "metadata": {k: v for k, v in rec["metadata"].items() if k != "library"}} for rec in r.json()["records"]])
    return out


def test_restricted_documents_move_no_exposed_score(service: Service) -> None:
    """A library with its RESTRICTED memos and the same library without them answer every
    request identically: the same snippets, in the same order, with the same fused, BM25,
    vector and Dify scores (RESTRICTED chunks are not indexed: they change no statistic and
    take no rank)."""
    client = service.client
    headers = new_tenant(client, "twins")
    for library in ("with", "without"):
        new_library(client, headers, library)
        ok_job(service, ingest(client, headers, library, *OPEN_DOCS))
    fill_restricted = [doc(f"memo-{i}", MEMO + f" Copy {i}.", sensitivity=s, metadata={"year": 2024, "team": "board"})
                       for i, s in enumerate(SPELLINGS)]
    ok_job(service, ingest(client, headers, "with", *fill_restricted))
    with_memos, without = _answers(client, headers, "with"), _answers(client, headers, "without")
    assert any(entry[-1] for entry in without if isinstance(entry, tuple))  # the battery does find things
    assert with_memos == without
