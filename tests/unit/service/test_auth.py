"""Tenants and API keys: issued once, stored hashed, listed by prefix, rotated, revoked."""

from __future__ import annotations

import time

import sqlalchemy as sa
from fastapi.testclient import TestClient

from ragspine.service.app import create_app
from ragspine.service.auth import hash_key, new_key, verify_key
from tests.unit.service.conftest import ADMIN, make_settings, new_library, new_tenant


def test_admin_creates_a_tenant_with_a_first_key_shown_once(client) -> None:
    r = client.post("/v1/admin/tenants", json={"tenant_id": "acme", "name": "ACME"}, headers=ADMIN)
    assert r.status_code == 201
    body = r.json()
    key = body["api_key"]["key"]
    assert key.startswith(body["api_key"]["prefix"] + "_") and len(key) > 50
    assert client.get("/v1/libraries", headers={"Authorization": f"Bearer {key}"}).status_code == 200
    listed = client.get("/v1/admin/tenants/acme/keys", headers=ADMIN).json()
    assert [k["prefix"] for k in listed] == [body["api_key"]["prefix"]]
    assert "key" not in listed[0] and "key_hash" not in listed[0]
    assert client.get("/v1/admin/tenants", headers=ADMIN).json()[0]["tenant_id"] == "acme"
    again = client.post("/v1/admin/tenants", json={"tenant_id": "acme"}, headers=ADMIN)
    assert again.status_code == 409


def test_only_the_hash_of_a_key_is_stored(client) -> None:
    headers = new_tenant(client)
    key = headers["Authorization"].split()[1]
    store = client.app.state.service.store
    with store.engine.connect() as conn:
        rows = [tuple(r) for r in conn.execute(sa.text("SELECT * FROM ragspine_api_key")).all()]
    flat = " ".join(str(v) for row in rows for v in row)
    assert key not in flat and hash_key(key) in flat


def test_admin_credential_is_required_and_checked(tmp_path) -> None:
    settings = make_settings(tmp_path, RAGSPINE_ADMIN_TOKEN="")
    with TestClient(create_app(settings)) as client:
        r = client.post("/v1/admin/tenants", json={"tenant_id": "acme"}, headers=ADMIN)
        assert r.status_code == 403 and "RAGSPINE_ADMIN_TOKEN" in r.json()["detail"]
    settings = make_settings(tmp_path / "b")
    with TestClient(create_app(settings)) as client:
        assert client.get("/v1/admin/tenants").status_code == 401
        assert client.get("/v1/admin/tenants", headers={"Authorization": "Bearer wrong"}).status_code == 401
        headers = new_tenant(client)
        assert client.get("/v1/admin/tenants", headers=headers).status_code == 401  # a tenant key is not admin


def test_every_tenant_call_needs_a_valid_key(client) -> None:
    new_tenant(client)
    r = client.get("/v1/libraries")
    assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
    assert client.get("/v1/libraries", headers={"Authorization": "Basic abc"}).status_code == 401
    bogus = "rsk_0123456789ab_" + "x" * 43
    assert client.get("/v1/libraries", headers={"Authorization": f"Bearer {bogus}"}).status_code == 401
    # unauthenticated calls are refused before their body is read
    r = client.post("/v1/libraries", content=b"{not json", headers={"Content-Type": "application/json"})
    assert r.status_code == 401


def test_rotate_ends_the_old_key_and_revoke_is_immediate(client) -> None:
    old = new_tenant(client)
    key_id = client.get("/v1/admin/tenants/acme/keys", headers=ADMIN).json()[0]["key_id"]
    r = client.post(f"/v1/admin/tenants/acme/keys/{key_id}/rotate", json={}, headers=ADMIN)
    assert r.status_code == 201
    new = {"Authorization": f"Bearer {r.json()['key']}"}
    assert client.get("/v1/libraries", headers=old).status_code == 401
    assert client.get("/v1/libraries", headers=new).status_code == 200
    keys = {k["key_id"]: k for k in client.get("/v1/admin/tenants/acme/keys", headers=ADMIN).json()}
    assert not keys[key_id]["active"] and keys[key_id]["revoked_at"]
    # a rotated-away key cannot be rotated again
    assert client.post(f"/v1/admin/tenants/acme/keys/{key_id}/rotate", json={}, headers=ADMIN).status_code == 404
    new_id = r.json()["key_id"]
    assert client.delete(f"/v1/admin/tenants/acme/keys/{new_id}", headers=ADMIN).json()["active"] is False
    assert client.get("/v1/libraries", headers=new).status_code == 401


def test_rotation_with_a_grace_period_keeps_the_old_key_until_it_expires(client) -> None:
    old = new_tenant(client)
    key_id = client.get("/v1/admin/tenants/acme/keys", headers=ADMIN).json()[0]["key_id"]
    r = client.post(f"/v1/admin/tenants/acme/keys/{key_id}/rotate", json={"grace_seconds": 3600}, headers=ADMIN)
    assert client.get("/v1/libraries", headers=old).status_code == 200  # still inside the grace period
    keys = {k["key_id"]: k for k in client.get("/v1/admin/tenants/acme/keys", headers=ADMIN).json()}
    assert keys[key_id]["expires_at"] and keys[key_id]["active"] and keys[r.json()["key_id"]]["active"]
    store = client.app.state.service.store
    token = old["Authorization"].split()[1]
    assert verify_key(store, token, now=time.time() + 3601) is None  # after it: refused
    # rotating it again during its grace period never postpones its end
    expires = keys[key_id]["expires_at"]
    again = client.post(f"/v1/admin/tenants/acme/keys/{key_id}/rotate", json={"grace_seconds": 100000}, headers=ADMIN)
    assert again.status_code == 201
    keys = {k["key_id"]: k for k in client.get("/v1/admin/tenants/acme/keys", headers=ADMIN).json()}
    assert keys[key_id]["expires_at"] == expires
    assert verify_key(store, token, now=time.time() + 3601) is None
    # a shorter grace does bring it forward; 0 revokes it now
    client.post(f"/v1/admin/tenants/acme/keys/{key_id}/rotate", json={"grace_seconds": 10}, headers=ADMIN)
    assert verify_key(store, token, now=time.time() + 60) is None and verify_key(store, token) == "acme"
    client.post(f"/v1/admin/tenants/acme/keys/{key_id}/rotate", json={"grace_seconds": 0}, headers=ADMIN)
    assert verify_key(store, token) is None


def test_keys_of_one_tenant_see_only_that_tenant(client) -> None:
    acme, globex = new_tenant(client, "acme"), new_tenant(client, "globex")
    new_library(client, acme, "shared-name")
    assert [lib["name"] for lib in client.get("/v1/libraries", headers=globex).json()] == []
    r = client.post("/v1/admin/tenants/nobody/keys", json={}, headers=ADMIN)
    assert r.status_code == 404


def test_verify_key_rejects_tampering(client) -> None:
    new_tenant(client)
    store = client.app.state.service.store
    key, row = new_key("acme")
    store.add_key(row)
    assert verify_key(store, key) == "acme"
    assert verify_key(store, key[:-1] + ("A" if key[-1] != "A" else "B")) is None
    assert verify_key(store, "not-a-key") is None


def test_ragspine_config_masks_the_admin_token(monkeypatch, capsys) -> None:
    from ragspine.cli import main

    monkeypatch.setenv("RAGSPINE_ADMIN_TOKEN", "super-secret-token")
    assert main(["config"]) == 0
    out = capsys.readouterr().out
    assert "RAGSPINE_ADMIN_TOKEN=***" in out and "super-secret-token" not in out
