"""RAPTOR over HTTP: POST/GET /v1/libraries/{name}/raptor (counted and timed in /metrics), and
``/v1/retrieve``'s ``raptor`` — checked (economy, no tree: 400), tenant-scoped, byte-identical off."""

from __future__ import annotations

import json

from fastapi.testclient import TestClient

from ragspine.service.app import create_app
from tests.unit.service.conftest import doc, ingest, make_settings, new_library, new_tenant, retrieve

SECRET = "xylophonequartz"
DOCS = [
    doc("g1", "Gearbox supply delays slowed the northern plant. Gearbox castings were late."),
    doc("g2", "Gearbox supply delays hit the south plant too. Castings for gearbox lines arrived late."),
    doc("g3", "The gearbox supplier missed castings deadlines and supply delays grew."),
    doc("w1", "Warranty claims rose in 2023. Warranty service handled claims within five days."),
    doc("memo", f"Board memo on gearbox supply delays {SECRET}.", sensitivity="RESTRICTED"),
]


def test_build_show_and_retrieve_with_raptor(tmp_path) -> None:
    settings = make_settings(tmp_path, RAGSPINE_RAPTOR_THRESHOLD="0.3")
    with TestClient(create_app(settings)) as client:
        headers = new_tenant(client)
        new_library(client, headers, "hb")
        ingest(client, headers, "hb", *DOCS)
        assert client.get("/v1/libraries/hb/raptor", headers=headers).json()["state"] == "none"
        r = retrieve(client, headers, "gearbox castings", raptor=True)
        assert r.status_code == 400 and "POST /v1/libraries/hb/raptor" in r.json()["detail"]
        plain = retrieve(client, headers, "gearbox castings").json()
        built = client.post("/v1/libraries/hb/raptor", headers=headers)
        assert built.status_code == 200, built.text
        tree = built.json()
        assert tree["outcome"] == "built" and tree["state"] == "current" and tree["nodes"] >= 1 and tree["chunks"] == 4
        again = client.post("/v1/libraries/hb/raptor", json={"force": False}, headers=headers).json()
        assert again["outcome"] == "unchanged" and again["nodes"] == tree["nodes"]
        assert retrieve(client, headers, "gearbox castings").json() == plain  # off by default: the same answer
        assert retrieve(client, headers, "gearbox castings", raptor=False).json() == plain
        on = retrieve(client, headers, "gearbox castings", raptor=True)
        assert on.status_code == 200 and on.json()["snippets"]
        assert SECRET not in json.dumps(on.json()) and all(s["library_id"] == "hb" for s in on.json()["snippets"])
        ingest(client, headers, "hb", doc("g1", "Gearbox supply delays were resolved."))  # the tree goes stale
        assert client.get("/v1/libraries/hb/raptor", headers=headers).json()["state"] == "stale"
        other = new_tenant(client, "other")
        assert client.post("/v1/libraries/hb/raptor", headers=other).status_code == 404  # another tenant's library
        assert client.get("/v1/libraries/hb/raptor", headers=other).status_code == 404
        text = client.get("/metrics").text
    assert 'ragspine_raptor_builds_total{outcome="built"} 1.0' in text
    assert 'ragspine_raptor_builds_total{outcome="unchanged"} 1.0' in text
    assert "ragspine_raptor_build_duration_seconds_count 1.0" in text
    assert f"ragspine_raptor_nodes_built_total {float(tree['nodes'])}" in text


def test_an_economy_library_is_refused(tmp_path) -> None:
    with TestClient(create_app(make_settings(tmp_path))) as client:
        headers = new_tenant(client)
        new_library(client, headers, "eco", embedding_model="none")
        ingest(client, headers, "eco", *DOCS[:2])
        r = client.post("/v1/libraries/eco/raptor", headers=headers)
        assert r.status_code == 400 and "economy" in r.json()["detail"]
        r = retrieve(client, headers, "gearbox", raptor=True)
        assert r.status_code == 400 and "economy" in r.json()["detail"]
        assert retrieve(client, headers, "gearbox", raptor=False).status_code == 200


def test_raptor_on_by_default_needs_a_tree_and_a_request_may_turn_it_off(tmp_path) -> None:
    with TestClient(create_app(make_settings(tmp_path, RAGSPINE_RAPTOR="1", RAGSPINE_RAPTOR_THRESHOLD="0.3"))) as client:
        headers = new_tenant(client)
        new_library(client, headers, "hb")
        ingest(client, headers, "hb", *DOCS)
        assert retrieve(client, headers, "gearbox").status_code == 400
        assert retrieve(client, headers, "gearbox", raptor=False).status_code == 200
        assert client.post("/v1/libraries/hb/raptor", headers=headers).status_code == 200
        assert retrieve(client, headers, "gearbox").status_code == 200
