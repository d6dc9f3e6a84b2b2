"""API keys and the authentication middleware.

Keys look like ``rsk_<key_id>_<secret>``: ``key_id`` is 12 hex characters (the lookup key,
shown in listings as the prefix ``rsk_<key_id>``), ``secret`` is ``secrets.token_urlsafe(32)``
(256 random bits). Only ``sha256(key)`` is stored; a presented key is found by its id and
compared with ``hmac.compare_digest``. A plain SHA-256 suffices because the keys are random,
not passwords: there is nothing to guess from the hash.

Rotation issues a new key and ends the old one: at once (``grace_seconds=0``, the default)
or after a grace period during which both work. Revocation is immediate.

:class:`AuthMiddleware` runs before routing and before any body is read:

* ``/v1/admin/...`` — ``Authorization: Bearer $RAGSPINE_ADMIN_TOKEN`` (403 while the token is
  unset, 401 when it is wrong or missing);
* every other ``/v1/...`` — a tenant key (401 when missing, wrong, expired or revoked);
* ``/retrieval`` (Dify) — Dify's codes: 403 ``1001`` for a missing or malformed header,
  403 ``1002`` for a key that does not authenticate;
* everything else (``/healthz``, ``/readyz``, ``/metrics``, ``/docs``) is public — ``/readyz``
  shows its per-store details only to the admin token (:func:`is_admin`).

The tenant id of an authenticated call is ``request.state.tenant_id``; who asks is
``request.state.principal`` (:func:`principal_of`), decided by the key:

* a key bound to a user (``principal``) acts as that user, with the groups it is in *now*
  (read on every request: a membership change counts on the next one);
* a trusted application's key (``trusted_app``, e.g. one Dify workspace behind a proxy) names
  its end user per request in ``X-RAGSpine-User``: a user of the tenant;
* any other key is no principal (``None``): it sees only documents without an ACL.

Refused with 403 and one line (Dify's ``1002`` on ``/retrieval``): a trusted key without the
header, with a bad name or an unknown user; a key bound to a user that no longer exists; and
any other key that sends ``X-RAGSpine-User`` (a key never impersonates).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import re
import secrets
import time
from typing import Any

from ragspine.errors import BackendError, ConfigError
from ragspine.security.principals import Principal, name_key
from ragspine.service.store import ApiKey, ServiceStore

log = logging.getLogger(__name__)

KEY_PREFIX = "rsk_"
_KEY = re.compile(r"^rsk_([0-9a-f]{12})_([A-Za-z0-9_-]{32,})$")

DIFY_BAD_HEADER = 1001
DIFY_AUTH_FAILED = 1002
DIFY_UNAVAILABLE = 5003  # ours: a store is down (Dify retries a 5xx)
#: what an unauthenticated caller learns of an outage (no host, user, database or driver error)
#: the header in which a trusted application names its end user
USER_HEADER = "X-RAGSpine-User"
UNAVAILABLE_DETAIL = "a store is unavailable; try again later (the server log and /readyz with the admin token say which)"


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def new_key(
    tenant_id: str, label: str = "", *, now: float | None = None, principal: str | None = None, trusted_app: bool = False,
) -> tuple[str, ApiKey]:
    """``(the key, its stored row)``; the key is shown once and never stored. ``principal``: the
    user key it acts as; ``trusted_app``: it names its end user per request (not both)."""
    if principal is not None and trusted_app:
        raise ConfigError("a key acts as one user (principal) or names its users per request (trusted_app), not both")
    key_id = secrets.token_hex(6)
    key = f"{KEY_PREFIX}{key_id}_{secrets.token_urlsafe(32)}"
    row = ApiKey(key_id, tenant_id, f"{KEY_PREFIX}{key_id}", hash_key(key), label, now or time.time(), None, None,
                 principal, trusted_app)
    return key, row


def authenticated_key(store: ServiceStore, key: str, *, now: float | None = None) -> ApiKey | None:
    """The active stored key that ``key`` is, or ``None``."""
    match = _KEY.match(key)
    if not match:
        return None
    row = store.get_key(match.group(1))
    if row is None or not hmac.compare_digest(row.key_hash, hash_key(key)):
        return None
    return row if row.active(now or time.time()) else None


def verify_key(store: ServiceStore, key: str, *, now: float | None = None) -> str | None:
    """The tenant id a key authenticates, or ``None``."""
    row = authenticated_key(store, key, now=now)
    return None if row is None else row.tenant_id


class PrincipalRefused(Exception):
    """The key authenticates but may not act as the principal it asks for (403, one line)."""


def acting_user(headers: list[tuple[bytes, bytes]]) -> str | None:
    """The ``X-RAGSpine-User`` header's value (UTF-8), ``None`` when absent."""
    values = [value for name, value in headers if name.lower() == USER_HEADER.lower().encode()]
    if not values:
        return None
    if len(values) > 1:
        raise PrincipalRefused(f"send {USER_HEADER} once")
    try:
        return values[0].decode("utf-8").strip()
    except UnicodeDecodeError:
        raise PrincipalRefused(f"{USER_HEADER} must be UTF-8") from None


def principal_for_key(store: ServiceStore, key: ApiKey, user: str | None) -> Principal | None:
    """Who a request with ``key`` (and ``X-RAGSpine-User: user``, ``None`` when not sent) acts as;
    :class:`PrincipalRefused` saying why it may not (see the module docstring)."""
    if key.principal is not None:
        if user is not None:
            raise PrincipalRefused(f"this key acts as its own user: it may not name another in {USER_HEADER}")
        found = store.principal_for(key.tenant_id, key.principal)
        if found is None:
            raise PrincipalRefused(f"this key's user {key.principal!r} no longer exists: issue a new key")
        return found
    if not key.trusted_app:
        if user is not None:
            raise PrincipalRefused(f"only a trusted application key may name a user in {USER_HEADER}")
        return None
    if not user:
        raise PrincipalRefused(f"a trusted application key must name the end user in {USER_HEADER}")
    try:
        user_key = name_key(user, "user")
    except ConfigError as exc:
        raise PrincipalRefused(f"{USER_HEADER}: {exc}") from None
    found = store.principal_for(key.tenant_id, user_key)
    if found is None:
        raise PrincipalRefused(f"{USER_HEADER}: no user {user!r} in this tenant")
    return found


def authenticate(store: ServiceStore, token: str, headers: list[tuple[bytes, bytes]]) -> tuple[str, Principal | None] | None:
    """``(tenant id, principal)`` of a request's key and headers; ``None`` when the key does not
    authenticate; :class:`PrincipalRefused` when it may not act as asked."""
    row = authenticated_key(store, token)
    if row is None:
        return None
    return row.tenant_id, principal_for_key(store, row, acting_user(headers))


def principal_of(request: Any) -> Principal | None:
    """Who asks (``None``: a key that is no principal, which sees only documents without an ACL)."""
    return getattr(request.state, "principal", None)


def bearer(headers: list[tuple[bytes, bytes]]) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header; ``None`` if absent or malformed."""
    for name, value in headers:
        if name.lower() == b"authorization":
            scheme, _, token = value.decode("latin-1").strip().partition(" ")
            token = token.strip()
            return token if scheme.lower() == "bearer" and token and " " not in token else None
    return None


def is_admin(token: str | None, admin_token: str | None) -> bool:
    """Whether ``token`` is the server's admin token (never while none is set)."""
    return bool(admin_token) and token is not None and hmac.compare_digest(token.encode(), str(admin_token).encode())


def has_authorization(headers: list[tuple[bytes, bytes]]) -> bool:
    return any(name.lower() == b"authorization" for name, _ in headers)


class AuthMiddleware:
    """See the module docstring (pure ASGI, so nothing of the body is read before it)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or not (path.startswith("/v1/") or path == "/retrieval"):
            await self.app(scope, receive, send)
            return
        from anyio.to_thread import run_sync

        ctx = scope["app"].state.service
        token = bearer(scope["headers"])
        if path.startswith("/v1/admin/") or path == "/v1/admin":
            admin = ctx.settings.admin_token
            if not admin:
                await _json(send, 403, {"detail": "the admin endpoints are disabled: set RAGSPINE_ADMIN_TOKEN on the server"})
                return
            if not is_admin(token, admin):
                await _json(send, 401, {"detail": "admin endpoints need Authorization: Bearer <RAGSPINE_ADMIN_TOKEN>"}, bearer=True)
                return
            scope.setdefault("state", {})["admin"] = True
            await self.app(scope, receive, send)
            return
        dify = path == "/retrieval"
        if token is None:
            if dify:
                await _json(send, 403, {"error_code": DIFY_BAD_HEADER, "error_msg": "Invalid Authorization header format. Expected 'Bearer <api-key>' format."})
            else:
                what = "malformed" if has_authorization(scope["headers"]) else "missing"
                await _json(send, 401, {"detail": f"{what} Authorization header: send Authorization: Bearer <API key>"}, bearer=True)
            return
        try:
            found = await run_sync(authenticate, ctx.store, token, scope["headers"])
        except PrincipalRefused as exc:
            reason = str(exc)
            await _json(send, 403, {"error_code": DIFY_AUTH_FAILED, "error_msg": f"Authorization failed: {reason}"} if dify else {"detail": reason})
            return
        except BackendError as exc:  # the service store is down: the documented 503, not a 500
            # the caller is not authenticated yet: the driver's words (user, host, database)
            # go to the log and to /readyz behind the admin token, never to the caller
            log.warning("authentication could not reach the service store: %s", exc)
            detail = UNAVAILABLE_DETAIL
            await _json(send, 503, {"error_code": DIFY_UNAVAILABLE, "error_msg": detail} if dify else {"detail": detail})
            return
        if found is None:
            if dify:
                await _json(send, 403, {"error_code": DIFY_AUTH_FAILED, "error_msg": "Authorization failed: unknown, expired or revoked API key."})
            else:
                await _json(send, 401, {"detail": "invalid, expired or revoked API key"}, bearer=True)
            return
        state = scope.setdefault("state", {})
        state["tenant_id"], state["principal"] = found
        await self.app(scope, receive, send)


async def _json(send: Any, status: int, body: dict[str, Any], *, bearer: bool = False) -> None:
    data = json.dumps(body).encode("utf-8")
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    if bearer:
        headers.append((b"www-authenticate", b"Bearer"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})
