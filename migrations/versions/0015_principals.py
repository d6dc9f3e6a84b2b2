"""Principals: a tenant's users and groups, memberships, and keys that act as a user.

* ``ragspine_principal`` — one row per user or group of a tenant: ``key`` is the canonical name
  (``name_key``: NFKC, case-folded), ``name`` as written, ``look_alike`` the confusable skeleton,
  unique per tenant and kind, so no name may imitate another (Cyrillic ``асе`` beside ``ace``);
* ``ragspine_membership`` — which user is in which group (canonical keys);
* ``ragspine_api_key.principal`` (the user key a key acts as) and ``ragspine_api_key.trusted_app``
  (an application that names its end user per request in ``X-RAGSpine-User``), both NULL for
  the keys issued before: they stay what they were, no principal.

Revision ID: 0015_principals
Revises: 0014_chunk_boxes
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015_principals"
down_revision = "0014_chunk_boxes"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "ragspine_principal",
        sa.Column("tenant_id", sa.String(64), primary_key=True),
        sa.Column("kind", sa.String(8), primary_key=True),
        sa.Column("key", sa.Text, primary_key=True),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("look_alike", sa.Text, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.UniqueConstraint("tenant_id", "kind", "look_alike", name="ragspine_principal_look_alike"),
    )
    op.create_table(
        "ragspine_membership",
        sa.Column("tenant_id", sa.String(64), primary_key=True),
        sa.Column("group_key", sa.Text, primary_key=True),
        sa.Column("user_key", sa.Text, primary_key=True),
    )
    op.create_index("ragspine_membership_user", "ragspine_membership", ["tenant_id", "user_key"])
    op.add_column("ragspine_api_key", sa.Column("principal", sa.Text, nullable=True))
    op.add_column("ragspine_api_key", sa.Column("trusted_app", sa.Boolean, nullable=True))


def downgrade() -> None:
    op.drop_column("ragspine_api_key", "trusted_app")
    op.drop_column("ragspine_api_key", "principal")
    op.drop_index("ragspine_membership_user", table_name="ragspine_membership")
    op.drop_table("ragspine_membership")
    op.drop_table("ragspine_principal")
