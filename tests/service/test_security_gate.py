"""The security gate on every HTTP entry to the structured channel, the agent and the indexes, on
both stacks (the embedded default; PostgreSQL 18 + pgvector + Redis + an RQ worker).

``KESTREL_JP`` is deny-listed in each supported format — inline with one English form and the
glossary key, inline under another key naming only a Chinese form (denying a form denies its
key's other forms), and ``glossary: FILE`` + ``deny: [KEY]`` — and the library holds its Q3
revenue (40.25 million euros) as a fact and in a document. Every gated route — ``GET`` and
``POST /v1/metric``, ``/v1/answer``, ``/v1/retrieve``, Dify's ``/retrieval`` — refuses it by
its key, its code, each language's form, a homoglyph and spaced letters: the fixed refusal, no
number, no snippet. Kestrel China, not denied, is answered on the same service (the control).
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from ragspine.agent.messages import GATE_REFUSAL
from tests.service.conftest import ok_job, open_service
from tests.unit.service.conftest import doc, ingest, new_library, new_tenant

SECRET = "40.25"
FACTS = [
    {"metric": "revenue", "entity": "Kestrel Japan", "period": "2024Q3", "value": SECRET, "unit": "EUR_M",
     "source_doc_id": "kestrel/japan-q3-2024", "source_locator": "p. 2", "valid_as_of": "2024-10-30"},
    {"metric": "revenue", "entity": "Kestrel China", "period": "2024Q3", "value": 60, "unit": "EUR_M",
     "source_doc_id": "kestrel/china-q3-2024", "source_locator": "table 1", "valid_as_of": "2024-10-30"},
]
REPORT = f"Kestrel Japan quarterly report: Kestrel Japan revenue was {SECRET} million euros in the third quarter."
DENY_LISTS = {
    "inline": "entities:\n  KESTREL_JP:\n    en: [Kestrel Japan]\n",
    "inline-form": "entities:\n  RIVAL:\n    zh: [红隼日本]\n",
    "glossary": "glossary: glossary.yaml\ndeny: [KESTREL_JP]\n",
}
#: The denied entity by its key, its code, each language's form, a homoglyph (Cyrillic К е Ј а р)
#: and spaced letters.
FORMS = {
    "key": "KESTREL_JP", "code": "KSTR_JP", "en": "Kestrel Japan", "zh": "红隼日本", "ja": "ケストレル・ジャパン",
    "homoglyph": "\u041a\u0435str\u0435l \u0408\u0430\u0440\u0430n", "spaced": "K-e-s-t-r-e-l J-a-p-a-n",
}


@pytest.fixture(params=list(DENY_LISTS))
def gated(request, stack_environ, tmp_path):
    stack, environ = stack_environ
    (tmp_path / "glossary.yaml").write_text(
        resources.files("ragspine.structured").joinpath("data/glossary.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    deny = Path(tmp_path / "deny.yaml")
    deny.write_text(DENY_LISTS[request.param], encoding="utf-8")
    with open_service(stack, {**environ, "RAGSPINE_SECURITY_DENYLIST": str(deny)}, tmp_path) as service:
        headers = new_tenant(service.client)
        new_library(service.client, headers, "kb", description="Kestrel results")
        assert service.client.post("/v1/facts", json={"library": "kb", "facts": FACTS}, headers=headers).status_code == 200
        ok_job(service, ingest(service.client, headers, "kb", doc("kestrel/japan-q3-2024", REPORT)))
        yield service, headers


def _routes(client: Any, headers: dict[str, str], entity: str) -> dict[str, Any]:
    """Each gated route asked about ``entity``'s Q3 2024 revenue: its JSON answer."""
    question = f"What was {entity} revenue in Q3 2024?"
    metric = {"metric": "revenue", "entity": entity, "period": "2024Q3"}
    answers = {
        "GET /v1/metric": client.get("/v1/metric", params=metric, headers=headers),
        "POST /v1/metric": client.post("/v1/metric", json=metric, headers=headers),
        "POST /v1/answer": client.post("/v1/answer", json={"question": question}, headers=headers),
        "POST /v1/retrieve": client.post("/v1/retrieve", json={"query": f"{entity} revenue"}, headers=headers),
        "POST /retrieval": client.post("/retrieval", json={"knowledge_id": "kb", "query": f"{entity} revenue",
                                                          "retrieval_setting": {"top_k": 3}}, headers=headers),
    }
    for route, response in answers.items():
        assert response.status_code == 200, (route, response.text)
    return {route: response.json() for route, response in answers.items()}


def test_every_route_refuses_every_form_of_a_denied_entity_and_answers_others(gated) -> None:
    service, headers = gated
    for how, form in FORMS.items():
        for route, body in _routes(service.client, headers, form).items():
            where = f"{route} with the {how} form {form!r} ({service.stack} stack)"
            assert SECRET not in str(body) and "japan-q3" not in str(body), where
            if route.endswith("/metric"):
                assert body["status"] == "refused" and body["text"] in GATE_REFUSAL.values() and body["value"] == "", where
                assert body["refused"][0]["kind"] == "metric" and not re.search(r"\d", body["text"]), where
            elif route == "POST /v1/answer":
                assert body["route"] == "refused" and body["text"] in GATE_REFUSAL.values() and body["sources"] == [], where
            elif route == "POST /v1/retrieve":
                assert body["snippets"] == [] and body["refusal"], where
            else:
                assert body == {"records": []}, where
    answers = _routes(service.client, headers, "Kestrel China")  # the control: not denied, answered
    assert answers["GET /v1/metric"]["status"] == answers["POST /v1/metric"]["status"] == "found"
    assert answers["GET /v1/metric"]["value"] == "60"
    assert answers["POST /v1/answer"]["route"] == "structured" and "60 million euros" in answers["POST /v1/answer"]["text"]
    assert "refusal" not in answers["POST /v1/retrieve"]
