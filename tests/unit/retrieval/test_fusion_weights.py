"""Weighted RRF: the seed's arithmetic when unweighted, weights by hand, parsing, and the
request > library > configuration precedence through a real pipeline."""

from __future__ import annotations

import pytest

from ragspine.config import load_settings
from ragspine.errors import ConfigError
from ragspine.retrieval.fusion import rrf_fuse
from ragspine.retrieval.fusion.weights import format_weights, parse_weights
from ragspine.retrieval.pipeline import LibraryPipeline
from ragspine.retrieval.request import SearchRequest
from ragspine.retrieval.vector.embedding_backends import DeterministicEmbeddingBackend
from ragspine.stores.sqlite import SQLiteChunkStore


def test_unit_weights_are_the_seed_rrf_exactly() -> None:
    rankings = [["a", "b", "c"], ["c", "a", "d"]]
    assert rrf_fuse(rankings, k=60, weights=[1.0, 1.0]) == rrf_fuse(rankings, k=60)


def test_weights_by_hand() -> None:
    fused = rrf_fuse([["a", "b"], ["b", "a"]], k=1, weights=[2.0, 0.5])
    assert fused == {"a": 2.0 / 2 + 0.5 / 3, "b": 2.0 / 3 + 0.5 / 2}
    assert rrf_fuse([["a"], ["b"]], k=0, weights=[0.0, 1.0]) == {"a": 0.0, "b": 1.0}
    with pytest.raises(ValueError, match="1 RRF weights for 2 rankings"):
        rrf_fuse([["a"], ["b"]], weights=[1.0])
    with pytest.raises(ValueError, match=">= 0"):
        rrf_fuse([["a"], ["b"]], weights=[1.0, -1.0])


def test_parse_weights() -> None:
    assert parse_weights("bm25=1, vector=0.5") == {"bm25": 1.0, "vector": 0.5}
    assert parse_weights({"VECTOR": 2}) == {"vector": 2.0}
    assert parse_weights(None) is None and parse_weights("") is None and parse_weights("none") is None
    for bad, why in (("dense=1", "unknown leg 'dense'"), ("bm25", "leg=weight"), ("bm25=x", "not a number"),
                     ("vector=-1", "within 0..100"), ("vector=1e9", "within 0..100"), ("bm25=0,vector=0", "above 0")):
        with pytest.raises(ConfigError, match=why):
            parse_weights(bad)
    assert format_weights({"bm25": 1.0, "vector": 0.5}) == "bm25=1,vector=0.5" and format_weights(None) == "none"
    assert load_settings({"RAGSPINE_FUSION_WEIGHTS": "vector=0.50"}).ranking.fusion_weights == "vector=0.5"
    with pytest.raises(ConfigError, match="RAGSPINE_FUSION_WEIGHTS"):
        load_settings({"RAGSPINE_FUSION_WEIGHTS": "vector=much"})


DOCS = {
    # BM25 prefers "lex" (the query's words verbatim); the hashing "dense" leg prefers "sem"
    "lex": "alpha beta gamma alpha beta gamma",
    "sem": "alpha beta delta epsilon",
    "other": "zeta eta theta",
}


@pytest.fixture
def pipeline(tmp_path):
    def make(weights=None):
        store = SQLiteChunkStore(tmp_path / f"w{len(list(tmp_path.iterdir()))}.db", library_id="w")
        pipe = LibraryPipeline(store, mode="hybrid", embedding_backend=DeterministicEmbeddingBackend(dim=64), leg_weights=weights)
        for doc_id, text in DOCS.items():
            pipe.ingest_text(doc_id, text)
        return pipe

    return make


def fused(pipe, query="alpha beta gamma", weights=None):
    return {r.chunk.doc_id: r.scores["fused"] for r in pipe.retrieve(SearchRequest(query, weights=weights), top_k=3)}


def test_the_pipeline_fuses_with_the_library_weights_and_a_request_overrides_them(pipeline) -> None:
    plain = pipeline()
    seed = fused(plain)
    legs = plain.retriever.rankings("alpha beta gamma", depth=10)
    rank = {leg: {cid.split("#")[0]: i for i, (cid, _) in enumerate(r, start=1)} for leg, r in legs.items()}

    def by_hand(wb: float, wv: float) -> dict[str, float]:
        def part(leg: str, w: float, d: str) -> float:
            return w / (60 + rank[leg][d]) if d in rank[leg] else 0.0

        return {d: part("bm25", wb, d) + part("vector", wv, d) for d in seed}

    assert seed == pytest.approx(by_hand(1, 1))
    assert fused(pipeline({"vector": 3.0})) == pytest.approx(by_hand(1, 3))
    request = {"bm25": 0.0, "vector": 1.0}
    assert fused(plain, weights=request) == pytest.approx(by_hand(0, 1))  # the request wins over the library's none
    assert plain.max_fused_score(SearchRequest("alpha beta gamma", weights=request)) == pytest.approx(1 / 61)
    assert fused(plain) == seed  # and only in that request
    assert plain.max_fused_score("alpha beta gamma") == pytest.approx(2 / 61)


def test_adaptive_weights_follow_how_clearly_each_best_hit_stands_out() -> None:
    from ragspine.retrieval.fusion.weights import ADAPTIVE, AdaptiveWeights

    assert parse_weights("adaptive") is ADAPTIVE and format_weights(ADAPTIVE) == "adaptive"
    assert load_settings({"RAGSPINE_FUSION_WEIGHTS": "Adaptive"}).ranking.fusion_weights == "adaptive"
    clear, flat = [10.0, 2, 2, 2, 2], [0.9, 0.89, 0.88, 0.87, 0.86]
    # z(clear) = (10 - 3.6) / 3.2 = 2; z(flat) = 0.02 / 0.01414 = 1.414: weights 2·z / Σz
    w = AdaptiveWeights().weights([clear, flat])
    assert w == pytest.approx([2 * 2 / (2 + 2 ** 0.5), 2 * 2 ** 0.5 / (2 + 2 ** 0.5)])
    assert sum(w) == pytest.approx(2.0)
    assert ADAPTIVE.weights([clear, [1.0, 1.0, 1.0]]) is None  # a ranking that says nothing: plain RRF
    assert ADAPTIVE.weights([clear, [0.5, 0.4]]) is None  # too short to tell


def test_adaptive_weights_through_the_pipeline(pipeline) -> None:
    from ragspine.retrieval.fusion.weights import ADAPTIVE

    plain, adaptive = pipeline(), pipeline(ADAPTIVE)
    legs = plain.retriever.rankings("alpha beta gamma", depth=10)
    expected = ADAPTIVE.weights([[s for _, s in legs["bm25"]], [s for _, s in legs["vector"]]])
    got = fused(adaptive)
    if expected is None:
        assert got == fused(plain)
    else:
        rank = {leg: {cid.split("#")[0]: i for i, (cid, _) in enumerate(r, start=1)} for leg, r in legs.items()}
        for doc, score in got.items():
            want = sum(w / (60 + rank[leg][doc]) for leg, w in zip(("bm25", "vector"), expected, strict=False) if doc in rank[leg])
            assert score == pytest.approx(want)
    assert adaptive.max_fused_score("alpha beta gamma") == pytest.approx(2 / 61)


def test_zscore_fusion_by_hand() -> None:
    from ragspine.retrieval.fusion.weights import ZSCORE
    from ragspine.retrieval.fusion.zscore import zscore_fuse

    assert parse_weights("zscore") is ZSCORE and format_weights(ZSCORE) == "zscore"
    assert load_settings({"RAGSPINE_FUSION_WEIGHTS": "ZScore"}).ranking.fusion_weights == "zscore"
    # BM25 is sure of "a" (z 2 over a flat tail); the dense leg barely prefers "b" over "a"
    bm25 = [("a", 10.0), ("b", 2.0), ("c", 2.0), ("d", 2.0), ("e", 2.0)]  # mean 3.6, std 3.2: z(a) = 2, the rest -0.5
    dense = [("b", 0.9), ("a", 0.8), ("c", 0.7)]  # mean 0.8, std 0.08165: z = 1.2247, 0, -1.2247
    fused = zscore_fuse([bm25, dense])
    zb, zd = 2.0, 1.5 ** 0.5
    scale = 2 / (zb * zb + zd * zd)  # first in both rankings would score exactly 2
    assert fused == pytest.approx({
        "a": scale * (zb * 2.0 + zd * 0.0),
        "b": scale * (zb * -0.5 + zd * zd),
        "c": scale * (zb * -0.5 + zd * -zd),
        "d": scale * (zb * -0.5 + zd * -zd),  # missing from the dense top: its lowest z
        "e": scale * (zb * -0.5 + zd * -zd),
    })
    assert max(fused, key=fused.get) == "a"  # RRF ties a and b (1/61 + 1/62 each): the sure leg leads here
    rrf = rrf_fuse([[k for k, _ in bm25], [k for k, _ in dense]])
    assert rrf["a"] == pytest.approx(rrf["b"])
    same = [("z", 3.0), ("y", 2.0), ("x", 1.0)]
    assert zscore_fuse([same, same])["z"] == pytest.approx(2.0)  # first in every ranking: n
    assert zscore_fuse([bm25]) is None  # one ranking: RRF's (that ranking)
    assert zscore_fuse([bm25, [("a", 1.0), ("b", 1.0), ("c", 1.0)]]) is not None  # a flat ranking just counts nothing
    assert zscore_fuse([[("a", 1.0), ("b", 1.0), ("c", 1.0)], [("a", 0.5), ("b", 0.4)]]) is None  # nothing to tell: RRF
    half = zscore_fuse([bm25, dense], [1.0, 0.5])  # a probe's ranking at half weight leans less
    assert half["b"] - half["a"] < fused["b"] - fused["a"]
    with pytest.raises(ValueError):
        zscore_fuse([bm25, dense], [1.0])


def test_zscore_fusion_through_the_pipeline_and_a_request(pipeline) -> None:
    from ragspine.retrieval.fusion.weights import ZSCORE
    from ragspine.retrieval.fusion.zscore import zscore_fuse

    plain, zs = pipeline(), pipeline(ZSCORE)
    legs = plain.retriever.rankings("alpha beta gamma", depth=100)
    expected = zscore_fuse([legs["bm25"], legs["vector"]])
    assert expected is not None
    got = fused(zs)
    assert got == pytest.approx({cid.split("#")[0]: v for cid, v in expected.items() if cid.split("#")[0] in got})
    assert list(got) == [cid.split("#")[0] for cid, _ in sorted(expected.items(), key=lambda kv: (-kv[1], kv[0]))][:3]
    assert zs.max_fused_score("alpha beta gamma") == 2.0 and plain.max_fused_score("alpha beta gamma") == pytest.approx(2 / 61)
    assert fused(plain, weights=ZSCORE) == pytest.approx(got)
    assert fused(plain) != pytest.approx(got)  # the seed's RRF in a request without weights


def test_ragspine_config_names_the_fusion() -> None:
    from ragspine.stack import describe_stack

    rows = dict(describe_stack(load_settings({"RAGSPINE_FUSION_WEIGHTS": "zscore", "RAGSPINE_EMBEDDING": "deterministic"})))
    assert rows["fusion"].startswith("z-score fusion")
    assert dict(describe_stack(load_settings({"RAGSPINE_EMBEDDING": "deterministic"})))["fusion"] == "RRF k=60, weights none (every leg 1)"
