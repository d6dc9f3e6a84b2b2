"""No catalog id (``<tenant>/<library>``) in what a tenant reads, on both stacks: a ``raptor:
true`` library without a tree answered Dify's ``/retrieval`` and ``/v1/answer`` with ``library
'ta/rl20' has no RAPTOR tree: run `ragspine raptor build --library ta/rl20``` (the unit cases:
tests/unit/service/test_tenant_ids.py)."""

from __future__ import annotations

from tests.service.conftest import Service, ok_job
from tests.unit.service.conftest import doc, ingest, new_library, new_tenant


def test_error_bodies_name_the_library_never_the_catalog_id(service: Service) -> None:
    client = service.client
    headers = new_tenant(client, "ta")
    new_library(client, headers, "rl20", raptor=True)
    ok_job(service, ingest(client, headers, "rl20", doc("d1", "The gearbox warranty lasts 36 months.")))
    for path, body in (
        ("/retrieval", {"knowledge_id": "rl20", "query": "gearbox warranty"}),
        ("/v1/answer", {"question": "How long is the gearbox warranty?", "libraries": ["rl20"]}),
        ("/v1/answer", {"question": "How long is the gearbox warranty?"}),
        ("/v1/retrieve", {"query": "gearbox warranty"}),
    ):
        r = client.post(path, json=body, headers=headers)
        assert r.status_code == 400 and "ta/" not in r.text, (path, r.status_code, r.text)
        assert "library 'rl20' has no RAPTOR tree: POST /v1/libraries/rl20/raptor builds it" in r.text, (path, r.text)
    for job in client.get("/v1/jobs", headers=headers).json():
        assert "ta/" not in str(job), job
