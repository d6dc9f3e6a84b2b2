"""The structured channel's fact store: ``ragspine_fact`` and ``ragspine_fact_source``.

Every version of every numeric fact (metric, entity, period, channel, value, unit, source
document and locator, valid-as-of date, sensitivity) of a library; ``active`` marks the current
version of each source, and a partial unique index keeps at most one active fact per
``(library_id, metric, entity, period, channel)``. ``ragspine_fact_source`` holds each source's
current version, so that a source replaced by no facts (retired) still advances it.

Revision ID: 0010_facts
Revises: 0009_library_ranking
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010_facts"
down_revision = "0009_library_ranking"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "ragspine_fact",
        sa.Column("library_id", sa.Text, primary_key=True),
        sa.Column("source_doc_id", sa.Text, primary_key=True),
        sa.Column("version", sa.Integer, primary_key=True),
        sa.Column("ordinal", sa.Integer, primary_key=True),
        sa.Column("active", sa.Boolean, nullable=False, server_default=sa.true()),
        sa.Column("metric", sa.Text, nullable=False),
        sa.Column("entity", sa.Text, nullable=False),
        sa.Column("period", sa.Text, nullable=False),
        sa.Column("channel", sa.Text, nullable=False),
        sa.Column("value", sa.Numeric, nullable=False),
        sa.Column("unit", sa.Text, nullable=False, server_default=""),
        sa.Column("source_locator", sa.Text, nullable=False),
        sa.Column("valid_as_of", sa.Text, nullable=False),
        sa.Column("sensitivity", sa.Text, nullable=False, server_default="INTERNAL"),
        sa.Column("ingested_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
    )
    op.create_index(
        "ragspine_fact_active_key", "ragspine_fact", ["library_id", "metric", "entity", "period", "channel"],
        unique=True, postgresql_where=sa.text("active"),
    )
    op.create_index("ragspine_fact_source_version", "ragspine_fact", ["library_id", "source_doc_id", "version"])
    op.create_table(
        "ragspine_fact_source",
        sa.Column("library_id", sa.Text, primary_key=True),
        sa.Column("source_doc_id", sa.Text, primary_key=True),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("facts", sa.Integer, nullable=False, server_default="0"),
        sa.Column("changed_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
    )


def downgrade() -> None:
    op.drop_table("ragspine_fact_source")
    op.drop_index("ragspine_fact_source_version", table_name="ragspine_fact")
    op.drop_index("ragspine_fact_active_key", table_name="ragspine_fact")
    op.drop_table("ragspine_fact")
