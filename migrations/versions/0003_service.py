"""The HTTP service: tenants, API keys (hashed), library ownership, ingestion jobs (+ payloads).

The tables are those of ``ragspine/service/schema.py`` (the same on SQLite, where the
service creates them itself). ``ragspine_library.tenant_id`` (0001) already records the
owner in the catalog; ``ragspine_service_library`` adds the external name, embedding
backend and retrieval mode.

Revision ID: 0003_service
Revises: 0002_vector_space
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003_service"
down_revision = "0002_vector_space"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "ragspine_tenant",
        sa.Column("tenant_id", sa.String(64), primary_key=True),
        sa.Column("name", sa.Text, nullable=False, server_default=""),
        sa.Column("created_at", sa.Float, nullable=False),
    )
    op.create_table(
        "ragspine_api_key",
        sa.Column("key_id", sa.String(32), primary_key=True),
        sa.Column("tenant_id", sa.String(64), nullable=False),
        sa.Column("prefix", sa.String(64), nullable=False),
        sa.Column("key_hash", sa.String(64), nullable=False),
        sa.Column("label", sa.Text, nullable=False, server_default=""),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("expires_at", sa.Float, nullable=True),
        sa.Column("revoked_at", sa.Float, nullable=True),
    )
    op.create_index("ragspine_api_key_tenant", "ragspine_api_key", ["tenant_id"])
    op.create_table(
        "ragspine_service_library",
        sa.Column("library_id", sa.String(200), primary_key=True),
        sa.Column("tenant_id", sa.String(64), nullable=False),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("description", sa.Text, nullable=False, server_default=""),
        sa.Column("embedding", sa.Text, nullable=False, server_default="none"),
        sa.Column("retrieval_mode", sa.Text, nullable=False, server_default="auto"),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.UniqueConstraint("tenant_id", "name", name="ragspine_service_library_name"),
    )
    op.create_table(
        "ragspine_job",
        sa.Column("job_id", sa.String(32), primary_key=True),
        sa.Column("tenant_id", sa.String(64), nullable=False),
        sa.Column("library_id", sa.String(200), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("done", sa.Integer, nullable=False, server_default="0"),
        sa.Column("total", sa.Integer, nullable=False, server_default="0"),
        sa.Column("doc_ids", sa.JSON, nullable=False),
        sa.Column("chunks", sa.Integer, nullable=False, server_default="0"),
        sa.Column("error", sa.Text, nullable=True),
        sa.Column("warning", sa.Text, nullable=True),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("started_at", sa.Float, nullable=True),
        sa.Column("finished_at", sa.Float, nullable=True),
    )
    op.create_index("ragspine_job_tenant", "ragspine_job", ["tenant_id", "created_at"])
    op.create_index("ragspine_job_state", "ragspine_job", ["state"])
    op.create_table(
        "ragspine_job_payload",
        sa.Column("job_id", sa.String(32), primary_key=True),
        sa.Column("payload", sa.JSON, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("ragspine_job_payload")
    op.drop_table("ragspine_job")
    op.drop_table("ragspine_service_library")
    op.drop_table("ragspine_api_key")
    op.drop_table("ragspine_tenant")
