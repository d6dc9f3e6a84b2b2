"""``/v1/admin``: tenants, their API keys, their principals — users and groups — and the ACLs
of their libraries' documents (bearer ``RAGSPINE_ADMIN_TOKEN``).

``PUT .../libraries/{name}/documents/{doc_id}/acl`` gives a document its ACL (``{"allow": [...],
"deny": [...]}``; an empty body or ``{}``: none, every principal of the tenant reads it), recorded
with ``by="admin"``; the document need not have chunks yet (its ACL waits for them). ``GET`` the
same path shows the ACL and its latest recorded changes. A bad entry is a 422 naming it.

A user or group in a path is its name in any case or compatibility form (``ALICE``,
``ａｌｉｃｅ``: :func:`~ragspine.security.principals.name_key` decides); a name that is no valid
name is a 422 saying why, an unknown tenant, user or group a 404, an existing name or one that
looks like an existing one a 409 naming it.
"""

from __future__ import annotations

import time
from typing import Any

from fastapi import APIRouter, Body, Depends, Response
from fastapi.exceptions import RequestValidationError

from ragspine.errors import ConfigError
from ragspine.retrieval.chunking.chunk_store import AclChange, DocumentAcls
from ragspine.security.principals import ACL
from ragspine.service.auth import new_key
from ragspine.service.context import ServiceContext
from ragspine.service.errors import NotFound
from ragspine.service.models import (
    AclBody,
    AclChangeOut,
    AclIn,
    AclOut,
    GroupOut,
    IssuedKeyOut,
    KeyIn,
    KeyOut,
    MembershipOut,
    PrincipalIn,
    PrincipalOut,
    RemovedUserOut,
    RotateIn,
    TenantCreatedOut,
    TenantIn,
    TenantOut,
    UserOut,
)
from ragspine.service.routes.common import context, documented_bearer, iso, key_out, library_or_404
from ragspine.service.store import ApiKey, Conflict, PrincipalEntry, Unknown, principal_keys

router = APIRouter(prefix="/v1/admin", tags=["admin"], dependencies=[Depends(documented_bearer)])


def _tenant_or_404(ctx: ServiceContext, tenant_id: str) -> None:
    if ctx.store.get_tenant(tenant_id) is None:
        raise NotFound(f"tenant {tenant_id!r} not found")


def _key_out(row: ApiKey, now: float) -> KeyOut:
    return key_out(row, now).model_copy(update={"principal": row.principal, "trusted_app": bool(row.trusted_app)})


def _issue(ctx: ServiceContext, tenant_id: str, label: str, *, principal: str | None = None, trusted_app: bool = False) -> IssuedKeyOut:
    key, row = new_key(tenant_id, label, principal=principal, trusted_app=trusted_app)
    ctx.store.add_key(row)
    return IssuedKeyOut(key=key, **_key_out(row, time.time()).model_dump())


@router.post("/tenants", status_code=201, response_model=TenantCreatedOut, summary="Create a tenant and issue its first API key")
def create_tenant(body: TenantIn, ctx: ServiceContext = Depends(context)) -> TenantCreatedOut:
    try:
        tenant = ctx.store.create_tenant(body.tenant_id, body.name)
    except Conflict:
        raise Conflict(f"tenant {body.tenant_id!r} exists already") from None
    key = _issue(ctx, tenant.tenant_id, "initial")
    return TenantCreatedOut(tenant_id=tenant.tenant_id, name=tenant.name, created_at=iso(tenant.created_at) or "", api_key=key)


@router.get("/tenants", response_model=list[TenantOut], summary="List tenants")
def list_tenants(ctx: ServiceContext = Depends(context)) -> list[TenantOut]:
    return [TenantOut(tenant_id=t.tenant_id, name=t.name, created_at=iso(t.created_at) or "") for t in ctx.store.list_tenants()]


@router.post("/tenants/{tenant_id}/keys", status_code=201, response_model=IssuedKeyOut, summary="Issue an API key")
def issue_key(tenant_id: str, body: KeyIn = Body(default_factory=KeyIn), ctx: ServiceContext = Depends(context)) -> IssuedKeyOut:
    _tenant_or_404(ctx, tenant_id)
    user = None if body.principal is None else _entry(ctx, tenant_id, "user", body.principal, ("body", "principal"))
    return _issue(ctx, tenant_id, body.label, principal=None if user is None else user.key, trusted_app=body.trusted_app)


@router.get("/tenants/{tenant_id}/keys", response_model=list[KeyOut], summary="List a tenant's keys (prefix only)")
def list_keys(tenant_id: str, ctx: ServiceContext = Depends(context)) -> list[KeyOut]:
    _tenant_or_404(ctx, tenant_id)
    now = time.time()
    return [_key_out(k, now) for k in ctx.store.list_keys(tenant_id)]


@router.post(
    "/tenants/{tenant_id}/keys/{key_id}/rotate", status_code=201, response_model=IssuedKeyOut,
    summary="Issue a new key and end the old one (now, or after grace_seconds)",
)
def rotate_key(tenant_id: str, key_id: str, body: RotateIn = Body(default_factory=RotateIn), ctx: ServiceContext = Depends(context)) -> IssuedKeyOut:
    old = ctx.store.get_key(key_id)
    if old is None or old.tenant_id != tenant_id or not old.active(time.time()):
        raise NotFound(f"active key {key_id!r} of tenant {tenant_id!r} not found")
    # the new key acts as the old one did
    issued = _issue(ctx, tenant_id, old.label if body.label is None else body.label, principal=old.principal,
                    trusted_app=bool(old.trusted_app))
    now = time.time()
    ctx.store.end_key(tenant_id, key_id, at=now + body.grace_seconds, revoke=body.grace_seconds == 0)
    return issued


@router.delete("/tenants/{tenant_id}/keys/{key_id}", response_model=KeyOut, summary="Revoke a key now")
def revoke_key(tenant_id: str, key_id: str, ctx: ServiceContext = Depends(context)) -> KeyOut:
    key = ctx.store.get_key(key_id)
    if key is None or key.tenant_id != tenant_id:
        raise NotFound(f"key {key_id!r} of tenant {tenant_id!r} not found")
    ctx.store.end_key(tenant_id, key_id, at=time.time(), revoke=True)
    return _key_out(ctx.store.get_key(key_id) or key, time.time())


# -- principals: users, groups, memberships ---------------------------------------------
def _key_of(name: str, kind: str, loc: tuple[str, ...]) -> str:
    """The canonical name, or the documented 422 saying why ``name`` is none."""
    try:
        return principal_keys(name, kind)[0]
    except ConfigError as exc:
        raise RequestValidationError([{"loc": loc, "msg": str(exc), "type": "value_error", "input": name}]) from None


def _entry(ctx: ServiceContext, tenant_id: str, kind: str, name: str, loc: tuple[str, ...] = ("path", "name")) -> PrincipalEntry:
    _key_of(name, kind, loc)
    found = ctx.store.get_principal(tenant_id, kind, name)
    if found is None:
        raise NotFound(f"{kind} {name!r} of tenant {tenant_id!r} not found")
    return found


def _out(entry: PrincipalEntry, **related: Any) -> dict[str, Any]:
    return {"name": entry.name, "key": entry.key, "created_at": iso(entry.created_at) or "", **related}


def _names(entries: list[PrincipalEntry]) -> list[str]:
    return [e.name for e in entries]


def _create(ctx: ServiceContext, tenant_id: str, kind: str, name: str) -> PrincipalEntry:
    _tenant_or_404(ctx, tenant_id)
    _key_of(name, kind, ("body", "name"))
    try:
        return ctx.store.add_principal(tenant_id, kind, name)
    except Unknown as exc:
        raise NotFound(str(exc)) from None


@router.post("/tenants/{tenant_id}/users", status_code=201, response_model=UserOut, summary="Create a user of the tenant")
def create_user(tenant_id: str, body: PrincipalIn, ctx: ServiceContext = Depends(context)) -> UserOut:
    return UserOut(**_out(_create(ctx, tenant_id, "user", body.name)))


@router.get("/tenants/{tenant_id}/users", response_model=list[UserOut], summary="List the tenant's users with their groups")
def list_users(tenant_id: str, ctx: ServiceContext = Depends(context)) -> list[UserOut]:
    _tenant_or_404(ctx, tenant_id)
    groups = {g.key: g.name for g in ctx.store.list_principals(tenant_id, "group")}
    member_of = ctx.store.memberships(tenant_id)
    return [UserOut(**_out(u, groups=[groups[g] for g in member_of.get(u.key, []) if g in groups]))
            for u in ctx.store.list_principals(tenant_id, "user")]


@router.get("/tenants/{tenant_id}/users/{name}", response_model=UserOut, summary="A user with its groups")
def get_user(tenant_id: str, name: str, ctx: ServiceContext = Depends(context)) -> UserOut:
    _tenant_or_404(ctx, tenant_id)
    user = _entry(ctx, tenant_id, "user", name)
    return UserOut(**_out(user, groups=_names(ctx.store.related(tenant_id, "user", name))))


@router.get("/tenants/{tenant_id}/users/{name}/groups", response_model=list[PrincipalOut], summary="The groups a user is in")
def user_groups(tenant_id: str, name: str, ctx: ServiceContext = Depends(context)) -> list[PrincipalOut]:
    _tenant_or_404(ctx, tenant_id)
    _entry(ctx, tenant_id, "user", name)
    return [PrincipalOut(**_out(g)) for g in ctx.store.related(tenant_id, "user", name)]


@router.delete("/tenants/{tenant_id}/users/{name}", response_model=RemovedUserOut,
               summary="Remove a user, its memberships and the keys bound to it (revoked)")
def remove_user(tenant_id: str, name: str, ctx: ServiceContext = Depends(context)) -> RemovedUserOut:
    _tenant_or_404(ctx, tenant_id)
    _key_of(name, "user", ("path", "name"))
    groups = _names(ctx.store.related(tenant_id, "user", name))
    try:
        user, revoked = ctx.store.remove_principal(tenant_id, "user", name)
    except Unknown as exc:
        raise NotFound(str(exc)) from None
    return RemovedUserOut(**_out(user, groups=groups, revoked_keys=revoked))


@router.post("/tenants/{tenant_id}/groups", status_code=201, response_model=GroupOut, summary="Create a group of the tenant")
def create_group(tenant_id: str, body: PrincipalIn, ctx: ServiceContext = Depends(context)) -> GroupOut:
    return GroupOut(**_out(_create(ctx, tenant_id, "group", body.name)))


@router.get("/tenants/{tenant_id}/groups", response_model=list[GroupOut], summary="List the tenant's groups with their members")
def list_groups(tenant_id: str, ctx: ServiceContext = Depends(context)) -> list[GroupOut]:
    _tenant_or_404(ctx, tenant_id)
    users = {u.key: u.name for u in ctx.store.list_principals(tenant_id, "user")}
    members: dict[str, list[str]] = {}
    for user, groups in ctx.store.memberships(tenant_id).items():
        for group in groups:
            if user in users:
                members.setdefault(group, []).append(users[user])
    return [GroupOut(**_out(g, members=members.get(g.key, []))) for g in ctx.store.list_principals(tenant_id, "group")]


@router.get("/tenants/{tenant_id}/groups/{name}", response_model=GroupOut, summary="A group with its members")
def get_group(tenant_id: str, name: str, ctx: ServiceContext = Depends(context)) -> GroupOut:
    _tenant_or_404(ctx, tenant_id)
    group = _entry(ctx, tenant_id, "group", name)
    return GroupOut(**_out(group, members=_names(ctx.store.related(tenant_id, "group", name))))


@router.get("/tenants/{tenant_id}/groups/{name}/members", response_model=list[PrincipalOut], summary="A group's members")
def group_members(tenant_id: str, name: str, ctx: ServiceContext = Depends(context)) -> list[PrincipalOut]:
    _tenant_or_404(ctx, tenant_id)
    _entry(ctx, tenant_id, "group", name)
    return [PrincipalOut(**_out(u)) for u in ctx.store.related(tenant_id, "group", name)]


@router.delete("/tenants/{tenant_id}/groups/{name}", response_model=GroupOut, summary="Remove a group and its memberships")
def remove_group(tenant_id: str, name: str, ctx: ServiceContext = Depends(context)) -> GroupOut:
    _tenant_or_404(ctx, tenant_id)
    _key_of(name, "group", ("path", "name"))
    members = _names(ctx.store.related(tenant_id, "group", name))
    try:
        group, _ = ctx.store.remove_principal(tenant_id, "group", name)
    except Unknown as exc:
        raise NotFound(str(exc)) from None
    return GroupOut(**_out(group, members=members))


def _pair(ctx: ServiceContext, tenant_id: str, group: str, user: str) -> MembershipOut:
    _tenant_or_404(ctx, tenant_id)
    g = _entry(ctx, tenant_id, "group", group, ("path", "group"))
    u = _entry(ctx, tenant_id, "user", user, ("path", "user"))
    return MembershipOut(group=g.name, user=u.name)


@router.put("/tenants/{tenant_id}/groups/{group}/members/{user}", response_model=MembershipOut,
            responses={201: {"model": MembershipOut, "description": "added"}},
            summary="Put a user in a group (201 added, 200 already in it)")
def add_member(tenant_id: str, group: str, user: str, response: Response, ctx: ServiceContext = Depends(context)) -> MembershipOut:
    pair = _pair(ctx, tenant_id, group, user)
    try:
        added = ctx.store.add_member(tenant_id, group, user)
    except Unknown as exc:  # removed meanwhile
        raise NotFound(str(exc)) from None
    response.status_code = 201 if added else 200
    return pair


@router.delete("/tenants/{tenant_id}/groups/{group}/members/{user}", response_model=MembershipOut,
               summary="Take a user out of a group (the next request of its keys no longer has the group)")
def remove_member(tenant_id: str, group: str, user: str, ctx: ServiceContext = Depends(context)) -> MembershipOut:
    pair = _pair(ctx, tenant_id, group, user)
    if not ctx.store.remove_member(tenant_id, group, user):
        raise NotFound(f"user {pair.user!r} is not in group {pair.group!r}")
    return pair


# -- document ACLs -----------------------------------------------------------------------
#: who the admin routes record as the author of an ACL change (the admin token has no name)
ADMIN_AUTHOR = "admin"
ACL_HISTORY = 20
_ACL_PATH = "/tenants/{tenant_id}/libraries/{name}/documents/{doc_id:path}/acl"


def _acl_store(ctx: ServiceContext, tenant_id: str, name: str, doc_id: str) -> tuple[str, DocumentAcls]:
    _tenant_or_404(ctx, tenant_id)
    library = library_or_404(ctx, tenant_id, name)
    if not doc_id.strip() or any(ord(ch) < 32 for ch in doc_id) or len(doc_id) > 512:
        raise RequestValidationError([{"loc": ("path", "doc_id"), "msg": "doc_id must be 1-512 printable characters, not blank",
                                       "type": "value_error", "input": doc_id}])
    store = ctx.stack.db.chunk_store(library.library_id)
    if not isinstance(store, DocumentAcls):
        raise ConfigError(f"this server's chunk store ({type(store).__name__}) keeps no document ACLs: use SQLite or PostgreSQL")
    return library.name, store


def _acl_body(acl: ACL) -> AclBody:
    return AclBody(allow=list(acl.allow), deny=list(acl.deny))


def _change_out(change: AclChange) -> AclChangeOut:
    return AclChangeOut(seq=change.seq, doc_id=change.doc_id, before=_acl_body(change.before), after=_acl_body(change.after),
                        changed_at=change.changed_at, changed_by=change.changed_by)


def _acl_out(library: str, doc_id: str, store: DocumentAcls, changed: bool | None = None) -> AclOut:
    acl = store.document_acls()[1].get(doc_id, ACL())
    history = [_change_out(c) for c in store.acl_history(doc_id, limit=ACL_HISTORY)]
    return AclOut(library=library, doc_id=doc_id, acl=_acl_body(acl), open=acl.is_open, changed=changed, history=history)


@router.put(_ACL_PATH, response_model=AclOut, response_model_exclude_none=True,
            summary="Set a document's ACL (empty: none, every principal of the tenant reads it)")
def set_document_acl(tenant_id: str, name: str, doc_id: str, body: AclIn = Body(default_factory=AclIn),
                     ctx: ServiceContext = Depends(context)) -> AclOut:
    library, store = _acl_store(ctx, tenant_id, name, doc_id)
    changed = store.set_acls({doc_id: body.acl()}, by=ADMIN_AUTHOR) > 0
    return _acl_out(library, doc_id, store, changed)


@router.get(_ACL_PATH, response_model=AclOut, response_model_exclude_none=True,
            summary="A document's ACL and its latest recorded changes")
def get_document_acl(tenant_id: str, name: str, doc_id: str, ctx: ServiceContext = Depends(context)) -> AclOut:
    library, store = _acl_store(ctx, tenant_id, name, doc_id)
    return _acl_out(library, doc_id, store)
