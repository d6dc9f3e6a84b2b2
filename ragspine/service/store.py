"""``ServiceStore``: tenants, API keys, principals, library ownership and jobs — SQL on SQLite or PostgreSQL.

``ServiceStore.for_stack(stack)`` uses the stack's own database: the chunk store's SQLite
file (tables created here with ``create_all``; write transactions ``BEGIN IMMEDIATE`` so they
queue behind the chunk store's writers instead of failing), or its PostgreSQL engine (tables
from the Alembic revision ``0003_service``: ``stack.db.init_schema()`` checks the schema is
current — ``ragspine migrate`` — or applies it with ``RAGSPINE_AUTO_MIGRATE=1``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import MISSING, dataclass, fields
from functools import cached_property, lru_cache
from typing import Any

import sqlalchemy as sa

from ragspine.errors import BackendError, ConfigError
from ragspine.profile import Profile
from ragspine.retrieval.ranking import Ranking
from ragspine.security.principals import KINDS, Principal, look_alike_key, name_key
from ragspine.service.recipe import from_columns, recipe_json
from ragspine.service.schema import (
    api_key,
    job,
    job_payload,
    membership,
    metadata,
    principal,
    service_library,
    tenant,
)

JOB_STATES = ("queued", "running", "succeeded", "failed")


class Conflict(Exception):
    """A row with that key exists already."""


class Unknown(LookupError):
    """A tenant, user or group that does not exist (answered 404)."""


class Unstorable(ValueError):
    """A value the database cannot hold, e.g. a NUL character on PostgreSQL (answered 422)."""


def _row(cls: Any, row: Any) -> Any:
    """``cls`` from a row; a NULL in a column with a dataclass default (added later) is that default."""
    mapping = row._mapping
    values = {}
    for f in fields(cls):
        value = mapping[f.name]
        values[f.name] = f.default if value is None and f.default is not MISSING else value
    return cls(**values)


@dataclass(frozen=True)
class Tenant:
    tenant_id: str
    name: str
    created_at: float


@dataclass(frozen=True)
class ApiKey:
    key_id: str
    tenant_id: str
    prefix: str
    key_hash: str
    label: str
    created_at: float
    expires_at: float | None
    revoked_at: float | None
    #: a user key of the tenant: the key acts as that user (``None``: no principal)
    principal: str | None = None
    #: an application that names its end user per request (``X-RAGSpine-User``)
    trusted_app: bool = False

    def active(self, now: float) -> bool:
        return self.revoked_at is None and (self.expires_at is None or now < self.expires_at)


@dataclass(frozen=True)
class PrincipalEntry:
    """A tenant's user or group: ``key`` is :func:`name_key` of ``name`` (as written)."""

    tenant_id: str
    kind: str  # user | group
    key: str
    name: str
    look_alike: str
    created_at: float


#: the longest canonical name or look-alike key stored (UTF-8 bytes; within every index's limit)
MAX_KEY_BYTES = 1024


def principal_keys(name: str, kind: str) -> tuple[str, str]:
    """``(name_key, look_alike_key)`` of a user or group name; ``ConfigError`` naming the problem."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
    key = name_key(name, kind)
    look_alike = look_alike_key(name)
    if max(len(key.encode()), len(look_alike.encode())) > MAX_KEY_BYTES:
        raise ConfigError(f"{kind} name {name[:20]!r}... folds to more than {MAX_KEY_BYTES} bytes: use a shorter name")
    return key, look_alike


#: A library's reasoning fields (API) → ``ReasoningOptions.override``'s keywords (and the Profile's choices).
REASONING_FIELDS = {"query_transform": "transform", "decompose": "decompose", "adaptive": "adaptive",
                    "corrective": "corrective", "query_fanout": "fanout"}


@dataclass(frozen=True)
class Library:
    library_id: str  # catalog id "<tenant_id>/<name>"
    tenant_id: str
    name: str
    description: str
    created_at: float
    #: its recipe: the Profile choices it made, as JSON (ragspine/service/recipe.py); what it
    #: leaves out (its reasoning, RAPTOR, where it chose none) is the server's at each search
    profile: str = "{}"

    @classmethod
    def create(cls, library_id: str, tenant_id: str, name: str, description: str, created_at: float, *, embedding: str,
               retrieval_mode: str, chunker: str, contextual: str, ranking: Ranking, reasoning: Mapping[str, Any],
               raptor: bool | None, options: Mapping[str, Any] | None = None) -> Library:
        """A new library with its choices (``reasoning``: API field -> value, ``None`` where it chose none;
        ``options``: the registered profile options it sets)."""
        choices: dict[str, Any] = {
            "mode": retrieval_mode, "embedding": embedding, "chunker": chunker, "contextual": contextual,
            "ranking": {"reranker": ranking.reranker, "rerank_depth": ranking.rerank_depth, "postprocessor": ranking.postprocessor,
                        "fusion_weights": ranking.fusion_weights},
        }
        chosen = {REASONING_FIELDS[field]: value for field, value in reasoning.items() if value is not None}
        if chosen:
            choices["reasoning"] = chosen
        if raptor is not None:
            choices["raptor"] = bool(raptor)
        if options:
            choices["options"] = dict(options)
        return cls(library_id, tenant_id, name, description, created_at, recipe_json(choices))

    @cached_property
    def choices(self) -> dict[str, Any]:
        """Its recipe's JSON, parsed once per row read (every field below reads it)."""
        return dict(json.loads(self.profile or "{}"))

    def recipe(self, server: Profile) -> Profile:
        """The recipe a search of it runs: its choices over the server's (``server``)."""
        return _recipe(self.profile, server)

    def _choice(self, where: str, key: str, default: Any) -> Any:
        holder = self.choices.get(where, {}) if where else self.choices
        return holder.get(key, default)

    @property
    def embedding(self) -> str:
        return str(self._choice("", "embedding", "none"))

    @property
    def retrieval_mode(self) -> str:
        return str(self._choice("", "mode", "auto"))

    @property
    def chunker(self) -> str:
        return str(self._choice("", "chunker", "default"))

    @property
    def contextual(self) -> str:
        return str(self._choice("", "contextual", "none"))

    @property
    def ranking(self) -> Ranking:
        ranking = self.choices.get("ranking", {})
        return Ranking(ranking.get("reranker", "none"), ranking.get("postprocessor", "none"), ranking.get("fusion_weights"),
                       int(ranking.get("rerank_depth", 50)))

    @property
    def raptor(self) -> bool | None:
        value = self._choice("", "raptor", None)
        return None if value is None else bool(value)

    @property
    def reasoning(self) -> dict[str, Any]:
        """The reasoning it chose, as :meth:`~ragspine.retrieval.reasoning.ReasoningOptions.override`'s
        keywords (``None``: the server's)."""
        chosen = self.choices.get("reasoning", {})
        return {option: chosen.get(option) for option in REASONING_FIELDS.values()}


@lru_cache(maxsize=4096)
def _recipe(profile_json: str, server: Profile) -> Profile:
    """A library's recipe over the server's, checked once per (library recipe, server recipe):
    every request of a library asks for it."""
    return Profile.from_json(profile_json or "{}", base=server)


@dataclass(frozen=True)
class Job:
    job_id: str
    tenant_id: str
    library_id: str
    state: str
    done: int
    total: int
    doc_ids: list[str]
    chunks: int
    error: str | None
    warning: str | None
    created_at: float
    started_at: float | None
    finished_at: float | None
    heartbeat_at: float | None = None
    worker: str | None = None


_JOB_COLUMNS = [job.c[f.name] for f in fields(Job)]


def acl_residue(payload: Any) -> dict[str, Any] | None:
    """What an ended job's payload keeps: ``{"documents": [{"doc_id", "acl"}]}`` of its documents
    uploaded with an ACL (``None``: none was). A job that did not succeed may name a document
    that never reached the store, so its ACL is nowhere else — and a principal who may not read
    it must still get the unknown-job 404 (``routes/visibility.py``)."""
    if isinstance(payload, str):
        payload = json.loads(payload)
    documents = payload.get("documents") if isinstance(payload, dict) else None
    kept = [{"doc_id": d["doc_id"], "acl": d["acl"]} for d in documents or []
            if isinstance(d, dict) and isinstance(d.get("doc_id"), str) and d.get("acl") is not None]
    return {"documents": kept} if kept else None


def _end_payloads(conn: Any, job_ids: Sequence[str], *, kept: bool) -> None:
    """Drop the payloads of jobs that just ended; with ``kept`` (they did not succeed), keep
    their :func:`acl_residue` (a succeeded job's documents carry their ACLs in the store)."""
    residues = {}
    if kept:
        rows = conn.execute(sa.select(job_payload.c.job_id, job_payload.c.payload).where(job_payload.c.job_id.in_(job_ids))).all()
        residues = {r.job_id: acl_residue(r.payload) for r in rows}
    gone = [j for j in job_ids if residues.get(j) is None]
    if gone:
        conn.execute(job_payload.delete().where(job_payload.c.job_id.in_(gone)))
    for job_id, residue in residues.items():
        if residue is not None:
            conn.execute(job_payload.update().where(job_payload.c.job_id == job_id).values(payload=residue))


class ServiceStore:
    def __init__(self, engine: Any, *, create: bool = False) -> None:
        self.engine = engine
        if create:
            metadata.create_all(engine)
            _add_missing_columns(engine)
            _convert_old_recipes(engine)

    @classmethod
    def for_stack(cls, stack: Any) -> ServiceStore:
        from ragspine.stores.sqlite.database import SQLiteDatabase

        db = stack.db
        db.init_schema()  # PostgreSQL: SchemaError naming `ragspine migrate` when behind
        if isinstance(db, SQLiteDatabase):
            return cls(sqlite_engine(db.path), create=True)
        return cls(db.engine)

    def close(self) -> None:
        if self.engine.dialect.name == "sqlite":
            self.engine.dispose()

    @contextmanager
    def _write(self) -> Iterator[Any]:
        try:
            with self.engine.connect().execution_options(ragspine_write=True) as conn, conn.begin():
                yield conn
        except sa.exc.IntegrityError as exc:
            raise Conflict(str(exc.orig)) from None
        except sa.exc.DataError as exc:  # bad input, not an outage
            raise Unstorable(f"invalid value: {str(exc.orig).strip().splitlines()[0]}") from None
        except sa.exc.SQLAlchemyError as exc:
            raise BackendError(f"service store write failed: {exc}") from exc

    def _read(self, statement: Any) -> list[Any]:
        try:
            with self.engine.connect() as conn:
                return list(conn.execute(statement).all())
        except sa.exc.DataError:
            # a lookup value the database cannot hold (a NUL character on PostgreSQL) matches
            # no row — as on SQLite — rather than failing as if the store were down
            return []
        except UnicodeEncodeError:  # a lone surrogate (the driver cannot encode it): no stored text has one
            return []
        except sa.exc.SQLAlchemyError as exc:
            raise BackendError(f"service store read failed: {exc}") from exc

    def ping(self) -> None:
        self._read(sa.select(sa.literal(1)))

    # -- tenants and keys ---------------------------------------------------------------
    def create_tenant(self, tenant_id: str, name: str) -> Tenant:
        row = Tenant(tenant_id, name, time.time())
        with self._write() as conn:
            conn.execute(tenant.insert().values(**row.__dict__))
        return row

    def get_tenant(self, tenant_id: str) -> Tenant | None:
        rows = self._read(sa.select(tenant).where(tenant.c.tenant_id == tenant_id))
        return _row(Tenant, rows[0]) if rows else None

    def list_tenants(self) -> list[Tenant]:
        return [_row(Tenant, r) for r in self._read(sa.select(tenant).order_by(tenant.c.tenant_id))]

    def add_key(self, key: ApiKey) -> ApiKey:
        with self._write() as conn:
            conn.execute(api_key.insert().values(**key.__dict__))
        return key

    def get_key(self, key_id: str) -> ApiKey | None:
        rows = self._read(sa.select(api_key).where(api_key.c.key_id == key_id))
        return _row(ApiKey, rows[0]) if rows else None

    def list_keys(self, tenant_id: str) -> list[ApiKey]:
        query = sa.select(api_key).where(api_key.c.tenant_id == tenant_id).order_by(api_key.c.created_at)
        return [_row(ApiKey, r) for r in self._read(query)]

    def end_key(self, tenant_id: str, key_id: str, *, at: float, revoke: bool) -> bool:
        """Revoke a key now (``revoke``) or let it expire ``at`` (rotation's grace period). A
        key's end is never postponed: rotating a key again during its grace period keeps the
        earlier expiry."""
        values: dict[str, Any] = {"revoked_at": at}
        where = (api_key.c.key_id == key_id) & (api_key.c.tenant_id == tenant_id) & api_key.c.revoked_at.is_(None)
        if not revoke:
            values = {"expires_at": at}
            where = where & (api_key.c.expires_at.is_(None) | (api_key.c.expires_at > at))
        with self._write() as conn:
            return bool(conn.execute(api_key.update().where(where).values(**values)).rowcount)

    # -- principals: users, groups, memberships ------------------------------------------
    # Every method takes names as written (any case or compatibility form: ``name_key`` decides).
    def add_principal(self, tenant_id: str, kind: str, name: str) -> PrincipalEntry:
        """A new user or group; ``Conflict`` for an existing name or one that looks like another
        of that kind (naming it), ``Unknown`` for an unknown tenant, ``ConfigError`` for a bad name.
        A new user starts with no groups and no key, whatever a namesake removed before had."""
        key, look_alike = principal_keys(name, kind)
        row = PrincipalEntry(tenant_id, kind, key, name, look_alike, time.time())
        ours = (principal.c.tenant_id == tenant_id) & (principal.c.kind == kind)
        with self._write() as conn:
            self._tenant_in(conn, tenant_id)
            same = conn.execute(sa.select(principal.c.key, principal.c.name)
                                .where(ours & ((principal.c.key == key) | (principal.c.look_alike == look_alike)))).first()
            if same is not None and same.key == key:
                raise Conflict(f"{kind} {same.name!r} exists already in tenant {tenant_id!r}")
            if same is not None:
                raise Conflict(f"{kind} {name!r} looks like the existing {kind} {same.name!r} of tenant {tenant_id!r}:"
                               " choose a name that cannot be mistaken for it")
            conn.execute(principal.insert().values(**row.__dict__))
            self._forget(conn, tenant_id, kind, key, at=row.created_at)  # leftovers of a namesake (a race with its removal)
        return row

    def remove_principal(self, tenant_id: str, kind: str, name: str) -> tuple[PrincipalEntry, list[str]]:
        """Remove a user or group with its memberships (a user: and revoke the keys bound to it);
        ``(the removed entry, the revoked key ids)``; ``Unknown`` when there is none."""
        key, _ = principal_keys(name, kind)
        where = (principal.c.tenant_id == tenant_id) & (principal.c.kind == kind) & (principal.c.key == key)
        with self._write() as conn:
            found = conn.execute(sa.select(principal).where(where)).first()
            if found is None:
                raise Unknown(f"{kind} {name!r} of tenant {tenant_id!r} not found")
            conn.execute(principal.delete().where(where))
            revoked = self._forget(conn, tenant_id, kind, key, at=time.time())
        return _row(PrincipalEntry, found), revoked

    @staticmethod
    def _forget(conn: Any, tenant_id: str, kind: str, key: str, *, at: float) -> list[str]:
        """Delete the memberships of a user or group ``key``; a user's bound keys are revoked (their ids)."""
        column = membership.c.user_key if kind == "user" else membership.c.group_key
        conn.execute(membership.delete().where((membership.c.tenant_id == tenant_id) & (column == key)))
        if kind != "user":
            return []
        bound = (api_key.c.tenant_id == tenant_id) & (api_key.c.principal == key) & api_key.c.revoked_at.is_(None)
        ids = [r.key_id for r in conn.execute(sa.select(api_key.c.key_id).where(bound)).all()]
        if ids:
            conn.execute(api_key.update().where(bound).values(revoked_at=at))
        return ids

    @staticmethod
    def _tenant_in(conn: Any, tenant_id: str) -> None:
        if conn.execute(sa.select(tenant.c.tenant_id).where(tenant.c.tenant_id == tenant_id)).first() is None:
            raise Unknown(f"tenant {tenant_id!r} not found")

    def get_principal(self, tenant_id: str, kind: str, name: str) -> PrincipalEntry | None:
        key, _ = principal_keys(name, kind)
        where = (principal.c.tenant_id == tenant_id) & (principal.c.kind == kind) & (principal.c.key == key)
        rows = self._read(sa.select(principal).where(where))
        return _row(PrincipalEntry, rows[0]) if rows else None

    def list_principals(self, tenant_id: str, kind: str) -> list[PrincipalEntry]:
        where = (principal.c.tenant_id == tenant_id) & (principal.c.kind == kind)
        return [_row(PrincipalEntry, r) for r in self._read(sa.select(principal).where(where).order_by(principal.c.key))]

    def add_member(self, tenant_id: str, group: str, user: str) -> bool:
        """Put ``user`` in ``group`` (``False``: it was already); ``Unknown`` naming the one missing.
        The two rows are locked (PostgreSQL), so a concurrent removal never leaves a membership behind."""
        keys = {"group": principal_keys(group, "group")[0], "user": principal_keys(user, "user")[0]}
        with self._write() as conn:
            for kind, name in (("group", group), ("user", user)):
                where = (principal.c.tenant_id == tenant_id) & (principal.c.kind == kind) & (principal.c.key == keys[kind])
                if conn.execute(sa.select(principal.c.key).where(where).with_for_update()).first() is None:
                    self._tenant_in(conn, tenant_id)
                    raise Unknown(f"{kind} {name!r} of tenant {tenant_id!r} not found")
            pair = ((membership.c.tenant_id == tenant_id) & (membership.c.group_key == keys["group"])
                    & (membership.c.user_key == keys["user"]))
            if conn.execute(sa.select(membership.c.user_key).where(pair)).first() is not None:
                return False
            conn.execute(membership.insert().values(tenant_id=tenant_id, group_key=keys["group"], user_key=keys["user"]))
        return True

    def remove_member(self, tenant_id: str, group: str, user: str) -> bool:
        """Take ``user`` out of ``group``; ``False`` when it was not in it."""
        group_key, user_key = principal_keys(group, "group")[0], principal_keys(user, "user")[0]
        pair = (membership.c.tenant_id == tenant_id) & (membership.c.group_key == group_key) & (membership.c.user_key == user_key)
        with self._write() as conn:
            return bool(conn.execute(membership.delete().where(pair)).rowcount)

    def related(self, tenant_id: str, kind: str, name: str) -> list[PrincipalEntry]:
        """A group's members (``kind="group"``) or a user's groups (``kind="user"``), by key."""
        key, _ = principal_keys(name, kind)
        mine, theirs = (membership.c.group_key, membership.c.user_key) if kind == "group" else (membership.c.user_key, membership.c.group_key)
        other = "user" if kind == "group" else "group"
        query = (sa.select(principal).join(membership, (membership.c.tenant_id == principal.c.tenant_id) & (theirs == principal.c.key))
                 .where((principal.c.tenant_id == tenant_id) & (principal.c.kind == other) & (mine == key)).order_by(principal.c.key))
        return [_row(PrincipalEntry, r) for r in self._read(query)]

    def memberships(self, tenant_id: str) -> dict[str, list[str]]:
        """Every user key of the tenant → the keys of its groups (sorted)."""
        query = (sa.select(membership.c.user_key, membership.c.group_key).where(membership.c.tenant_id == tenant_id)
                 .order_by(membership.c.user_key, membership.c.group_key))
        out: dict[str, list[str]] = {}
        for r in self._read(query):
            out.setdefault(r.user_key, []).append(r.group_key)
        return out

    def principal_for(self, tenant_id: str, user_key: str) -> Principal | None:
        """The user ``user_key`` (canonical) with its groups, read now (a membership change counts
        on the next request: nothing is cached); ``None`` when the tenant has no such user."""
        groups = sa.select(membership.c.group_key).where((membership.c.tenant_id == tenant_id) & (membership.c.user_key == user_key))
        which = (((principal.c.kind == "user") & (principal.c.key == user_key))
                 | ((principal.c.kind == "group") & principal.c.key.in_(groups.scalar_subquery())))
        rows = self._read(sa.select(principal.c.kind, principal.c.key).where((principal.c.tenant_id == tenant_id) & which))
        if not any(r.kind == "user" for r in rows):
            return None
        return Principal(user_key, frozenset(r.key for r in rows if r.kind == "group"))

    # -- libraries ----------------------------------------------------------------------
    def add_library(self, library: Library) -> Library:
        with self._write() as conn:
            conn.execute(service_library.insert().values(**{f.name: getattr(library, f.name) for f in fields(Library)}))
        return library

    def get_library(self, tenant_id: str, name: str) -> Library | None:
        where = (service_library.c.tenant_id == tenant_id) & (service_library.c.name == name)
        rows = self._read(sa.select(service_library).where(where))
        return _row(Library, rows[0]) if rows else None

    def library_by_id(self, library_id: str) -> Library | None:
        rows = self._read(sa.select(service_library).where(service_library.c.library_id == library_id))
        return _row(Library, rows[0]) if rows else None

    def list_libraries(self, tenant_id: str) -> list[Library]:
        query = sa.select(service_library).where(service_library.c.tenant_id == tenant_id).order_by(service_library.c.name)
        return [_row(Library, r) for r in self._read(query)]

    def delete_library(self, library_id: str) -> None:
        """The ownership row and the library's jobs (a queued one then never runs)."""
        with self._write() as conn:
            ids = sa.select(job.c.job_id).where(job.c.library_id == library_id).scalar_subquery()
            conn.execute(job_payload.delete().where(job_payload.c.job_id.in_(ids)))
            conn.execute(job.delete().where(job.c.library_id == library_id))
            conn.execute(service_library.delete().where(service_library.c.library_id == library_id))

    # -- jobs ---------------------------------------------------------------------------
    def create_job(self, job_id: str, tenant_id: str, library_id: str, doc_ids: Sequence[str], payload: Mapping[str, Any]) -> Job:
        values: dict[str, Any] = {
            "job_id": job_id, "tenant_id": tenant_id, "library_id": library_id, "state": "queued",
            "done": 0, "total": len(doc_ids), "doc_ids": list(doc_ids), "chunks": 0,
            "error": None, "warning": None, "created_at": time.time(), "started_at": None, "finished_at": None,
        }
        with self._write() as conn:
            conn.execute(job.insert().values(**values))
            conn.execute(job_payload.insert().values(job_id=job_id, payload=payload))
        return Job(**values)

    def get_job(self, job_id: str) -> Job | None:
        rows = self._read(sa.select(*_JOB_COLUMNS).where(job.c.job_id == job_id))
        return _row(Job, rows[0]) if rows else None

    def list_jobs(self, tenant_id: str, *, library_id: str | None = None, limit: int = 50) -> list[Job]:
        where = job.c.tenant_id == tenant_id
        if library_id is not None:
            where = where & (job.c.library_id == library_id)
        query = sa.select(*_JOB_COLUMNS).where(where).order_by(job.c.created_at.desc()).limit(limit)
        return [_row(Job, r) for r in self._read(query)]

    def claim_job(self, job_id: str, worker: str = "") -> tuple[Job, Any] | None:
        """Move a queued job to ``running`` (its first heartbeat, by ``worker``) and return it
        with its payload; ``None`` when it is not queued (taken by another worker, superseded,
        or its library deleted)."""
        now = time.time()
        with self._write() as conn:
            moved = conn.execute(
                job.update().where((job.c.job_id == job_id) & (job.c.state == "queued"))
                .values(state="running", started_at=now, heartbeat_at=now, worker=worker or None)
            ).rowcount
            if not moved:
                return None
            row = conn.execute(sa.select(*_JOB_COLUMNS).where(job.c.job_id == job_id)).one()
            payload = conn.execute(sa.select(job_payload.c.payload).where(job_payload.c.job_id == job_id)).scalar()
        return _row(Job, row), payload

    def heartbeat(self, job_id: str) -> bool:
        """The running job's worker is alive; ``False`` once the job is no longer running."""
        with self._write() as conn:
            return bool(conn.execute(
                job.update().where((job.c.job_id == job_id) & (job.c.state == "running")).values(heartbeat_at=time.time())
            ).rowcount)

    def running_jobs(self) -> list[Job]:
        return [_row(Job, r) for r in self._read(sa.select(*_JOB_COLUMNS).where(job.c.state == "running"))]

    def fail_running(self, job_id: str, reason: str, *, heartbeat_before: float | None = None) -> bool:
        """Mark a job that is still ``running`` failed (and, with ``heartbeat_before``, only if
        its last heartbeat is older): ``True`` when this call did. Two reapers never both do."""
        where = (job.c.job_id == job_id) & (job.c.state == "running")
        if heartbeat_before is not None:
            where = where & (sa.func.coalesce(job.c.heartbeat_at, job.c.started_at, 0.0) < heartbeat_before)
        with self._write() as conn:
            moved = conn.execute(job.update().where(where).values(state="failed", error=reason, finished_at=time.time())).rowcount
            if moved:
                _end_payloads(conn, [job_id], kept=True)
        return bool(moved)

    def queued_before(self, created_before: float) -> list[str]:
        """Queued jobs older than ``created_before`` (oldest first): candidates for re-sending."""
        query = (sa.select(job.c.job_id).where((job.c.state == "queued") & (job.c.created_at < created_before))
                 .order_by(job.c.created_at))
        return [r.job_id for r in self._read(query)]

    def progress(self, job_id: str, done: int, chunks: int, *, total: int | None = None) -> None:
        values: dict[str, Any] = {"done": done, "chunks": chunks}
        if total is not None:
            values["total"] = total
        with self._write() as conn:
            conn.execute(job.update().where(job.c.job_id == job_id).values(**values))

    def finish_job(
        self, job_id: str, state: str, *, error: str | None = None, warning: str | None = None,
        done: int | None = None, chunks: int | None = None,
    ) -> None:
        values: dict[str, Any] = {"state": state, "error": error, "warning": warning, "finished_at": time.time()}
        if done is not None:
            values.update(done=done, chunks=chunks or 0)
        with self._write() as conn:
            conn.execute(job.update().where(job.c.job_id == job_id).values(**values))
            _end_payloads(conn, [job_id], kept=state != "succeeded")

    def delete_job(self, job_id: str) -> None:
        """Remove a job that never reached the queue."""
        with self._write() as conn:
            conn.execute(job_payload.delete().where(job_payload.c.job_id == job_id))
            conn.execute(job.delete().where(job.c.job_id == job_id))

    def supersede(self, library_id: str, doc_id: str, reason: str, *, keep: str | None = None) -> int:
        """Fail the queued single-document jobs of ``doc_id`` but ``keep`` (a later request
        replaces them)."""
        with self._write() as conn:
            rows = conn.execute(
                sa.select(job.c.job_id, job.c.doc_ids).where((job.c.library_id == library_id) & (job.c.state == "queued"))
            ).all()
            ids = [r.job_id for r in rows if list(r.doc_ids) == [doc_id] and r.job_id != keep]
            if ids:
                conn.execute(
                    job.update().where(job.c.job_id.in_(ids) & (job.c.state == "queued"))
                    .values(state="failed", error=reason, finished_at=time.time())
                )
                _end_payloads(conn, ids, kept=True)
        return len(ids)

    def job_ids(self, state: str) -> list[str]:
        return [r.job_id for r in self._read(sa.select(job.c.job_id).where(job.c.state == state).order_by(job.c.created_at))]

    def job_counts(self) -> dict[str, int]:
        counts = {state: 0 for state in JOB_STATES}
        for state, n in self._read(sa.select(job.c.state, sa.func.count()).group_by(job.c.state)):
            counts[state] = int(n)
        return counts


def _add_missing_columns(engine: Any) -> None:
    """A SQLite file made by an older RAGSpine gets the columns added since (nullable ones)."""
    inspector = sa.inspect(engine)
    for table in metadata.sorted_tables:
        present = {c["name"] for c in inspector.get_columns(table.name)}
        missing = [c for c in table.columns if c.name not in present]
        if not missing:
            continue
        quote = engine.dialect.identifier_preparer.quote
        with engine.connect().execution_options(ragspine_write=True) as conn, conn.begin():
            for column in missing:  # our own tables and columns, quoted; nullable, so no default needed
                kind = column.type.compile(dialect=engine.dialect)
                conn.execute(sa.text(f"ALTER TABLE {quote(table.name)} ADD COLUMN {quote(column.name)} {kind}"))


def _convert_old_recipes(engine: Any) -> None:
    """A SQLite file made before the recipe column: each library's old columns become its
    ``profile`` JSON (:func:`~ragspine.service.recipe.from_columns`), once; the old columns stay
    (unread), as SQLite drops no column cheaply."""
    present = {c["name"] for c in sa.inspect(engine).get_columns(service_library.name)}
    if "retrieval_mode" not in present:
        return
    with engine.connect().execution_options(ragspine_write=True) as conn, conn.begin():
        rows = conn.execute(sa.text("SELECT * FROM ragspine_service_library WHERE profile IS NULL")).mappings().all()
        for row in rows:  # our own table; values bound
            conn.execute(sa.text("UPDATE ragspine_service_library SET profile = :profile WHERE library_id = :library_id"),
                         {"profile": recipe_json(from_columns(row)), "library_id": row["library_id"]})


def sqlite_engine(path: str) -> Any:
    """An engine on the chunk store's SQLite file: WAL readers, ``BEGIN IMMEDIATE`` writers."""
    if path == ":memory:":
        raise BackendError("the service needs a SQLite file (RAGSPINE_CHUNK_STORE), not :memory:")
    engine = sa.create_engine(f"sqlite:///{path}", connect_args={"timeout": 30, "check_same_thread": False})

    @sa.event.listens_for(engine, "connect")
    def _connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # SQLAlchemy's "begin" event below emits BEGIN

    @sa.event.listens_for(engine, "begin")
    def _begin(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get("ragspine_write") else "BEGIN")

    return engine
