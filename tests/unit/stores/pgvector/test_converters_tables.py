"""The pure parts of the pgvector adapter: row conversion and the per-model table."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.helpers import needs

needs("sqlalchemy")

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import psycopg as pg_psycopg

from ragspine.errors import ConfigError, IngestError
from ragspine.retrieval.vector.vector_store import VectorHit, VectorRecord
from ragspine.stores.pgvector.converters import (
    distance_to_score,
    rank_hits,
    record_to_row,
    row_to_hit,
    unit_vector,
)
from ragspine.stores.pgvector.tables import check_dim, table_name_for, vector_table


def test_unit_vector_matches_the_in_process_normalization():
    vec = unit_vector([3.0, 4.0], 2, "v")
    assert vec == [pytest.approx(0.6), pytest.approx(0.8)] and all(isinstance(x, float) for x in vec)
    assert unit_vector([0.0, 0.0], 2, "v") == [0.0, 0.0]
    with pytest.raises(ConfigError, match="dimension 3"):
        unit_vector([1.0, 2.0, 3.0], 2, "v")
    with pytest.raises(ConfigError, match="NaN"):
        unit_vector([math.nan, 1.0], 2, "v")


def test_record_to_row_validates_before_io():
    row = record_to_row(VectorRecord("c1", np.ones(4), "d", 3, "RESTRICTED", {"k": 1}), "lib", 4)
    assert row["library_id"] == "lib" and row["chunk_id"] == "c1" and row["version"] == 3
    assert row["metadata"] == {"k": 1} and row["embedding"] == [0.5] * 4
    with pytest.raises(IngestError):
        record_to_row(VectorRecord("c1", np.ones(4), metadata={"k": {"nested": 1}}), "lib", 4)
    with pytest.raises(IngestError, match="NUL"):
        record_to_row(VectorRecord("c1", np.ones(4), metadata={"k\x00": 1}), "lib", 4)
    with pytest.raises(IngestError, match="surrogate"):
        record_to_row(VectorRecord("c\ud800", np.ones(4)), "lib", 4)


def test_scores_and_ranking():
    assert distance_to_score(0.25) == 0.75
    assert distance_to_score(math.nan) == 0.0 and distance_to_score(None) == 0.0
    hit = row_to_hit({"chunk_id": "a", "distance": 0.5, "doc_id": "d", "version": 2, "sensitivity": "", "metadata": None})
    assert hit == VectorHit("a", 0.5, "d", 2, "", {})
    hits = [VectorHit("b", 0.5), VectorHit("a", 0.5), VectorHit("Z", 0.5), VectorHit("c", 0.9)]
    assert [h.id for h in rank_hits(hits, 3)] == ["c", "Z", "a"]  # code-point order on ties


def test_table_names_are_short_safe_and_distinct():
    names = {m: table_name_for(m) for m in ("BAAI/bge-m3", "baai_bge_m3", "a" * 300, "名前", 'x"; DROP TABLE t; --')}
    assert len(set(names.values())) == len(names)
    for name in names.values():
        assert name.startswith("ragspine_vec_") and len(name) <= 52 and name.replace("_", "").isalnum() and name.isascii()
    assert names["BAAI/bge-m3"].startswith("ragspine_vec_baai_bge_m3_")
    with pytest.raises(ConfigError):
        table_name_for("  ")


def test_dimension_limits():
    assert check_dim(384) == 384
    for bad in (0, -1, True, 2.5, 2001):
        with pytest.raises(ConfigError):
            check_dim(bad)


def test_ddl_sizes_the_column_and_builds_hnsw_cosine_with_parameters():
    table = vector_table("ragspine_vec_m_12345678", 384, hnsw_m=24, hnsw_ef_construction=100)
    dialect = pg_psycopg.dialect()
    create = str(sa.schema.CreateTable(table).compile(dialect=dialect))
    assert "embedding VECTOR(384) NOT NULL" in create and "PRIMARY KEY (library_id, chunk_id)" in create
    ddl = {i.name: str(sa.schema.CreateIndex(i).compile(dialect=dialect)) for i in table.indexes}
    hnsw = ddl["ragspine_vec_m_12345678_hnsw"]
    assert "USING hnsw (embedding vector_cosine_ops) WITH (m = 24, ef_construction = 100)" in hnsw
    assert "USING gin (metadata jsonb_path_ops)" in ddl["ragspine_vec_m_12345678_meta"]
    assert "(library_id, doc_id)" in ddl["ragspine_vec_m_12345678_doc"]
