"""``/v1/admin/tenants/{t}/users``, ``/groups``, memberships and keys bound to a user: CRUD,
404 / 409 / 422, and fuzzed names — case, full-width (NFKC), zero-width, separators, Cyrillic
look-alikes and mixed scripts."""

from __future__ import annotations

import itertools
import string

from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st

from ragspine.service.app import create_app
from tests.unit.service.conftest import ADMIN, make_settings, new_tenant

T = "/v1/admin/tenants/acme"


def _post(client, kind: str, name: str, tenant: str = "acme"):
    return client.post(f"/v1/admin/tenants/{tenant}/{kind}", json={"name": name}, headers=ADMIN)


def test_users_groups_and_memberships_crud(client) -> None:
    new_tenant(client)
    r = _post(client, "users", "Alice")
    assert r.status_code == 201 and {k: r.json()[k] for k in ("name", "key", "groups")} == {"name": "Alice", "key": "alice", "groups": []}
    assert _post(client, "users", "bob").status_code == 201
    assert _post(client, "groups", "HR").json()["members"] == []
    assert client.put(f"{T}/groups/hr/members/ALICE", headers=ADMIN).status_code == 201
    r = client.put(f"{T}/groups/HR/members/alice", headers=ADMIN)
    assert r.status_code == 200 and r.json() == {"group": "HR", "user": "Alice"}  # already: idempotent
    client.put(f"{T}/groups/hr/members/bob", headers=ADMIN)
    assert [(u["name"], u["groups"]) for u in client.get(f"{T}/users", headers=ADMIN).json()] == [("Alice", ["HR"]), ("bob", ["HR"])]
    assert [(g["name"], g["members"]) for g in client.get(f"{T}/groups", headers=ADMIN).json()] == [("HR", ["Alice", "bob"])]
    assert client.get(f"{T}/users/ａｌｉｃｅ", headers=ADMIN).json()["groups"] == ["HR"]
    assert [u["name"] for u in client.get(f"{T}/groups/hr/members", headers=ADMIN).json()] == ["Alice", "bob"]
    assert [g["key"] for g in client.get(f"{T}/users/bob/groups", headers=ADMIN).json()] == ["hr"]
    assert client.get(f"{T}/groups/Hr", headers=ADMIN).json()["members"] == ["Alice", "bob"]
    r = client.delete(f"{T}/groups/hr/members/bob", headers=ADMIN)
    assert r.status_code == 200 and r.json() == {"group": "HR", "user": "bob"}
    r = client.delete(f"{T}/groups/hr/members/bob", headers=ADMIN)
    assert r.status_code == 404 and r.json()["detail"] == "user 'bob' is not in group 'HR'"
    r = client.delete(f"{T}/groups/HR", headers=ADMIN)
    assert r.status_code == 200 and r.json()["members"] == ["Alice"]
    assert client.get(f"{T}/users/alice", headers=ADMIN).json()["groups"] == []
    r = client.delete(f"{T}/users/ALICE", headers=ADMIN)
    assert r.status_code == 200 and (r.json()["name"], r.json()["revoked_keys"]) == ("Alice", [])
    assert [u["name"] for u in client.get(f"{T}/users", headers=ADMIN).json()] == ["bob"]


def test_404_for_unknown_tenants_users_and_groups(client) -> None:
    new_tenant(client)
    _post(client, "users", "alice")
    _post(client, "groups", "hr")
    nobody = "/v1/admin/tenants/nobody"
    for method, path in (("POST", f"{nobody}/users"), ("GET", f"{nobody}/users"), ("GET", f"{nobody}/groups"),
                         ("POST", f"{nobody}/groups"), ("DELETE", f"{nobody}/users/alice"), ("GET", f"{nobody}/users/alice"),
                         ("PUT", f"{nobody}/groups/hr/members/alice"), ("GET", f"{nobody}/groups/hr/members")):
        r = client.request(method, path, json={"name": "x"} if method == "POST" else None, headers=ADMIN)
        assert r.status_code == 404 and r.json()["detail"] == "tenant 'nobody' not found", (method, path)
    for method, path, what in (("GET", f"{T}/users/carol", "user 'carol'"), ("DELETE", f"{T}/users/carol", "user 'carol'"),
                               ("GET", f"{T}/users/carol/groups", "user 'carol'"), ("GET", f"{T}/groups/legal", "group 'legal'"),
                               ("DELETE", f"{T}/groups/legal", "group 'legal'"), ("GET", f"{T}/groups/legal/members", "group 'legal'"),
                               ("PUT", f"{T}/groups/legal/members/alice", "group 'legal'"),
                               ("PUT", f"{T}/groups/hr/members/carol", "user 'carol'"),
                               ("DELETE", f"{T}/groups/hr/members/carol", "user 'carol'")):
        r = client.request(method, path, headers=ADMIN)
        assert r.status_code == 404 and r.json()["detail"] == f"{what} of tenant 'acme' not found", (method, path)
    # another tenant's user is not found either
    new_tenant(client, "globex")
    assert client.get("/v1/admin/tenants/globex/users/alice", headers=ADMIN).status_code == 404


def test_409_for_duplicates_and_look_alikes_422_for_bad_names(client) -> None:
    new_tenant(client)
    assert _post(client, "users", "ace").status_code == 201
    r = _post(client, "users", "ACE")
    assert r.status_code == 409 and r.json()["detail"] == "user 'ace' exists already in tenant 'acme'"
    r = _post(client, "users", "асе")  # Cyrillic
    assert r.status_code == 409 and r.json()["detail"].startswith("user 'асе' looks like the existing user 'ace'")
    assert _post(client, "groups", "асе").status_code == 201  # a group may: users and groups are apart
    r = _post(client, "users", "a b")
    assert r.status_code == 422
    assert r.json()["message"] == "body.name: user name 'a b' holds 'SPACE': use letters, digits and . _ - @ +"
    assert r.json()["detail"][0]["loc"] == ["body", "name"]
    r = client.get(f"{T}/users/a%2Cb", headers=ADMIN)
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["path", "name"] and "holds ','" in r.json()["message"]
    r = client.put(f"{T}/groups/a%3Ab/members/alice", headers=ADMIN)
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["path", "group"]
    assert _post(client, "users", "").status_code == 422 and _post(client, "users", "x" * 129).status_code == 422
    assert client.post(f"{T}/users", json={"name": "bob", "extra": 1}, headers=ADMIN).status_code == 422
    assert [u["name"] for u in client.get(f"{T}/users", headers=ADMIN).json()] == ["ace"]


def test_keys_bound_to_a_user_or_trusted(client) -> None:
    new_tenant(client)
    _post(client, "users", "Alice")
    r = client.post(f"{T}/keys", json={"principal": "ALICE", "label": "alice's laptop"}, headers=ADMIN)
    assert r.status_code == 201 and (r.json()["principal"], r.json()["trusted_app"]) == ("alice", False)
    bound_id = r.json()["key_id"]
    r = client.post(f"{T}/keys", json={"trusted_app": True}, headers=ADMIN)
    assert r.status_code == 201 and (r.json()["principal"], r.json()["trusted_app"]) == (None, True)
    trusted_id = r.json()["key_id"]
    r = client.post(f"{T}/keys", json={"principal": "alice", "trusted_app": True}, headers=ADMIN)
    assert r.status_code == 422 and "not both" in r.json()["message"]
    r = client.post(f"{T}/keys", json={"principal": "carol"}, headers=ADMIN)
    assert r.status_code == 404 and r.json()["detail"] == "user 'carol' of tenant 'acme' not found"
    r = client.post(f"{T}/keys", json={"principal": "a b"}, headers=ADMIN)
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "principal"]
    listed = {k["key_id"]: k for k in client.get(f"{T}/keys", headers=ADMIN).json()}
    assert listed[bound_id]["principal"] == "alice" and listed[trusted_id]["trusted_app"] is True
    # rotation keeps what the key acts as
    rotated = client.post(f"{T}/keys/{bound_id}/rotate", json={}, headers=ADMIN).json()
    assert (rotated["principal"], rotated["trusted_app"]) == ("alice", False)
    assert client.post(f"{T}/keys/{trusted_id}/rotate", json={}, headers=ADMIN).json()["trusted_app"] is True
    # removing the user revokes its keys
    r = client.delete(f"{T}/users/alice", headers=ADMIN)
    assert r.json()["revoked_keys"] == [rotated["key_id"]]
    assert client.get("/v1/libraries", headers={"Authorization": f"Bearer {rotated['key']}"}).status_code == 401


# -- fuzzed names ----------------------------------------------------------------------------
_ALNUM = string.ascii_letters + string.digits
_BASE = st.text(_ALNUM, min_size=1, max_size=1).flatmap(
    lambda first: st.text(_ALNUM + "._-@+", max_size=20).map(lambda rest: first + rest))
_ZERO_WIDTH = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u200e", "\u202e"]
_SEPARATORS = list(",;:/\\*?\"'<>|=()[]{}") + [" ", "\t", "\n", "\u00a0", "\u2028", "\u3000"]
#: Latin letters and the Cyrillic letters that look like them (lower case: the look-alike key is case-folded)
_HOMOGLYPHS = {"a": "а", "c": "с", "e": "е", "o": "о", "p": "р", "x": "х", "y": "у"}


def _full_width(text: str) -> str:
    return "".join(chr(ord(ch) + 0xFEE0) if "!" <= ch <= "~" else ch for ch in text)


def _fuzz_client(tmp_path):
    client = TestClient(create_app(make_settings(tmp_path)))
    tenants = (f"t{n}" for n in itertools.count())
    return client, tenants


def test_fuzz_case_and_width_variants_are_one_name(tmp_path) -> None:
    client, tenants = _fuzz_client(tmp_path)
    with client:

        @settings(max_examples=60, deadline=None)
        @given(base=_BASE, how=st.sampled_from(["upper", "lower", "swapcase", "full-width", "full-width-upper"]))
        def check(base: str, how: str) -> None:
            tenant = next(tenants)
            new_tenant(client, tenant)
            variant = {"upper": base.upper(), "lower": base.lower(), "swapcase": base.swapcase(),
                       "full-width": _full_width(base), "full-width-upper": _full_width(base.upper())}[how]
            assert _post(client, "users", base, tenant).status_code == 201
            r = _post(client, "users", variant, tenant)
            assert r.status_code == 409 and r.json()["detail"] == f"user {base!r} exists already in tenant {tenant!r}"
            found = client.get(f"/v1/admin/tenants/{tenant}/users/{variant}", headers=ADMIN)
            assert found.status_code == 200 and found.json()["name"] == base
            assert [u["name"] for u in client.get(f"/v1/admin/tenants/{tenant}/users", headers=ADMIN).json()] == [base]

        check()


def test_fuzz_invisible_characters_and_separators_are_refused(tmp_path) -> None:
    client, _ = _fuzz_client(tmp_path)
    with client:
        new_tenant(client)

        @settings(max_examples=80, deadline=None)
        @given(base=_BASE, bad=st.sampled_from(_ZERO_WIDTH + _SEPARATORS), at=st.integers(0, 30), kind=st.sampled_from(["users", "groups"]))
        def check(base: str, bad: str, at: int, kind: str) -> None:
            at = at % (len(base) + 1)
            r = _post(client, kind, base[:at] + bad + base[at:])
            assert r.status_code == 422, r.text
            assert r.json()["detail"][0]["loc"] == ["body", "name"] and "use letters, digits and . _ - @ +" in r.json()["message"]

        check()
        assert client.get(f"{T}/users", headers=ADMIN).json() == [] and client.get(f"{T}/groups", headers=ADMIN).json() == []


def test_fuzz_cyrillic_look_alikes_are_refused_naming_the_original(tmp_path) -> None:
    client, tenants = _fuzz_client(tmp_path)
    letters = "".join(_HOMOGLYPHS)
    base_names = st.text(letters, min_size=1, max_size=1).flatmap(
        lambda first: st.text(letters + letters.upper() + string.digits + "._-", max_size=16).map(lambda rest: first + rest))
    with client:

        @settings(max_examples=60, deadline=None)
        @given(base=base_names, latin_first=st.booleans(), kind=st.sampled_from(["users", "groups"]))
        def check(base: str, latin_first: bool, kind: str) -> None:
            tenant = next(tenants)
            new_tenant(client, tenant)
            cyrillic = "".join(_HOMOGLYPHS.get(ch.lower(), ch).upper() if ch.isupper() else _HOMOGLYPHS.get(ch, ch) for ch in base)
            first, second = (base, cyrillic) if latin_first else (cyrillic, base)
            assert _post(client, kind, first, tenant).status_code == 201
            r = _post(client, kind, second, tenant)
            what = kind[:-1]
            assert r.status_code == 409, r.text
            assert r.json()["detail"].startswith(f"{what} {second!r} looks like the existing {what} {first!r}")
            # one letter swapped mixes the scripts: refused as a name at all
            if sum(ch.isalpha() for ch in base) >= 2:
                i = next(i for i, ch in enumerate(base) if ch.isalpha())
                mixed = base[:i] + cyrillic[i] + base[i + 1:]
                r = _post(client, kind, mixed, tenant)
                assert r.status_code == 422 and "mixes scripts" in r.json()["message"]

        check()
