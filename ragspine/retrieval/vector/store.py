"""``InProcessVectorStore``: the zero-service ``VectorStore`` (numpy, exact cosine).

Vectors are L2-normalized on upsert and kept as rows of one float32 matrix; a query is one
matrix-vector product over the live rows that pass ``where``/``ids``, then an exact top-k
ordered by ``(-score, id)``. Deleted rows are tombstoned and compacted when they outnumber
the live ones. The store lives in the process (``process_local = True``): the dense leg
refills it from the embedding cache after a restart.

This module is also the seed's import path of the ``VectorStore`` Protocol (defined in
``vector/vector_store.py``).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Collection, Sequence

import numpy as np

from ragspine.errors import ConfigError
from ragspine.retrieval.chunking.chunk_store import DEFAULT_LIBRARY_ID
from ragspine.retrieval.filtering.filters import MetadataFilter
from ragspine.retrieval.metadata import validate_metadata
from ragspine.retrieval.storable import check_record
from ragspine.retrieval.vector.similarity import RESCORE_MARGIN, exact_cosine_scores, to_float32, unit_vector
from ragspine.retrieval.vector.vector_store import VectorHit, VectorRecord, VectorStore

if TYPE_CHECKING:
    from ragspine.stores.registry import StoreSpec

__all__ = ["InProcessVectorConnector", "InProcessVectorStore", "VectorHit", "VectorRecord", "VectorStore"]


class InProcessVectorStore:
    """Exact cosine search over an in-memory float32 matrix (see the module docstring)."""

    process_local = True

    def __init__(self, *, library_id: str = DEFAULT_LIBRARY_ID, dim: int | None = None) -> None:
        self.library_id = library_id
        self.dim = dim
        self._lock = threading.RLock()
        self._matrix = np.zeros((0, dim or 0), dtype=np.float32)
        self._size = 0
        self._ids: list[str] = []
        self._records: list[VectorRecord | None] = []
        self._row_of: dict[str, int] = {}
        self._live: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self._row_of)

    def ids(self) -> list[str]:
        with self._lock:
            return list(self._row_of)

    def upsert(self, records: Sequence[VectorRecord]) -> None:
        """Insert or replace by id. Every record is checked first (dimension, finite
        components, scalar metadata: ``IngestError`` as on every store), so a bad one writes
        nothing."""
        with self._lock:
            dim = self.dim if self.dim is not None else (int(to_float32(records[0].vector).shape[0]) if records else None)
            checked = [
                (r, unit_vector(r.vector, dim, f"vector for {r.id!r}"), validate_metadata(r.metadata)) for r in records
            ]
            for record in records:  # what no other store keeps (NUL, lone surrogates) is refused here too
                check_record(record)
            if checked and self.dim is None:
                self.dim = dim
                self._matrix = np.zeros((0, dim or 0), dtype=np.float32)
            for record, vec, metadata in checked:
                row = self._row_of.get(record.id)
                if row is None:
                    row = self._append_row()
                    self._row_of[record.id] = row
                    self._live = None
                self._matrix[row] = vec
                self._ids[row] = record.id
                self._records[row] = VectorRecord(record.id, (), record.doc_id, record.version, record.sensitivity, metadata)

    def _append_row(self) -> int:
        if self._size == self._matrix.shape[0]:
            grown = np.zeros((max(16, 2 * self._size), self.dim or 0), dtype=np.float32)
            grown[: self._size] = self._matrix[: self._size]
            self._matrix = grown
        self._ids.append("")
        self._records.append(None)
        self._size += 1
        return self._size - 1

    def query(
        self,
        vector: Sequence[float],
        *,
        top_k: int = 10,
        where: MetadataFilter | None = None,
        ids: Collection[str] | None = None,
    ) -> list[VectorHit]:
        with self._lock:
            if not self._row_of or top_k <= 0:
                return []
            q = to_float32(vector)
            if q.shape[0] != self.dim:
                raise ConfigError(
                    f"query vector has dimension {q.shape[0]}, the store holds {self.dim}"
                )
            norm = float(np.linalg.norm(q))
            if norm > 0:
                q = q / norm
            rows = self._candidate_rows(where, ids)
            if not len(rows):
                return []
            # every row live (no tombstones): score a view of the matrix, no gather copy
            block = self._matrix[: self._size] if len(rows) == self._size else self._matrix[rows]
            scores = block @ q
            if len(rows) > top_k:
                kth = np.partition(scores, len(scores) - top_k)[len(scores) - top_k]
                keep = scores >= kth - RESCORE_MARGIN
                rows = rows[keep]
            scores = exact_cosine_scores(self._matrix[rows], q)  # position-independent near-ties
            ranked = sorted(zip(scores.tolist(), rows.tolist(), strict=True), key=lambda sr: (-sr[0], self._ids[sr[1]]))
            hits = []
            for score, row in ranked[:top_k]:
                rec = self._records[row]
                assert rec is not None
                hits.append(VectorHit(rec.id, float(score), rec.doc_id, rec.version, rec.sensitivity, rec.metadata))
            return hits

    def _candidate_rows(self, where: MetadataFilter | None, ids: Collection[str] | None) -> np.ndarray:
        if ids is not None:
            rows = np.asarray(sorted(self._row_of[i] for i in set(ids) if i in self._row_of), dtype=np.int64)
        else:
            if self._live is None:  # every live row, cached until the next write
                self._live = np.asarray(sorted(self._row_of.values()), dtype=np.int64)
            rows = self._live
        if where:
            keep = [r for r in rows.tolist() if where.matches(self._record(r).metadata)]
            rows = np.asarray(keep, dtype=np.int64)
        return rows

    def _record(self, row: int) -> VectorRecord:
        record = self._records[row]
        assert record is not None, f"row {row} is a tombstone"
        return record

    def delete(self, ids: Sequence[str] = (), *, doc_ids: Sequence[str] = ()) -> int:
        with self._lock:
            doomed = {i for i in ids if i in self._row_of}
            if doc_ids:
                docs = set(doc_ids)
                doomed |= {
                    rec.id for rec in self._records if rec is not None and rec.doc_id in docs and rec.id in self._row_of
                }
            if doomed:
                self._live = None
            for chunk_id in doomed:
                row = self._row_of.pop(chunk_id)
                self._records[row] = None
            if len(self._row_of) < (self._size - len(self._row_of)):
                self._compact()
            return len(doomed)

    def clear(self) -> int:
        with self._lock:
            n = len(self._row_of)
            self._matrix = np.zeros((0, self.dim or 0), dtype=np.float32)
            self._size = 0
            self._ids, self._records, self._row_of = [], [], {}
            self._live = None
            return n

    def _compact(self) -> None:
        live = sorted(self._row_of.values())
        self._matrix = self._matrix[live].copy() if live else np.zeros((0, self.dim or 0), dtype=np.float32)
        self._ids = [self._ids[r] for r in live]
        self._records = [self._records[r] for r in live]
        self._size = len(live)
        self._row_of = {chunk_id: row for row, chunk_id in enumerate(self._ids)}
        self._live = None

    def count(self, where: MetadataFilter | None = None) -> int:
        with self._lock:
            if not where:
                return len(self._row_of)
            return len(self._candidate_rows(where, None))

    def versions(self, ids: Sequence[str]) -> dict[str, int]:
        with self._lock:
            out = {}
            for chunk_id in ids:
                row = self._row_of.get(chunk_id)
                if row is not None:
                    out[chunk_id] = self._records[row].version  # type: ignore[union-attr]
            return out


class InProcessVectorConnector:
    """``RAGSPINE_VECTOR_STORE=memory``: every library's vectors in this process."""

    @classmethod
    def parse(cls, value: str, context: object) -> StoreSpec:
        from ragspine.stores.registry import StoreSpec

        return StoreSpec("memory")

    @classmethod
    def from_config(cls, spec: object, settings: object, database: object = None) -> InProcessVectorConnector:
        return cls()

    def open(self, library_id: str, *, model_id: str, dim: int) -> InProcessVectorStore:
        return InProcessVectorStore(library_id=library_id, dim=dim)

    def check(self) -> None:
        """Always ready: nothing to connect to."""

    def close(self) -> None:
        """Nothing to release."""
