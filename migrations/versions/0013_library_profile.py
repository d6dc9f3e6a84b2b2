"""A library's recipe as one value: ``ragspine_library.profile`` and ``ragspine_service_library.profile``.

* The chunk database records, per library, the :class:`~ragspine.profile.Profile` (JSON) it was
  built with (``ragspine_library.profile``), so a query uses the recipe its library was built
  with — the embedding model, the chunker, its budget and the contextual header cannot silently
  differ at query time. Libraries made before this revision have none recorded (NULL) and are
  queried with the configured recipe, as until now; their next ingest records it.
* A service library's recipe, until now fourteen columns of ``ragspine_service_library``
  (embedding, retrieval_mode, chunker, contextual, the ranking's four, the reasoning's five and
  raptor), becomes one JSON column, ``profile`` (``ragspine/service/recipe.py``): every row is
  converted with the meaning its columns had, then the columns are dropped. The downgrade
  re-creates them and fills them back from the JSON.

Revision ID: 0013_library_profile
Revises: 0012_library_reasoning
Create Date: 2026-12-05
"""

from __future__ import annotations

import json

import sqlalchemy as sa
from alembic import op

from ragspine.service.recipe import OLD_COLUMNS, from_columns, recipe_json, to_columns

revision = "0013_library_profile"
down_revision = "0012_library_reasoning"
branch_labels = None
depends_on = None

_KINDS = {"rerank_depth": sa.Integer, "query_fanout": sa.Integer, "corrective": sa.Boolean, "raptor": sa.Boolean}


def upgrade() -> None:
    op.add_column("ragspine_library", sa.Column("profile", sa.Text, nullable=True))
    op.add_column("ragspine_service_library", sa.Column("profile", sa.Text, nullable=True))
    conn = op.get_bind()
    for row in conn.execute(sa.text("SELECT * FROM ragspine_service_library")).mappings().all():
        conn.execute(sa.text("UPDATE ragspine_service_library SET profile = :profile WHERE library_id = :library_id"),
                     {"profile": recipe_json(from_columns(dict(row))), "library_id": row["library_id"]})
    for column in OLD_COLUMNS:
        op.drop_column("ragspine_service_library", column)


def downgrade() -> None:
    op.add_column("ragspine_service_library", sa.Column("embedding", sa.Text, nullable=False, server_default="none"))
    op.add_column("ragspine_service_library", sa.Column("retrieval_mode", sa.Text, nullable=False, server_default="auto"))
    for column in OLD_COLUMNS:
        if column not in ("embedding", "retrieval_mode"):
            op.add_column("ragspine_service_library", sa.Column(column, _KINDS.get(column, sa.Text), nullable=True))
    conn = op.get_bind()
    for row in conn.execute(sa.text("SELECT library_id, profile FROM ragspine_service_library")).mappings().all():
        values = {k: v for k, v in to_columns(json.loads(row["profile"] or "{}")).items()}
        values["embedding"] = values["embedding"] or "none"
        values["retrieval_mode"] = values["retrieval_mode"] or "auto"
        assignments = ", ".join(f"{column} = :{column}" for column in OLD_COLUMNS)  # our own column names
        conn.execute(sa.text(f"UPDATE ragspine_service_library SET {assignments} WHERE library_id = :library_id"),
                     {**values, "library_id": row["library_id"]})
    op.drop_column("ragspine_service_library", "profile")
    op.drop_column("ragspine_library", "profile")
