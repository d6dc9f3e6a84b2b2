"""``HybridRetriever``: BM25 (+ optional dense) legs over one library, fused by RRF.

Per search:

1. the metadata filter (parsed once, at the edge) is the candidate mask for every leg;
2. the BM25 leg scores the library's active chunks through the :class:`LexicalIndex`;
3. the dense leg (:class:`~ragspine.retrieval.vector.dense.DenseLeg`, when an embedding
   backend is injected and the dense gate can read the query) makes sure every surviving
   candidate has a vector, then asks the vector store for the nearest ones;
4. the legs' rankings are fused with ``rrf_fuse`` (or their scores by ``zscore_fuse`` with
   ``RAGSPINE_FUSION_WEIGHTS=zscore``); ties are broken by ``(-fused_score, chunk_id)``; the texts come from the
   :class:`~ragspine.retrieval.chunk_cache.ChunkCache` (by scored version) or the store. Each ranking is
   ``candidate_k`` deep (at least as deep as the results asked for) — except when there is only one ranking: RRF of one ranking is that ranking, so it is
   only as deep as the results asked for (a top-up asks deeper when results went missing).

Without an embedding backend no vector store, cache or model is touched: pure BM25 + RRF.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence

from ragspine.deadline import check as check_deadline
from ragspine.errors import ConfigError
from ragspine.retrieval.ask_again import MAX_STALE_RETRIES, Page, StaleRanking, ask_again
from ragspine.retrieval.chunk_cache import ChunkCache
from ragspine.retrieval.chunking.chunk_store import ChunkStore, DocumentAcls, FollowableStore, StoredChunk
from ragspine.retrieval.chunking.chunking import Chunk
from ragspine.retrieval.filtering.filters import FilterSpec, MetadataFilter, combine_filters
from ragspine.retrieval.fusion import DEFAULT_RRF_K, rrf_fuse, sort_fused
from ragspine.retrieval.fusion.weights import AdaptiveWeights, LegWeights, ZScoreFusion, effective_weights
from ragspine.retrieval.fusion.zscore import zscore_fuse
from ragspine.retrieval.lexical.base import AclViews, LexicalIndex, default_index_text
from ragspine.retrieval.lexical.index import InMemoryLexicalIndex
from ragspine.retrieval.lexical.tokenizer import tokenize
from ragspine.retrieval.query.probes import Probe
from ragspine.retrieval.types import RetrievalResult
from ragspine.retrieval.vector.cache import InMemoryEmbeddingCache
from ragspine.retrieval.vector.dense import DEFAULT_EMBED_BATCH, DenseCoverage, DenseLeg, worst_coverage
from ragspine.retrieval.vector.embedding import EmbeddingBackend
from ragspine.retrieval.vector.embedding_cache import EmbeddingCache
from ragspine.retrieval.vector.gate import DenseGate
from ragspine.retrieval.vector.store import InProcessVectorStore
from ragspine.retrieval.vector.vector_store import VectorStore
from ragspine.security.principals import ANONYMOUS, Viewer

__all__ = ["DEFAULT_CANDIDATE_K", "MAX_STALE_RETRIES", "HybridRetriever", "Legs", "StaleRanking", "combine_filters"]

DEFAULT_CANDIDATE_K = 100


class Legs(dict[str, list[tuple[str, float]]]):
    """``{leg: [(chunk_id, score), ...]}`` plus ``versions``: the chunk version each score
    was computed from (so a fetch can tell a chunk replaced since it was scored), and
    ``coverage``: how many of the dense leg's candidates had no vector (``None``: it did not run)."""

    def __init__(self) -> None:
        super().__init__()
        self.versions: dict[str, int] = {}
        self.weight = 1.0  # a query transform's probe counts less in RRF (query/probes.py)
        self.coverage: DenseCoverage | None = None


class HybridRetriever:
    """See the module docstring."""

    def __init__(
        self,
        store: ChunkStore,
        *,
        embedding_backend: EmbeddingBackend | None = None,
        vector_store: VectorStore | None = None,
        embedding_cache: EmbeddingCache | None = None,
        lexical_index: LexicalIndex | None = None,
        legs: Sequence[str] = ("bm25", "vector"),
        rrf_k: int = DEFAULT_RRF_K,
        candidate_k: int = DEFAULT_CANDIDATE_K,
        dense_gate: DenseGate | None = None,
        embed_batch_size: int = DEFAULT_EMBED_BATCH,
        index_text: Callable[[StoredChunk], str] = default_index_text,
        chunk_cache: ChunkCache | None = None,
        leg_weights: LegWeights | None = None,
    ) -> None:
        self.store = store
        self.leg_weights = leg_weights  # weighted RRF; None: the seed's RRF (see fusion/weights.py)
        self.chunk_cache = chunk_cache if chunk_cache is not None else ChunkCache()
        self.library_id = store.library_id
        if lexical_index is None:
            if not isinstance(store, FollowableStore):
                from ragspine.errors import ConfigError

                raise ConfigError(f"{type(store).__name__} has no change log for the lexical index to follow; pass lexical_index=")
            lexical_index = InMemoryLexicalIndex(store, index_text=index_text)
        self.index: LexicalIndex = lexical_index
        self.embedding_backend = embedding_backend
        self.legs = tuple(legs) if embedding_backend is not None else ("bm25",)
        self.rrf_k = rrf_k
        self.candidate_k = candidate_k
        self.dense: DenseLeg | None = None
        #: RAPTOR (``ragspine.retrieval.raptor.leg``): when active, the dense leg searches the collapsed tree.
        self.raptor: Any = None
        if embedding_backend is not None:
            self.dense = DenseLeg(
                store,
                self.index,
                embedding_backend,
                vector_store if vector_store is not None else InProcessVectorStore(library_id=store.library_id),
                embedding_cache if embedding_cache is not None else InMemoryEmbeddingCache(),
                dense_gate if dense_gate is not None else DenseGate(embedding_backend),
                index_text=index_text,
                embed_batch_size=embed_batch_size,
            )

    @property
    def vector_store(self) -> VectorStore | None:
        return self.dense.vector_store if self.dense is not None else None

    @property
    def embedding_cache(self) -> EmbeddingCache | None:
        return self.dense.cache if self.dense is not None else None

    @property
    def dense_gate(self) -> DenseGate | None:
        return self.dense.gate if self.dense is not None else None

    # -- keeping derived state in step with the store ---------------------------------------
    def refresh(self) -> None:
        self.index.refresh()
        if self.dense is not None:
            self.dense.refresh()

    def ensure_vectors(
        self,
        candidates: Sequence[tuple[str, int]],
        progress: Callable[[int], None] | None = None,
        expect: Callable[[int], None] | None = None,
        *,
        fill_local: bool = True,
    ) -> int:
        """Give every ``(chunk_id, version)`` a current vector; returns how many were embedded
        (see :meth:`DenseLeg.ensure_vectors` for ``progress``, ``expect`` and ``fill_local``)."""
        return self.dense.ensure_vectors(candidates, progress, expect, fill_local=fill_local) if self.dense is not None else 0

    def sync_vectors(
        self, progress: Callable[[int], None] | None = None, expect: Callable[[int], None] | None = None, *, fill_local: bool = True,
    ) -> int:
        """Embed every active chunk lacking a current vector (what ``ragspine embed`` does), after
        dropping any vector of a RESTRICTED chunk (an older release wrote them); returns how
        many were embedded. Queries never do this. ``fill_local=False``: a process that ends
        next leaves a process-local vector store empty (see :meth:`DenseLeg.ensure_vectors`)."""
        self.refresh()
        if self.dense is not None:
            self.dense.drop_restricted()
        return self.ensure_vectors(self.index.candidates(), progress, expect, fill_local=fill_local)

    def warm_cache(self, chunks: Sequence[Chunk]) -> int:
        """See :meth:`DenseLeg.warm_cache` (0 without a dense leg)."""
        return self.dense.warm_cache(chunks) if self.dense is not None else 0

    # -- searching ---------------------------------------------------------------------------
    def view(self, viewer: Viewer) -> Any:
        """The rows ``viewer`` may read and their statistics (``None``: every row), computed once
        for a search and handed to each leg and the exit, so an ACL change while the search runs
        is seen by all of them or none. An index that cannot enforce ACLs
        (:class:`~ragspine.retrieval.lexical.base.AclViews`) serves only libraries without any."""
        index = self.index
        if isinstance(index, AclViews):
            return index.view(viewer)
        store = self.store
        if viewer.everything or not isinstance(store, DocumentAcls) or store.acl_seq() == 0 or not store.document_acls()[1]:
            return None
        raise ConfigError(
            f"library {self.library_id!r} has documents with ACLs, which the lexical index {type(index).__name__} cannot enforce:"
            " use RAGSPINE_LEXICAL_INDEX=memory (or warm on PostgreSQL)"
        )

    def rankings(
        self, query: str | Probe, *, metadata_filter: MetadataFilter | None = None, depth: int, legs_to_run: Sequence[str] | None = None,
        raptor: bool | None = None, view: Any = None,
    ) -> Legs:
        """Each leg's ranking ``[(chunk_id, score), ...]``, best first, at most ``depth`` long
        (``legs_to_run``: :meth:`legs_for` the query, when the caller has it already; ``raptor``:
        the request's choice of RAPTOR's leg, ``None``: the leg's default; ``view``: the rows a
        principal may read, :meth:`view` — every leg scores only them)."""
        probe = query if isinstance(query, Probe) else Probe(query)
        query = probe.text
        legs = Legs()
        seen = {} if view is None else {"view": view}
        for leg in self.legs_for(probe) if legs_to_run is None else legs_to_run:
            if leg == "bm25":
                hits = self.index.search(tokenize(query), metadata_filter=metadata_filter, top_k=depth, **seen)
                legs["bm25"] = [(h.chunk_id, h.score) for h in hits]
                legs.versions.update((h.chunk_id, h.version) for h in hits)
            else:
                assert self.dense is not None
                if self.raptor is not None and self.raptor.active(raptor):
                    # RAPTOR: the collapsed tree in the dense leg's place (under a view, a node with
                    # a leaf the principal may not read contributes nothing)
                    found = self.raptor.search(query, metadata_filter, depth, legs.versions, **seen)
                else:
                    found = self.dense.search(query, metadata_filter, depth, legs.versions, **seen)
                legs["vector"], legs.coverage = found.hits, found.coverage
        legs.weight = probe.weight
        return legs

    def legs_for(self, query: str | Probe) -> tuple[str, ...]:
        """The legs a search for ``query`` runs, of those it may use (a probe's ``legs``; a text:
        every leg): the dense leg only when the gate can read the query; BM25 when configured,
        or in its place when the dense leg cannot run (a HyDE passage, a dense-leg probe, runs
        BM25 where there is no dense leg)."""
        probe = query if isinstance(query, Probe) else Probe(query)
        vector = "vector" in probe.legs and "vector" in self.legs and self.dense is not None and self.dense.reads(probe.text)
        bm25 = ("bm25" in probe.legs and ("bm25" in self.legs or not vector)) or not vector
        return (("bm25",) if bm25 else ()) + (("vector",) if vector else ())

    def depth(self, want: int, rankings: int) -> int:
        """How deep each ranking goes for ``want`` fused results (see the module docstring)."""
        return want if rankings == 1 else max(self.candidate_k, want)

    def fuse(
        self, legs_per_query: Iterable[Legs], *, top_k: int, stale: str = "skip", metadata_filter: MetadataFilter | None = None,
        weights: LegWeights | None = None,
    ) -> list[RetrievalResult]:
        """RRF over every leg of every query; chunks fetched from the store, best first.

        A chunk whose active version is not the one it was scored on (replaced in between):
        ``stale="raise"`` raises :class:`StaleRanking` (the caller re-ranks); ``"skip"`` (the
        last attempt, when writes kept overtaking the ranking) shows each document in one
        version, the newest its ranked chunks were fetched at, and never drops it for being
        re-ingested: a chunk fetched at a newer version is shown at that version (if it passes
        ``metadata_filter``) with the scores its previous version got. ``weights``: the
        request's leg weights (``None``: the library's).
        """
        return self._fuse(legs_per_query, top_k, stale, metadata_filter, weights)[0]

    def _fuse(
        self, legs_per_query: Iterable[Legs], top_k: int, stale: str, metadata_filter: MetadataFilter | None = None,
        request_weights: LegWeights | None = None, view: Any = None,
    ) -> tuple[list[RetrievalResult], bool]:
        """:meth:`fuse`, and whether every fused candidate was looked at (none left over)."""
        rankings: list[list[str]] = []
        ranking_legs: list[str] = []
        ranking_scores: list[list[float]] = []
        probe_weights: list[float] = []
        best: dict[str, dict[str, float]] = {}  # leg -> chunk_id -> its best score over the queries
        scored: dict[str, int] = {}
        for legs in legs_per_query:
            scored.update(legs.versions)
            for leg, ranking in legs.items():
                rankings.append([cid for cid, _ in ranking])
                ranking_legs.append(leg)
                ranking_scores.append([score for _, score in ranking])
                probe_weights.append(legs.weight)
                top = best.setdefault(leg, {})
                for cid, score in ranking:
                    if cid not in top or score > top[cid]:
                        top[cid] = score
        bm25, vector = best.get("bm25", {}), best.get("vector", {})
        leg_weights = effective_weights(self.leg_weights, request_weights)
        if isinstance(leg_weights, AdaptiveWeights):
            weights = leg_weights.weights(ranking_scores)
        else:
            weights = None if leg_weights is None else [leg_weights.get(leg, 1.0) for leg in ranking_legs]
        if any(w != 1.0 for w in probe_weights):  # generated probes count less than the question
            weights = [w * (1.0 if weights is None else weights[i]) for i, w in enumerate(probe_weights)]
        by_score = zscore_fuse([list(zip(r, sc, strict=True)) for r, sc in zip(rankings, ranking_scores, strict=True)], weights) if (
            isinstance(leg_weights, ZScoreFusion)) else None  # None: one ranking, or none with a spread: RRF
        if by_score is not None:
            ordered = sort_fused(by_score)
        elif len(rankings) == 1:  # RRF of one ranking is that ranking, with 1/(k + rank) as score
            ordered = list(rrf_fuse(rankings, k=self.rrf_k).items())
        else:
            ordered = sort_fused(rrf_fuse(rankings, k=self.rrf_k, weights=weights))
        results: list[RetrievalResult] = []
        doc_version: dict[str, int] = {}  # one version of a document per answer
        pos = 0
        while len(results) < top_k and pos < len(ordered):
            check_deadline("fetching the ranked chunks")
            page = ordered[pos : pos + top_k - len(results)]
            pos += len(page)
            chunks = self._fetch([cid for cid, _ in page], scored)
            for cid, fused in page:
                chunk = chunks.get(cid)
                if chunk is None:  # retired since it was scored
                    continue
                if view is not None and view.snapshot.hides(view.viewer, chunk.doc_id):  # the exit checks it again
                    continue
                seen = doc_version.setdefault(chunk.doc_id, chunk.version)
                moved = cid in scored and chunk.version != scored[cid]
                if moved or seen != chunk.version:
                    # scored on another version, or the legs saw two versions of its document
                    if stale == "raise":
                        raise StaleRanking(cid)
                    if chunk.version < seen:  # the document is shown in a newer version
                        continue
                    if moved and metadata_filter is not None and not metadata_filter.matches(chunk.metadata):
                        continue
                    if chunk.version > seen:  # keep the newer version's chunks only
                        doc_version[chunk.doc_id] = chunk.version
                        results = [r for r in results if r.chunk.doc_id != chunk.doc_id]
                scores = {"bm25": bm25.get(cid, 0.0), "vector": vector.get(cid, 0.0), "fused": fused}
                results.append(RetrievalResult(chunk, scores, self.library_id))
        return results, pos >= len(ordered)

    def _fetch(self, chunk_ids: list[str], scored: dict[str, int]) -> dict[str, StoredChunk]:
        """The chunks of ``chunk_ids``: the scored versions the chunk cache holds, the rest
        from the store (active rows only)."""
        cache = self.chunk_cache
        if cache is None:
            return {c.chunk_id: c for c in self.store.get_chunks(chunk_ids)}
        chunks = cache.get_many(self.library_id, [(cid, scored[cid]) for cid in chunk_ids if cid in scored])
        missing = [cid for cid in chunk_ids if cid not in chunks]
        if missing:
            fetched = self.store.get_chunks(missing)
            cache.put_many(fetched)
            chunks.update((c.chunk_id, c) for c in fetched)
        return chunks

    def search_once(
        self, queries: Sequence[str | Probe], want: int, metadata_filter: MetadataFilter | None, skip_stale: bool, *,
        weights: LegWeights | None = None, raptor: bool | None = None, viewer: Viewer = ANONYMOUS,
    ) -> Page[RetrievalResult]:
        """One fused search of every query variant and probe, up to ``want`` results, and how
        many of the dense leg's candidates had no vector (no retries: see
        :func:`~ragspine.retrieval.ask_again.ask_again`); ``weights`` and ``raptor``: the
        request's (``None``: the library's); ``viewer``: whom it runs for (every leg scores only
        the documents it may read, with their statistics; default: a caller who is no principal,
        who reads the documents without an ACL)."""
        self.refresh()
        view = self.view(viewer)
        plan = [(q, self.legs_for(q)) for q in queries]
        depth = self.depth(want, sum(len(legs_to_run) for _, legs_to_run in plan))
        legs = [self.rankings(q, metadata_filter=metadata_filter, depth=depth, legs_to_run=run, raptor=raptor, view=view) for q, run in plan]
        results, consumed = self._fuse(legs, want, "skip" if skip_stale else "raise", metadata_filter, weights, view)
        exhausted = consumed and all(len(ranking) < depth for leg in legs for ranking in leg.values())
        return Page(results, exhausted, worst_coverage([leg.coverage for leg in legs if leg.coverage is not None]))

    def search(self, query: str, *, top_k: int = 10, metadata_filter: FilterSpec = None, **fields: Any) -> list[RetrievalResult]:
        """The seed's entry point: ``metadata_filter`` (any form ``parse_filter`` reads) AND the
        seed's keyword pre-filters (``topic=``, ``entity=``, ...)."""
        filt = combine_filters(metadata_filter, fields)
        search = lambda want, f, skip: self.search_once([query], want, f, skip)  # noqa: E731
        return ask_again(search, top_k=top_k, metadata_filter=filt).items
