"""The service's tables (SQLAlchemy Core), the same on SQLite and PostgreSQL.

On the embedded default they live in the chunk store's SQLite file (``create_all``); on
PostgreSQL the Alembic revision ``0003_service`` creates them. Times are Unix seconds
(``Float``), so expiry comparisons are plain numbers on both databases.

* ``ragspine_tenant`` — one row per tenant;
* ``ragspine_api_key`` — a tenant's keys: the SHA-256 of the key and its display prefix
  (the key itself is never stored); ``revoked_at`` / ``expires_at`` end it;
* ``ragspine_service_library`` — which tenant owns which catalog library, under which
  external name, and its recipe in one JSON column, ``profile``: the choices of
  :class:`~ragspine.profile.Profile` it made — embedding backend, retrieval mode, chunking,
  ranking, and its own query-time reasoning and RAPTOR switch where it chose them (revision
  ``0013_library_profile``, which converted the fourteen columns that held them before);
* ``ragspine_job`` — ingestion jobs: state, progress, error, and the running job's heartbeat
  (``heartbeat_at``, ``worker``: revision ``0006_job_heartbeat``; an older SQLite file gets
  the two columns when the service opens it);
* ``ragspine_job_payload`` — a job's validated documents while it waits or runs (deleted when
  it succeeds; a job that fails or is superseded keeps only its documents' ``{doc_id, acl}``, so
  a principal who may not read them still gets the unknown-job 404; kept apart so that
  progress updates never rewrite a large row);
* ``ragspine_principal`` — a tenant's users and groups (revision ``0015_principals``): ``key``
  is :func:`~ragspine.security.principals.name_key` of the ``name`` as written, ``look_alike``
  its confusable skeleton (unique per tenant and kind: no name may imitate another);
* ``ragspine_membership`` — which user is in which group (canonical keys);
  ``ragspine_api_key.principal`` (a user key: the key acts as that user) and
  ``ragspine_api_key.trusted_app`` (an application naming its end user per request in
  ``X-RAGSpine-User``) come with it — an older SQLite file gets both columns when the service
  opens it.
"""

from __future__ import annotations

import sqlalchemy as sa

metadata = sa.MetaData()

tenant = sa.Table(
    "ragspine_tenant",
    metadata,
    sa.Column("tenant_id", sa.String(64), primary_key=True),
    sa.Column("name", sa.Text, nullable=False, server_default=""),
    sa.Column("created_at", sa.Float, nullable=False),
)

api_key = sa.Table(
    "ragspine_api_key",
    metadata,
    sa.Column("key_id", sa.String(32), primary_key=True),
    sa.Column("tenant_id", sa.String(64), nullable=False),
    sa.Column("prefix", sa.String(64), nullable=False),
    sa.Column("key_hash", sa.String(64), nullable=False),
    sa.Column("label", sa.Text, nullable=False, server_default=""),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("expires_at", sa.Float, nullable=True),
    sa.Column("revoked_at", sa.Float, nullable=True),
    sa.Column("principal", sa.Text, nullable=True),  # a user key of the tenant: the key acts as that user (0015)
    sa.Column("trusted_app", sa.Boolean, nullable=True),  # the key names its end user per request (0015)
    sa.Index("ragspine_api_key_tenant", "tenant_id"),
)

service_library = sa.Table(
    "ragspine_service_library",
    metadata,
    sa.Column("library_id", sa.String(200), primary_key=True),  # the catalog id: "<tenant>/<name>"
    sa.Column("tenant_id", sa.String(64), nullable=False),
    sa.Column("name", sa.String(64), nullable=False),
    sa.Column("description", sa.Text, nullable=False, server_default=""),
    sa.Column("created_at", sa.Float, nullable=False),
    # its recipe: the Profile choices it made, as JSON (revision 0013_library_profile; a choice it
    # left out — its query-time reasoning, RAPTOR — is the server's at each search)
    sa.Column("profile", sa.Text, nullable=True),
    sa.UniqueConstraint("tenant_id", "name", name="ragspine_service_library_name"),
)

job = sa.Table(
    "ragspine_job",
    metadata,
    sa.Column("job_id", sa.String(32), primary_key=True),
    sa.Column("tenant_id", sa.String(64), nullable=False),
    sa.Column("library_id", sa.String(200), nullable=False),
    sa.Column("state", sa.String(16), nullable=False),  # queued | running | succeeded | failed
    sa.Column("done", sa.Integer, nullable=False, server_default="0"),
    sa.Column("total", sa.Integer, nullable=False, server_default="0"),
    sa.Column("doc_ids", sa.JSON, nullable=False),
    sa.Column("chunks", sa.Integer, nullable=False, server_default="0"),
    sa.Column("error", sa.Text, nullable=True),
    sa.Column("warning", sa.Text, nullable=True),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("started_at", sa.Float, nullable=True),
    sa.Column("finished_at", sa.Float, nullable=True),
    sa.Column("heartbeat_at", sa.Float, nullable=True),  # a running job's worker writes it every few seconds
    sa.Column("worker", sa.Text, nullable=True),  # "host:pid" of the worker that claimed it
    sa.Index("ragspine_job_tenant", "tenant_id", "created_at"),
    sa.Index("ragspine_job_state", "state"),
)

job_payload = sa.Table(
    "ragspine_job_payload",
    metadata,
    sa.Column("job_id", sa.String(32), primary_key=True),
    sa.Column("payload", sa.JSON, nullable=False),
)


principal = sa.Table(
    "ragspine_principal",
    metadata,
    sa.Column("tenant_id", sa.String(64), primary_key=True),
    sa.Column("kind", sa.String(8), primary_key=True),  # user | group
    sa.Column("key", sa.Text, primary_key=True),  # name_key(name)
    sa.Column("name", sa.Text, nullable=False),  # as written
    sa.Column("look_alike", sa.Text, nullable=False),  # look_alike_key(name)
    sa.Column("created_at", sa.Float, nullable=False),
    sa.UniqueConstraint("tenant_id", "kind", "look_alike", name="ragspine_principal_look_alike"),
)

membership = sa.Table(
    "ragspine_membership",
    metadata,
    sa.Column("tenant_id", sa.String(64), primary_key=True),
    sa.Column("group_key", sa.Text, primary_key=True),
    sa.Column("user_key", sa.Text, primary_key=True),
    sa.Index("ragspine_membership_user", "tenant_id", "user_key"),
)
