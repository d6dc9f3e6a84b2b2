"""``POST /v1/facts``, ``GET``/``POST /v1/metric`` and ``POST /v1/answer`` on the embedded stack:
row-level 422s that write nothing, the three statuses, the agent's routes with library names
(never the tenant prefix), and clear 4xx for bad input."""

from __future__ import annotations

import re

from tests.unit.service.conftest import doc, ingest, new_library, new_tenant

ROWS = [
    {"metric": "revenue", "entity": "Kestrel", "period": "Q3 2024", "value": 182, "unit": "EUR_M",
     "source_doc_id": "kestrel/q3", "source_locator": "para 1", "valid_as_of": "2024-10-30"},
    {"metric": "gross margin", "entity": "Kestrel", "period": "2024Q3", "value": 41.5, "unit": "percent",
     "source_doc_id": "kestrel/q3", "source_locator": "para 5", "valid_as_of": "2024-10-30"},
    {"metric": "net profit", "entity": "Kestrel", "period": "2024Q3", "value": "-3", "unit": "EUR_M", "sensitivity": "RESTRICTED",
     "source_doc_id": "kestrel/memo", "source_locator": "para 2", "valid_as_of": "2024-10-20"},
]
RESULTS = "Kestrel Robotics reported third-quarter revenue of 182 million euros; shipments slipped after a board failed testing."
MEMO = "Board memo: net profit was minus 3 million euros because revenue was reversed. zebraquartz"


def _tenant(client, name="acme"):
    headers = new_tenant(client, name)
    new_library(client, headers, "kb", description="Kestrel results")
    return headers


def test_facts_ingest_and_metric(client) -> None:
    headers = _tenant(client)
    r = client.post("/v1/facts", json={"library": "kb", "facts": ROWS}, headers=headers)
    assert r.status_code == 200, r.text
    assert r.json() == {"library": "kb", "facts": 3, "sources": ["kestrel/q3", "kestrel/memo"], "restricted": 1}

    found = client.get("/v1/metric", params={"metric": "revenue", "entity": "KSTR", "period": "2024Q3"}, headers=headers).json()
    assert (found["status"], found["value"], found["library"], found["source_doc_id"]) == ("found", "182", "kb", "kestrel/q3")
    margin = client.post("/v1/metric", json={"metric": "毛利率", "entity": "红隼", "period": "2024年第三季度", "libraries": ["kb"]},
                         headers=headers).json()
    assert (margin["status"], margin["value"], margin["language"]) == ("found", "41.5", "zh")
    for body in ({"metric": "net profit", "entity": "Kestrel", "period": "2024Q3"},  # RESTRICTED: as if absent
                 {"metric": "revenue", "entity": "Kestrel", "period": "2023Q3"}):
        missing = client.post("/v1/metric", json=body, headers=headers).json()
        assert missing["status"] == "not_found" and missing["library"] is None and not re.search(r"\d", str(missing))
    odd = client.post("/v1/metric", json={"metric": "EBITDA", "entity": "Kestrel", "period": "Q5 2024"}, headers=headers).json()
    assert (odd["status"], odd["params"]) == ("unrecognized_param", ["metric", "period"])


def test_a_bad_row_is_a_422_naming_row_and_field_and_writes_nothing(client) -> None:
    headers = _tenant(client)
    assert client.post("/v1/facts", json={"library": "kb", "facts": ROWS[:1]}, headers=headers).status_code == 200
    bad = [dict(ROWS[0], value=999), dict(ROWS[1], value="1,200"), dict(ROWS[1], metric="EBITDA", source_doc_id="other")]
    r = client.post("/v1/facts", json={"library": "kb", "facts": bad}, headers=headers)
    assert r.status_code == 422
    errors = r.json()["errors"]
    assert [(e["row"], e["field"]) for e in errors] == [(2, "value"), (3, "metric")]
    assert "nothing was written" in r.json()["detail"]
    kept = client.get("/v1/metric", params={"metric": "revenue", "entity": "Kestrel", "period": "2024Q3"}, headers=headers).json()
    assert kept["value"] == "182"  # the good first row of the bad request was not written either
    for body, status in (({"library": "kb", "facts": []}, 422), ({"library": "nope", "facts": ROWS}, 404),
                         ({"library": "kb", "facts": ["x"]}, 422)):
        assert client.post("/v1/facts", json=body, headers=headers).status_code == status
    raw = '{"library": "kb", "facts": [{"metric": "revenue", "value": NaN, "unit": "\\ud800"}]}'
    r = client.post("/v1/facts", content=raw.encode(), headers={**headers, "Content-Type": "application/json"})
    assert r.status_code == 422 and {e["field"] for e in r.json()["errors"]} >= {"value"}, r.text


CSV = """metric,entity,period,value,unit,source_doc_id,source_locator,valid_as_of,sensitivity
revenue,Kestrel,Q3 2024,182,EUR_M,kestrel/q3,para 1,2024-10-30,
gross margin,Kestrel,2024Q3,41.5,percent,kestrel/q3,"para 5, table 2",2024-10-30,

net profit,Kestrel,2024Q3,-3,EUR_M,kestrel/memo,para 2,2024-10-20,RESTRICTED
"""


def test_facts_as_csv_are_read_like_a_facts_file(client) -> None:
    headers = _tenant(client)
    r = client.post("/v1/facts", json={"library": "kb", "csv": "\ufeff" + CSV}, headers=headers)  # a BOM is ignored
    assert r.status_code == 200, r.text
    assert r.json() == {"library": "kb", "facts": 3, "sources": ["kestrel/q3", "kestrel/memo"], "restricted": 1}
    margin = client.get("/v1/metric", params={"metric": "gross margin", "entity": "Kestrel", "period": "2024Q3"}, headers=headers).json()
    assert (margin["status"], margin["value"], margin["source_locator"]) == ("found", "41.5", "para 5, table 2")


def test_a_bad_csv_row_is_a_422_naming_row_field_and_line_and_writes_nothing(client) -> None:
    headers = _tenant(client)
    assert client.post("/v1/facts", json={"library": "kb", "facts": ROWS[:1]}, headers=headers).status_code == 200
    bad = CSV.replace("182,EUR_M", "999,EUR_M").replace("2024Q3,41.5", "2024Q3,\"1,200\"").replace("net profit,", "EBITDA,")
    r = client.post("/v1/facts", json={"library": "kb", "csv": bad}, headers=headers)
    assert r.status_code == 422 and r.json()["detail"].startswith("csv: 2 problems, nothing was written")
    assert [(e["row"], e["field"], e["line"]) for e in r.json()["errors"]] == [(2, "value", 3), (3, "metric", 5)]  # line 4 is blank
    kept = client.get("/v1/metric", params={"metric": "revenue", "entity": "Kestrel", "period": "2024Q3"}, headers=headers).json()
    assert kept["value"] == "182"  # the good first row of the bad file was not written either
    short = client.post("/v1/facts", json={"library": "kb", "csv": CSV.replace(",para 2,2024-10-20,RESTRICTED", "")}, headers=headers)
    assert short.status_code == 422 and [(e["row"], e["line"]) for e in short.json()["errors"]] == [(3, 5)]
    assert "6 cells" in short.json()["errors"][0]["message"]
    header = client.post("/v1/facts", json={"library": "kb", "csv": "metric,entity,colour\nrevenue,Kestrel,red\n"}, headers=headers)
    assert header.status_code == 422 and {(e["row"], e["field"]) for e in header.json()["errors"]} >= {(0, "colour"), (0, "period")}
    broken = client.post("/v1/facts", json={"library": "kb", "csv": CSV + '"unterminated'}, headers=headers)
    assert broken.status_code == 422 and "not valid CSV" in broken.json()["detail"]
    for body in ({"library": "kb"}, {"library": "kb", "facts": ROWS, "csv": CSV}, {"library": "kb", "csv": ""}):
        assert client.post("/v1/facts", json=body, headers=headers).status_code == 422
    raw = '{"library": "kb", "csv": "metric,entity,period,value,source_doc_id,source_locator,valid_as_of\\nrevenue,\\ud800,2024Q3,1,d,p,2024-10-30"}'
    r = client.post("/v1/facts", content=raw.encode(), headers={**headers, "Content-Type": "application/json"})
    assert r.status_code == 422 and "body.csv" in r.json()["message"], r.text  # a lone surrogate is no text
    rows = "metric,entity,period,value,source_doc_id,source_locator,valid_as_of\n" + "revenue,Kestrel,2024Q3,1,d,p,2024-10-30\n" * 10_001
    many = client.post("/v1/facts", json={"library": "kb", "csv": rows}, headers=headers)
    assert many.status_code == 422 and "at most 10,000" in many.json()["detail"]


def test_a_csv_body_over_the_size_limit_is_a_413(tmp_path) -> None:
    from fastapi.testclient import TestClient

    from ragspine.service.app import create_app
    from tests.unit.service.conftest import make_settings

    with TestClient(create_app(make_settings(tmp_path, RAGSPINE_MAX_BODY_BYTES="4096"))) as small:
        headers = _tenant(small)
        r = small.post("/v1/facts", json={"library": "kb", "csv": CSV * 20}, headers=headers)
        assert r.status_code == 413 and "RAGSPINE_MAX_BODY_BYTES" in r.text
        assert small.post("/v1/facts", json={"library": "kb", "csv": CSV}, headers=headers).status_code == 200


def test_answer_routes_structured_narrative_composite(client) -> None:
    headers = _tenant(client)
    client.post("/v1/facts", json={"library": "kb", "facts": ROWS}, headers=headers)
    job = ingest(client, headers, "kb", doc("results", RESULTS), doc("memo", MEMO, sensitivity="RESTRICTED"))
    assert job["state"] == "succeeded", job

    structured = client.post("/v1/answer", json={"question": "What was Kestrel's revenue in Q3 2024?"}, headers=headers).json()
    assert structured["route"] == "structured" and structured["libraries"] == ["kb"]
    assert [s["kind"] for s in structured["sources"]] == ["fact"] and structured["sources"][0]["library_id"] == "kb"

    composite = client.post("/v1/answer", json={"question": "Why did Kestrel's Q3 revenue fall, and by how much?", "as_of": "2024-11-15"},
                            headers=headers).json()
    assert composite["route"] == "composite"
    assert [s["kind"] for s in composite["sources"]] == ["fact", "chunk"]
    assert composite["sources"][1]["doc_id"] == "results" and composite["sources"][1]["library_id"] == "kb"
    assert "zebraquartz" not in str(composite) and "acme/" not in str(composite)

    narrative = client.post("/v1/answer", json={"question": "Why did net profit fall?", "history": [
        {"role": "user", "content": "Net profit was 77 million."}]}, headers=headers).json()
    assert narrative["route"] == "narrative" and "77" not in narrative["text"] and "zebraquartz" not in str(narrative)


def test_answer_bad_input_is_4xx(client) -> None:
    headers = _tenant(client)
    for body in ({"question": ""}, {"question": "x", "as_of": "2024-13"}, {"question": "x", "history": [{"role": "bot", "content": "x"}]},
                 {"question": "x", "top_k": 0}, {"question": "x", "colour": 1}, {"question": "x" * 4001}):
        assert client.post("/v1/answer", json=body, headers=headers).status_code == 422, body
    assert client.post("/v1/answer", json={"question": "x", "as_of": "2024-02-30"}, headers=headers).status_code == 400
    assert client.post("/v1/answer", json={"question": "x", "libraries": ["nope"]}, headers=headers).status_code == 404
    r = client.post("/v1/answer", json={"question": "What was Kestrel's revenue in Q3 2024?"}, headers=new_tenant(client, "empty"))
    assert r.status_code == 200 and r.json()["structured"]["status"] == "not_found" and r.json()["libraries"] == []


def test_a_bare_quarter_against_an_as_of_date_outside_the_calendar_is_unrecognized_not_a_500(client) -> None:
    """Found by schemathesis: "Q3" counted from 0001-01-01 is year 0; the period is then not
    resolved (as without an as-of date), never a server error."""
    headers = _tenant(client)
    client.post("/v1/facts", json={"library": "kb", "facts": ROWS}, headers=headers)
    for as_of in ("0001-01-01", "9999-12-31"):
        r = client.post("/v1/answer", json={"question": "What was Kestrel's revenue in Q3?", "as_of": as_of}, headers=headers)
        assert r.status_code == 200, (as_of, r.text)
        structured = r.json()["structured"]
        assert structured["status"] == "unrecognized_param" and "period" in structured["text"], structured
    found = client.post("/v1/answer", json={"question": "What was Kestrel's revenue in Q3?", "as_of": "2024-11-15"}, headers=headers)
    assert found.json()["structured"]["status"] == "found"
