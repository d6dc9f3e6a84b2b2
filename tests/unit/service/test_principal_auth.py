"""Who a request acts as: a key bound to a user (with its groups, read on every request), a
trusted application's key naming its end user in ``X-RAGSpine-User``, or no principal — and
the 403s: a key never impersonates, an unknown or bad user is refused, Dify in its own shape."""

from __future__ import annotations

import pytest
from fastapi import Request

from ragspine.service.auth import principal_of
from tests.unit.service.conftest import ADMIN, new_tenant

WHOAMI = "/v1/test-whoami"


@pytest.fixture
def app_client(client):
    """The service with one extra route that shows ``principal_of(request)``."""

    def whoami(request: Request) -> dict:
        principal = principal_of(request)
        return {"principal": None if principal is None else {"user": principal.user, "groups": sorted(principal.groups)}}

    client.app.add_api_route(WHOAMI, whoami, methods=["GET"])
    new_tenant(client)
    for kind, name in (("users", "Alice"), ("users", "bob"), ("groups", "HR"), ("groups", "Board")):
        assert client.post(f"/v1/admin/tenants/acme/{kind}", json={"name": name}, headers=ADMIN).status_code == 201
    assert client.put("/v1/admin/tenants/acme/groups/hr/members/alice", headers=ADMIN).status_code == 201
    return client


def _key(client, **body) -> dict[str, str]:
    r = client.post("/v1/admin/tenants/acme/keys", json=body, headers=ADMIN)
    assert r.status_code == 201, r.text
    return {"Authorization": f"Bearer {r.json()['key']}"}


def _who(client, headers: dict, user: str | bytes | None = None) -> tuple[int, dict]:
    if user is not None:
        headers = {**headers, "X-RAGSpine-User": user}
    r = client.get(WHOAMI, headers=headers)
    return r.status_code, r.json()


def test_a_key_bound_to_a_user_acts_as_it_with_its_groups_now(app_client) -> None:
    alice = _key(app_client, principal="ALICE")
    assert _who(app_client, alice) == (200, {"principal": {"user": "alice", "groups": ["hr"]}})
    # a membership change counts on the next request: nothing is cached
    assert app_client.put("/v1/admin/tenants/acme/groups/board/members/alice", headers=ADMIN).status_code == 201
    assert _who(app_client, alice)[1]["principal"]["groups"] == ["board", "hr"]
    assert app_client.delete("/v1/admin/tenants/acme/groups/hr/members/alice", headers=ADMIN).status_code == 200
    assert _who(app_client, alice)[1]["principal"]["groups"] == ["board"]
    assert app_client.delete("/v1/admin/tenants/acme/groups/board", headers=ADMIN).status_code == 200
    assert _who(app_client, alice)[1]["principal"] == {"user": "alice", "groups": []}
    # the user removed: its keys are revoked with it
    assert app_client.delete("/v1/admin/tenants/acme/users/alice", headers=ADMIN).status_code == 200
    assert _who(app_client, alice)[0] == 401


def test_a_key_with_no_principal_is_none_as_before(app_client) -> None:
    plain = _key(app_client)
    assert _who(app_client, plain) == (200, {"principal": None})
    assert app_client.get("/v1/libraries", headers=plain).status_code == 200


def test_a_trusted_application_names_its_end_user_per_request(app_client) -> None:
    app = _key(app_client, trusted_app=True)
    assert _who(app_client, app, "alice") == (200, {"principal": {"user": "alice", "groups": ["hr"]}})
    assert _who(app_client, app, "ＢＯＢ".encode()) == (200, {"principal": {"user": "bob", "groups": []}})  # any case or width
    assert _who(app_client, app, "ａｌｉｃｅ".encode()) == (200, {"principal": {"user": "alice", "groups": ["hr"]}})  # UTF-8
    status, body = _who(app_client, app)
    assert status == 403 and body["detail"] == "a trusted application key must name the end user in X-RAGSpine-User"
    status, body = _who(app_client, app, "carol")
    assert status == 403 and body["detail"] == "X-RAGSpine-User: no user 'carol' in this tenant"
    status, body = _who(app_client, app, "a,b")
    assert status == 403 and "X-RAGSpine-User: user name 'a,b' holds ','" in body["detail"]
    # another tenant's user is no one here
    globex = new_tenant(app_client, "globex")
    app_client.post("/v1/admin/tenants/globex/users", json={"name": "carol"}, headers=ADMIN)
    assert _who(app_client, app, "carol")[0] == 403
    assert _who(app_client, globex)[1] == {"principal": None}


def test_a_key_never_impersonates(app_client) -> None:
    plain, alice = _key(app_client), _key(app_client, principal="alice")
    status, body = _who(app_client, plain, "alice")
    assert status == 403 and body["detail"] == "only a trusted application key may name a user in X-RAGSpine-User"
    status, body = _who(app_client, alice, "bob")
    assert status == 403 and "may not name another" in body["detail"]
    assert _who(app_client, alice, "alice")[0] == 403  # not even itself: the header is for trusted keys only
    # refused before the route runs (nothing of the body is read)
    r = app_client.post("/v1/libraries", content=b"{not json", headers={**plain, "X-RAGSpine-User": "alice",
                                                                         "Content-Type": "application/json"})
    assert r.status_code == 403


def test_a_key_whose_user_is_gone_is_refused(app_client) -> None:
    """Removing a user revokes its keys; a bound row left behind (a race, an edited database) is 403, never 'no principal'."""
    from ragspine.service.auth import new_key

    key, row = new_key("acme", principal="zed")  # bound to a user that does not exist
    app_client.app.state.service.store.add_key(row)
    status, body = _who(app_client, {"Authorization": f"Bearer {key}"})
    assert status == 403 and body["detail"] == "this key's user 'zed' no longer exists: issue a new key"


def test_dify_gets_its_error_shape(app_client) -> None:
    app, plain = _key(app_client, trusted_app=True), _key(app_client)
    body = {"knowledge_id": "handbook", "query": "q", "retrieval_setting": {"top_k": 3, "score_threshold": 0}}
    r = app_client.post("/retrieval", json=body, headers=app)
    assert r.status_code == 403 and r.json() == {
        "error_code": 1002, "error_msg": "Authorization failed: a trusted application key must name the end user in X-RAGSpine-User"}
    r = app_client.post("/retrieval", json=body, headers={**plain, "X-RAGSpine-User": "alice"})
    assert r.status_code == 403 and r.json()["error_code"] == 1002
    r = app_client.post("/retrieval", json=body, headers={**app, "X-RAGSpine-User": "alice"})
    assert r.status_code != 403 and r.json().get("error_code") != 1002  # authenticated: the knowledge id decides (unknown here)


def test_the_header_is_read_as_utf8_once() -> None:
    """(Through the ASGI scope directly: the test client re-encodes what it sends.)"""
    from ragspine.service.auth import PrincipalRefused, acting_user

    assert acting_user([(b"authorization", b"Bearer x")]) is None
    assert acting_user([(b"x-ragspine-user", " ａｌｉｃｅ ".encode())]) == "ａｌｉｃｅ"
    with pytest.raises(PrincipalRefused, match="must be UTF-8"):
        acting_user([(b"x-ragspine-user", b"\xff")])
    with pytest.raises(PrincipalRefused, match="send X-RAGSpine-User once"):
        acting_user([(b"x-ragspine-user", b"alice"), (b"X-RAGSpine-User", b"bob")])
