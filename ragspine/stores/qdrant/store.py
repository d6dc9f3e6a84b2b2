"""``QdrantVectorStore``: the ``VectorStore`` role on Qdrant (a server, or local mode).

Layout. One collection per embedding model (``<prefix>_<model slug>_<hash>_d<dim>``),
shared by every library; the library is a payload field with a keyword index flagged
``is_tenant`` (Qdrant ≥ 1.11 stores each tenant's points together) and the collection
builds per-tenant HNSW graphs (``m=0, payload_m=16``, Qdrant's multitenancy recipe) —
sound only because **every** request carries the library condition. A point's id is
``uuid5((library_id, chunk_id))``; its payload is described in ``filters.py``; ``doc_id``
has a keyword index too (delete by document).

Scores. Vectors are L2-normalized here, exactly as ``InProcessVectorStore`` does, and
stored under ``Dot`` distance: for unit vectors that *is* cosine similarity, and unlike
``Cosine`` (which re-normalizes on upsert, on the server in its own float32 arithmetic) it
keeps the stored vectors bit-identical to the reference store's. ``query_points`` (library
condition + translated filter + ``SearchParams(exact, hnsw_ef)``) returns candidates with
their vectors; the store re-scores them with :func:`exact_cosine_scores` (float64, rounded
to float32 — the reference's scoring) and sorts by ``(-score, chunk_id)``. While the
last fetched candidate is within ``RESCORE_MARGIN`` of the k-th, the fetch doubles, so
near-ties and exact ties are ranked — by ascending id — exactly as in the reference.

String ranges (two phases). Qdrant cannot range-filter strings, so ``gt/gte/lt/lte/between``
with a string operand (and numbers of magnitude ≥ 2**53, inexact as f64 on a server) are
resolved in Python: phase one scrolls this library's points that pass the rest of the
filter (payload ``chunk_id`` and ``m`` only, no vectors, pages of 1,024); phase two keeps
those whose metadata pass the Python conditions, and the query/count then runs with their
ids as a ``HasIdCondition``. Its cost is one payload read per point passing the native part
of the filter, plus a request carrying every surviving id: on a large library, put a
selective native condition (``eq``, ``in``, numeric range) next to a string range. A point
written between the two phases may be missed or seen with its old payload.

Local mode (``make_qdrant_client(path=...)`` or ``":memory:"``) differs from a server:

* search is always exact (brute force in numpy): ``exact``/``hnsw_ef`` are ignored;
* payload indexes — ``is_tenant`` included — are accepted and ignored (their warning is
  silenced here), and filters are evaluated in Python point by point;
* it is meant for tests and small libraries: qdrant-client warns past ~20,000 points per
  collection and every query scans the whole collection (all libraries);
* a path is locked: one client per path (share it between stores), no second process.

``exact=False`` on a server is approximate (HNSW); with ``exact=True`` it returns the same
ids, in the same order, as ``InProcessVectorStore`` (scores within float32 rounding).
"""

from __future__ import annotations

import contextlib
import threading
import warnings
from collections.abc import Collection, Iterator, Sequence
from typing import Any

import numpy as np

from ragspine.errors import BackendError, ConfigError, RagspineError
from ragspine.retrieval.filtering.filters import MetadataFilter
from ragspine.retrieval.vector.similarity import RESCORE_MARGIN, exact_cosine_scores
from ragspine.retrieval.vector.vector_store import VectorHit, VectorRecord
from ragspine.stores.qdrant.client import (
    client_guard,
    describe_client,
    is_in_memory,
    is_local,
    is_unreachable,
    root_cause,
)
from ragspine.stores.qdrant.converters import (
    collection_name_for,
    point_id,
    to_hit,
    to_point,
    unit_vector,
)
from ragspine.stores.qdrant.filters import (
    METADATA_KEY,
    QdrantFilter,
    library_condition,
    models,
    translate,
)

__all__ = ["QdrantVectorStore", "collection_name_for", "point_id"]

UPSERT_BATCH = 512  # points per upsert request (one request per batch; everything validated first)
SCROLL_PAGE = 1024
HNSW_M, HNSW_PAYLOAD_M = 0, 16  # per-library graphs only (every query filters by library)


class QdrantVectorStore:
    """A library's vectors in the shared Qdrant collection of its embedding model.

    The constructor does no I/O; the collection and its indexes are created on first use.
    ``exact`` switches a server to brute-force search; ``hnsw_ef`` is the server's HNSW
    candidate list per query (raised to the fetch size by the server); ``upsert_batch`` points
    go in one upsert request.
    See the module docstring for the layout, tie handling, the string-range path and how
    local mode differs from a server.
    """

    def __init__(
        self,
        client: Any,
        *,
        library_id: str,
        model_id: str,
        dim: int,
        collection_prefix: str = "ragspine",
        exact: bool = False,
        hnsw_ef: int = 128,
        upsert_batch: int = UPSERT_BATCH,
    ) -> None:
        if not isinstance(library_id, str) or not library_id:
            raise ConfigError(f"library_id must be a non-empty string, got {library_id!r}")
        if int(dim) <= 0:
            raise ConfigError(f"dim must be a positive integer, got {dim!r}")
        self.client = client
        self.library_id = library_id
        self.model_id = model_id
        self.dim = int(dim)
        self.exact = bool(exact)
        for name, value in (("hnsw_ef", hnsw_ef), ("upsert_batch", upsert_batch)):
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ConfigError(f"{name} must be a positive integer, got {value!r}")
        self.hnsw_ef = hnsw_ef
        self.upsert_batch = upsert_batch
        self.collection_name = collection_name_for(model_id, self.dim, collection_prefix)
        self._ready = False
        self._lock = threading.Lock()
        self._search_params: models.SearchParams | None = None  # set with the collection
        self._guard: Any = None  # the local-mode client lock, looked up on first use

    def __repr__(self) -> str:
        return f"QdrantVectorStore({self.collection_name!r}, library_id={self.library_id!r})"

    # -- VectorStore ----------------------------------------------------------------------
    def upsert(self, records: Sequence[VectorRecord]) -> None:
        points = [to_point(self.library_id, r, self.dim) for r in records]  # validates before any I/O
        if not points:
            return
        self._ensure_collection()
        for start in range(0, len(points), self.upsert_batch):
            with self._backend("upsert points"):
                self.client.upsert(self.collection_name, points=points[start : start + self.upsert_batch], wait=True)

    def query(
        self,
        vector: Sequence[float],
        *,
        top_k: int = 10,
        where: MetadataFilter | None = None,
        ids: Collection[str] | None = None,
    ) -> list[VectorHit]:
        if top_k <= 0:
            return []
        q = unit_vector(vector, self.dim, "query vector")
        self._ensure_collection()
        flt = self._resolve(where, ids)
        if flt is None:
            return []
        limit = top_k + max(8, top_k // 4)
        while True:
            with self._backend("query"):
                points = self.client.query_points(
                    self.collection_name,
                    query=q,
                    query_filter=flt,
                    limit=limit,
                    search_params=self._search_params,
                    with_payload=True,
                    with_vectors=True,
                ).points
            # Stop once everything was fetched, or once no unfetched point can come within
            # the re-scoring margin of the k-th best (the near-tie group closed inside the fetch).
            if len(points) < limit or points[-1].score < points[top_k - 1].score - RESCORE_MARGIN:
                break
            limit *= 2
        if not points:
            return []
        vectors = np.asarray([p.vector for p in points], dtype=np.float32)
        scores = exact_cosine_scores(vectors, np.asarray(q, dtype=np.float32))
        hits = [to_hit(p, float(score)) for p, score in zip(points, scores.tolist(), strict=True)]
        hits.sort(key=lambda h: (-h.score, h.id))
        return hits[:top_k]

    def delete(self, ids: Sequence[str] = (), *, doc_ids: Sequence[str] = ()) -> int:
        alternatives: list[models.Condition] = []
        if ids:
            alternatives.append(models.HasIdCondition(has_id=[point_id(self.library_id, i) for i in set(ids)]))
        if doc_ids:
            alternatives.append(models.FieldCondition(key="doc_id", match=models.MatchAny(any=list(set(doc_ids)))))
        if not alternatives:
            return 0
        self._ensure_collection()
        return self._delete_where(models.Filter(must=[self._library(), models.Filter(should=alternatives)]))

    def clear(self) -> int:
        self._ensure_collection()
        return self._delete_where(models.Filter(must=[self._library()]))

    def count(self, where: MetadataFilter | None = None) -> int:
        self._ensure_collection()
        translated = translate(where)
        if translated.never:
            return 0
        if translated.python:
            return len(self._second_phase(translated, [self._library()]))
        return self._count(translated.to_filter(self._library()))

    def versions(self, ids: Sequence[str]) -> dict[str, int]:
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        self._ensure_collection()
        records: list[Any] = []
        for start in range(0, len(wanted), SCROLL_PAGE):
            with self._backend("retrieve versions"):
                records += self.client.retrieve(
                    self.collection_name,
                    ids=[point_id(self.library_id, i) for i in wanted[start : start + SCROLL_PAGE]],
                    with_payload=["library_id", "chunk_id", "version"],
                    with_vectors=False,
                )
        found = {
            r.payload["chunk_id"]: int(r.payload.get("version", 0))
            for r in records
            if r.payload and r.payload.get("library_id") == self.library_id
        }
        return {i: found[i] for i in wanted if i in found}

    def ids(self, where: MetadataFilter | None = None) -> list[str]:
        """Chunk ids of this library's vectors passing ``where``, ascending."""
        self._ensure_collection()
        translated = translate(where)
        if translated.never:
            return []
        if translated.python:
            return sorted(self._second_phase(translated, [self._library()]).values())
        flt = translated.to_filter(self._library())
        return sorted(r.payload["chunk_id"] for r in self._scroll(flt, ["chunk_id"]))

    # -- filters ----------------------------------------------------------------------------
    def _library(self) -> models.Condition:
        return library_condition(self.library_id)

    def _resolve(self, where: MetadataFilter | None, ids: Collection[str] | None) -> models.Filter | None:
        """The full request filter (library + ids + translation), or None if nothing matches."""
        translated = translate(where)
        if translated.never:
            return None
        must: list[models.Condition] = [self._library()]
        if ids is not None:
            wanted = {point_id(self.library_id, i) for i in ids}
            if not wanted:
                return None
            must.append(models.HasIdCondition(has_id=sorted(wanted)))
        if translated.python:
            survivors = self._second_phase(translated, must)
            if not survivors:
                return None
            return models.Filter(must=[self._library(), models.HasIdCondition(has_id=sorted(survivors))])
        return translated.to_filter(*must)

    def _second_phase(self, translated: QdrantFilter, must: list[models.Condition]) -> dict[str, str]:
        """Point id → chunk id of the points passing the native part and then, in Python,
        the ``python`` conditions (string ranges, numbers beyond 2**53)."""
        flt = QdrantFilter(translated.native).to_filter(*must)
        return {
            str(r.id): r.payload["chunk_id"]
            for r in self._scroll(flt, ["chunk_id", METADATA_KEY])
            if translated.matches_python(r.payload.get(METADATA_KEY))
        }

    def _scroll(self, flt: models.Filter, payload: list[str]) -> Iterator[Any]:
        offset = None
        while True:
            with self._backend("scroll points"):
                records, offset = self.client.scroll(
                    self.collection_name,
                    scroll_filter=flt,
                    limit=SCROLL_PAGE,
                    offset=offset,
                    with_payload=payload,
                    with_vectors=False,
                )
            yield from records
            if offset is None:
                return

    def _count(self, flt: models.Filter) -> int:
        with self._backend("count points"):
            return int(self.client.count(self.collection_name, count_filter=flt, exact=True).count)

    def _delete_where(self, flt: models.Filter) -> int:
        n = self._count(flt)
        if n:
            with self._backend("delete points"):
                self.client.delete(self.collection_name, points_selector=models.FilterSelector(filter=flt), wait=True)
        return n

    @property
    def process_local(self) -> bool:
        """A ``:memory:`` client's points die with the process (:class:`ProcessLocal`): the dense
        leg refills them from the embedding cache in the next process, as it does the in-process store's."""
        return is_in_memory(self.client)

    # -- collection -------------------------------------------------------------------------
    def _ensure_collection(self) -> None:
        if self._ready:
            return
        with self._lock:
            if self._ready:
                return
            name = self.collection_name
            with self._backend("prepare the collection"):
                if not self.client.collection_exists(name):
                    try:
                        self.client.create_collection(
                            name,
                            vectors_config=models.VectorParams(size=self.dim, distance=models.Distance.DOT),
                            hnsw_config=models.HnswConfigDiff(m=HNSW_M, payload_m=HNSW_PAYLOAD_M),
                        )
                    except Exception:
                        if not self.client.collection_exists(name):  # else: another store won the race
                            raise
                info = self.client.get_collection(name)
            self._check_vectors(info)
            local = is_local(self.client)
            # Local mode is always exact and warns about search params it cannot honour.
            if not local:
                self._search_params = models.SearchParams(exact=self.exact, hnsw_ef=self.hnsw_ef)
            indexed = set((info.payload_schema or {}).keys())
            wanted = {
                "library_id": models.KeywordIndexParams(type=models.KeywordIndexType.KEYWORD, is_tenant=True),
                "doc_id": models.PayloadSchemaType.KEYWORD,
            }
            for field, schema in wanted.items():
                if field in indexed:
                    continue
                with self._backend(f"index {field}"), warnings.catch_warnings():
                    if local:  # local mode ignores payload indexes and says so
                        warnings.simplefilter("ignore", UserWarning)
                    self.client.create_payload_index(name, field_name=field, field_schema=schema, wait=True)
            self._ready = True

    def _check_vectors(self, info: Any) -> None:
        params = info.config.params.vectors
        if not isinstance(params, models.VectorParams):
            raise ConfigError(
                f"Qdrant collection {self.collection_name!r} uses named vectors; it was not created by "
                "RAGSpine (use another collection_prefix)"
            )
        if params.size != self.dim:
            raise ConfigError(
                f"Qdrant collection {self.collection_name!r} holds {params.size}-dimensional vectors, "
                f"but model {self.model_id!r} makes {self.dim}; a model change needs a new collection "
                "(check the model's dim, or use another collection_prefix)"
            )
        if params.distance != models.Distance.DOT:
            raise ConfigError(
                f"Qdrant collection {self.collection_name!r} uses {params.distance} distance; RAGSpine stores "
                "unit vectors under Dot (see the module docstring)"
            )

    @contextlib.contextmanager
    def _backend(self, action: str) -> Iterator[None]:
        """Wrap driver exceptions in :class:`BackendError` (with a hint when unreachable);
        hold the client lock in local mode."""
        if self._guard is None:
            self._guard = client_guard(self.client)
        try:
            with self._guard:
                yield
        except RagspineError:
            raise
        except Exception as exc:
            where = describe_client(self.client)
            if is_unreachable(exc):
                raise BackendError(
                    f"cannot connect to {where} to {action}: {root_cause(exc)}. Start the server "
                    "(e.g. `docker compose up -d qdrant`), fix the URL in RAGSPINE_VECTOR_STORE, or use "
                    "local mode (RAGSPINE_VECTOR_STORE=qdrant)"
                ) from exc
            raise BackendError(f"{where} failed to {action} in {self.collection_name!r}: {exc}") from exc

