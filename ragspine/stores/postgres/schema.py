"""The PostgreSQL schema as SQLAlchemy Core tables — the single source the Alembic
revisions in ``migrations/`` are written against (``alembic revision --autogenerate``
compares with :data:`metadata`).

Every chunk row carries ``library_id``; a library belongs to a tenant (``tenant_id``).

The lexical index (``PostgresLexicalIndex``) is three pieces kept by every replace, in the
replace's own transaction: ``ragspine_chunk.n_tokens`` (a chunk's token count), the postings
``ragspine_lex_posting`` (one row per active chunk and distinct token), the document
frequencies ``ragspine_lex_term`` and one row of ``ragspine_lex_stats`` per library (active
chunks, total tokens, whether its postings are complete).

The structured channel's facts (revision 0010) are ``ragspine_fact`` — every version of every
fact, ``active`` marking the current ones, at most one active fact per library and key — and
``ragspine_fact_source``, each source document's current version.

A library's RAPTOR tree (revision 0011) is ``ragspine_raptor_tree`` (one row: what it was
built from) and ``ragspine_raptor_node`` (its synthesis nodes, never chunks).

Document ACLs (revision 0016) are ``ragspine_document_acl`` (the ACL of each document that has
one) and ``ragspine_acl_change`` (every change: before, after, who, when).
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB

metadata = sa.MetaData()

library = sa.Table(
    "ragspine_library",
    metadata,
    sa.Column("library_id", sa.Text, primary_key=True),
    sa.Column("tenant_id", sa.Text, nullable=False, server_default=""),
    sa.Column("description", sa.Text, nullable=False, server_default=""),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
    sa.Column("profile", sa.Text, nullable=True),  # the recipe it was built with (0013; ragspine/profile.py)
)

chunk = sa.Table(
    "ragspine_chunk",
    metadata,
    sa.Column("library_id", sa.Text, primary_key=True),
    sa.Column("chunk_id", sa.Text, primary_key=True),
    sa.Column("version", sa.Integer, primary_key=True),
    sa.Column("doc_id", sa.Text, nullable=False),
    sa.Column("active", sa.Boolean, nullable=False, server_default=sa.true()),
    sa.Column("ordinal", sa.Integer, nullable=False, server_default="0"),
    sa.Column("text", sa.Text, nullable=False),
    sa.Column("title", sa.Text, nullable=False, server_default=""),
    sa.Column("source_locator", sa.Text, nullable=False, server_default=""),
    sa.Column("char_start", sa.Integer, nullable=False, server_default="0"),
    sa.Column("char_end", sa.Integer, nullable=False, server_default="0"),
    sa.Column("metadata", JSONB, nullable=False, server_default=sa.text("'{}'::jsonb")),
    sa.Column("sensitivity", sa.Text, nullable=False, server_default="INTERNAL"),
    sa.Column("parent_id", sa.Text, nullable=False, server_default=""),
    sa.Column("heading", sa.Text, nullable=False, server_default=""),
    sa.Column("window_text", sa.Text, nullable=False, server_default=""),
    sa.Column("parent_locator", sa.Text, nullable=False, server_default=""),
    sa.Column("valid_as_of", sa.Text, nullable=False, server_default=""),
    sa.Column("ingested_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
    sa.Column("n_tokens", sa.Integer, nullable=True),  # tokenize(text) length; set by every replace
    sa.Column("boxes", sa.Text, nullable=False, server_default=""),  # a PDF chunk's line boxes (0014; Chunk.boxes)
    sa.Index("ragspine_chunk_doc", "library_id", "doc_id", "version"),
    sa.Index(
        "ragspine_chunk_active_id",
        "library_id",
        "chunk_id",
        unique=True,
        postgresql_where=sa.text("active"),
    ),
    sa.Index(
        "ragspine_chunk_active_doc",
        "library_id",
        "doc_id",
        "ordinal",
        postgresql_where=sa.text("active"),
    ),
)

change = sa.Table(
    "ragspine_change",
    metadata,
    sa.Column("seq", sa.BigInteger, sa.Identity(always=False), primary_key=True),
    sa.Column("library_id", sa.Text, nullable=False),
    sa.Column("doc_id", sa.Text, nullable=False),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("changed_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
    sa.Column("fingerprint", sa.Text, nullable=False, server_default=""),  # of the replace's input
    sa.Index("ragspine_change_lib_seq", "library_id", "seq"),
    sa.Index("ragspine_change_lib_doc", "library_id", "doc_id", "version"),
)

#: Postings of the lexical index: one row per (active chunk, distinct token), with the
#: token's frequency in the chunk and the chunk's length (so scoring reads one index only).
lex_posting = sa.Table(
    "ragspine_lex_posting",
    metadata,
    sa.Column("library_id", sa.Text, nullable=False),
    sa.Column("token", sa.Text(collation="C"), nullable=False),
    sa.Column("chunk_id", sa.Text, nullable=False),
    sa.Column("tf", sa.Integer, nullable=False),
    sa.Column("dl", sa.Integer, nullable=False),
    # INCLUDE (tf, dl): a query token's postings are one index-only range scan
    sa.PrimaryKeyConstraint("library_id", "token", "chunk_id", name="ragspine_lex_posting_pkey", postgresql_include=["tf", "dl"]),
    sa.Index("ragspine_lex_posting_chunk", "library_id", "chunk_id"),
)

#: Document frequency of every token of a library (active chunks holding it): what a top-k
#: search needs to pick its essential tokens without counting postings.
lex_term = sa.Table(
    "ragspine_lex_term",
    metadata,
    sa.Column("library_id", sa.Text, primary_key=True),
    sa.Column("token", sa.Text(collation="C"), primary_key=True),
    sa.Column("df", sa.BigInteger, nullable=False),
)

#: Per-library statistics of the lexical index: active chunks and their total token count.
lex_stats = sa.Table(
    "ragspine_lex_stats",
    metadata,
    sa.Column("library_id", sa.Text, primary_key=True),
    sa.Column("n_chunks", sa.BigInteger, nullable=False, server_default="0"),
    sa.Column("total_len", sa.BigInteger, nullable=False, server_default="0"),
    # false once a write skipped the postings (RAGSPINE_PG_POSTINGS=off): revision 0007
    sa.Column("postings", sa.Boolean, nullable=False, server_default=sa.true()),
)

#: One row per embedding model whose vectors live in this database (pgvector): the model
#: id and dimension are recorded so that a mismatch is an error, never a mixed space.
vector_space = sa.Table(
    "ragspine_vector_space",
    metadata,
    sa.Column("model_id", sa.Text, primary_key=True),
    sa.Column("dim", sa.Integer, nullable=False),
    sa.Column("table_name", sa.Text, nullable=False, unique=True),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
)

#: Every version of every numeric fact of the structured channel (``PostgresFactStore``): the
#: partial unique index keeps one active fact per (library, metric, entity, period, channel).
fact = sa.Table(
    "ragspine_fact",
    metadata,
    sa.Column("library_id", sa.Text, primary_key=True),
    sa.Column("source_doc_id", sa.Text, primary_key=True),
    sa.Column("version", sa.Integer, primary_key=True),
    sa.Column("ordinal", sa.Integer, primary_key=True),
    sa.Column("active", sa.Boolean, nullable=False, server_default=sa.true()),
    sa.Column("metric", sa.Text, nullable=False),
    sa.Column("entity", sa.Text, nullable=False),
    sa.Column("period", sa.Text, nullable=False),
    sa.Column("channel", sa.Text, nullable=False),
    sa.Column("value", sa.Numeric, nullable=False),  # exact, its scale kept
    sa.Column("unit", sa.Text, nullable=False, server_default=""),
    sa.Column("source_locator", sa.Text, nullable=False),
    sa.Column("valid_as_of", sa.Text, nullable=False),
    sa.Column("sensitivity", sa.Text, nullable=False, server_default="INTERNAL"),
    sa.Column("ingested_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
    sa.Index(
        "ragspine_fact_active_key", "library_id", "metric", "entity", "period", "channel",
        unique=True, postgresql_where=sa.text("active"),
    ),
    sa.Index("ragspine_fact_source_version", "library_id", "source_doc_id", "version"),
)

#: A fact source's current version (a retirement writes no fact rows: the counter lives here).
fact_source = sa.Table(
    "ragspine_fact_source",
    metadata,
    sa.Column("library_id", sa.Text, primary_key=True),
    sa.Column("source_doc_id", sa.Text, primary_key=True),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("facts", sa.Integer, nullable=False, server_default="0"),
    sa.Column("changed_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
)

#: A library's RAPTOR tree (revision 0011): what it was built from (the change-log position,
#: the embedding model, the options) — one row per library — and its synthesis nodes, apart
#: from ``ragspine_chunk`` so that no chunk query or index ever sees one.
raptor_tree = sa.Table(
    "ragspine_raptor_tree",
    metadata,
    sa.Column("library_id", sa.Text, primary_key=True),
    sa.Column("tree_id", sa.Text, nullable=False),
    sa.Column("change_seq", sa.BigInteger, nullable=False),
    sa.Column("model", sa.Text, nullable=False),
    sa.Column("params", JSONB, nullable=False, server_default=sa.text("'{}'::jsonb")),
    sa.Column("chunks", sa.Integer, nullable=False, server_default="0"),
    sa.Column("nodes", sa.Integer, nullable=False, server_default="0"),
    sa.Column("levels", sa.Integer, nullable=False, server_default="0"),
    sa.Column("built_at", sa.Text, nullable=False, server_default=""),
    sa.Column("build_seconds", sa.Float, nullable=False, server_default="0"),
)

raptor_node = sa.Table(
    "ragspine_raptor_node",
    metadata,
    sa.Column("library_id", sa.Text, primary_key=True),
    sa.Column("node_id", sa.Text, primary_key=True),
    sa.Column("level", sa.Integer, nullable=False),
    sa.Column("ordinal", sa.Integer, nullable=False),
    sa.Column("text", sa.Text, nullable=False),  # a retrieval probe, never evidence
    sa.Column("children", JSONB, nullable=False),  # member chunk ids (level 1) or node ids
    sa.Column("leaves", JSONB, nullable=False),  # [[chunk_id, doc_id, version, source_locator], ...]
    sa.Column("vector", sa.LargeBinary, nullable=False),  # float32 little-endian, L2-normalized
    sa.Column("written_by", sa.Text, nullable=False, server_default="extractive"),
    sa.Index("ragspine_raptor_node_order", "library_id", "ordinal"),
)

#: Who may read a document (revision 0016): one row per document with an ACL (canonical JSON,
#: ``ragspine/security/principals.py``), and every change of it.
document_acl = sa.Table(
    "ragspine_document_acl",
    metadata,
    sa.Column("library_id", sa.Text, primary_key=True),
    sa.Column("doc_id", sa.Text, primary_key=True),
    sa.Column("acl", sa.Text, nullable=False),
)

acl_change = sa.Table(
    "ragspine_acl_change",
    metadata,
    sa.Column("seq", sa.BigInteger, sa.Identity(), primary_key=True),
    sa.Column("library_id", sa.Text, nullable=False),
    sa.Column("doc_id", sa.Text, nullable=False),
    sa.Column("acl_before", sa.Text, nullable=False),
    sa.Column("acl_after", sa.Text, nullable=False),
    sa.Column("changed_at", sa.Text, nullable=False),
    sa.Column("changed_by", sa.Text, nullable=False, server_default=""),
    sa.Index("ragspine_acl_change_lib", "library_id", "seq"),
    sa.Index("ragspine_acl_change_doc", "library_id", "doc_id", "seq"),
)
