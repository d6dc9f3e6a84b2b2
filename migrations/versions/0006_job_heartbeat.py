"""Job heartbeats: a running job's worker marks it alive, so dead work is detected.

``heartbeat_at`` (Unix seconds) is written when a worker claims a job and every few seconds
while it runs; ``worker`` names it (``host:pid``). A ``running`` job whose heartbeat is older
than ``RAGSPINE_JOB_STALE_AFTER`` — its worker was killed, or lost the database — is marked
failed by any server or worker (see :mod:`ragspine.service.jobs`).

Revision ID: 0006_job_heartbeat
Revises: 0005_restricted_unindexed
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006_job_heartbeat"
down_revision = "0005_restricted_unindexed"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("ragspine_job", sa.Column("heartbeat_at", sa.Float, nullable=True))
    op.add_column("ragspine_job", sa.Column("worker", sa.Text, nullable=True))


def downgrade() -> None:
    op.drop_column("ragspine_job", "worker")
    op.drop_column("ragspine_job", "heartbeat_at")
