"""``/v1/admin``: tenants and their API keys (bearer ``RAGSPINE_ADMIN_TOKEN``)."""

from __future__ import annotations

import time

from fastapi import APIRouter, Body, Depends

from ragspine.service.auth import new_key
from ragspine.service.context import ServiceContext
from ragspine.service.errors import NotFound
from ragspine.service.models import (
    IssuedKeyOut,
    KeyIn,
    KeyOut,
    RotateIn,
    TenantCreatedOut,
    TenantIn,
    TenantOut,
)
from ragspine.service.routes.common import context, documented_bearer, iso, key_out
from ragspine.service.store import Conflict

router = APIRouter(prefix="/v1/admin", tags=["admin"], dependencies=[Depends(documented_bearer)])


def _tenant_or_404(ctx: ServiceContext, tenant_id: str) -> None:
    if ctx.store.get_tenant(tenant_id) is None:
        raise NotFound(f"tenant {tenant_id!r} not found")


def _issue(ctx: ServiceContext, tenant_id: str, label: str) -> IssuedKeyOut:
    key, row = new_key(tenant_id, label)
    ctx.store.add_key(row)
    return IssuedKeyOut(key=key, **key_out(row, time.time()).model_dump())


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
    return _issue(ctx, tenant_id, body.label)


@router.get("/tenants/{tenant_id}/keys", response_model=list[KeyOut], summary="List a tenant's keys (prefix only)")
def list_keys(tenant_id: str, ctx: ServiceContext = Depends(context)) -> list[KeyOut]:
    _tenant_or_404(ctx, tenant_id)
    now = time.time()
    return [key_out(k, now) for k in ctx.store.list_keys(tenant_id)]


@router.post(
    "/tenants/{tenant_id}/keys/{key_id}/rotate", status_code=201, response_model=IssuedKeyOut,
    summary="Issue a new key and end the old one (now, or after grace_seconds)",
)
def rotate_key(tenant_id: str, key_id: str, body: RotateIn = Body(default_factory=RotateIn), ctx: ServiceContext = Depends(context)) -> IssuedKeyOut:
    old = ctx.store.get_key(key_id)
    if old is None or old.tenant_id != tenant_id or not old.active(time.time()):
        raise NotFound(f"active key {key_id!r} of tenant {tenant_id!r} not found")
    issued = _issue(ctx, tenant_id, old.label if body.label is None else body.label)
    now = time.time()
    ctx.store.end_key(tenant_id, key_id, at=now + body.grace_seconds, revoke=body.grace_seconds == 0)
    return issued


@router.delete("/tenants/{tenant_id}/keys/{key_id}", response_model=KeyOut, summary="Revoke a key now")
def revoke_key(tenant_id: str, key_id: str, ctx: ServiceContext = Depends(context)) -> KeyOut:
    key = ctx.store.get_key(key_id)
    if key is None or key.tenant_id != tenant_id:
        raise NotFound(f"key {key_id!r} of tenant {tenant_id!r} not found")
    ctx.store.end_key(tenant_id, key_id, at=time.time(), revoke=True)
    return key_out(ctx.store.get_key(key_id) or key, time.time())
