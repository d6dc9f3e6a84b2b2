"""Document ACLs: ``ragspine_document_acl`` and ``ragspine_acl_change``.

A document's ACL (who may read it: users and groups allowed and denied, canonical JSON) is
kept apart from its chunks so that changing it rewrites no chunk and re-embeds nothing; every
change is recorded (before, after, who, when), and a library's latest change's ``seq`` tells
the in-process indexes that their copy is stale.

Revision ID: 0016_document_acls
Revises: 0015_principals
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016_document_acls"
down_revision = "0015_principals"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "ragspine_document_acl",
        sa.Column("library_id", sa.Text, primary_key=True),
        sa.Column("doc_id", sa.Text, primary_key=True),
        sa.Column("acl", sa.Text, nullable=False),
    )
    op.create_table(
        "ragspine_acl_change",
        sa.Column("seq", sa.BigInteger, sa.Identity(), primary_key=True),
        sa.Column("library_id", sa.Text, nullable=False),
        sa.Column("doc_id", sa.Text, nullable=False),
        sa.Column("acl_before", sa.Text, nullable=False),
        sa.Column("acl_after", sa.Text, nullable=False),
        sa.Column("changed_at", sa.Text, nullable=False),
        sa.Column("changed_by", sa.Text, nullable=False, server_default=""),
    )
    op.create_index("ragspine_acl_change_lib", "ragspine_acl_change", ["library_id", "seq"])
    op.create_index("ragspine_acl_change_doc", "ragspine_acl_change", ["library_id", "doc_id", "seq"])


def downgrade() -> None:
    op.drop_table("ragspine_acl_change")
    op.drop_table("ragspine_document_acl")
