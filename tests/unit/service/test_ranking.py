"""A library's ranking (reranker, depth, postprocessors, fusion weights) is chosen when it is
created and kept; a request may override it for itself, within limits; rerank latency is a
Prometheus histogram."""

from __future__ import annotations

import pytest

from ragspine.registries import RERANKERS
from ragspine.registry import Entry
from ragspine.retrieval.rerank.scored import ScoreReranker
from tests.unit.service.conftest import doc, ingest, new_library, new_tenant, retrieve


class LongestFirst:
    def score(self, query, texts):
        return [float(len(t)) for t in texts]


def longest_first(**_):
    return ScoreReranker(LongestFirst(), name="longest")


@pytest.fixture(autouse=True)
def _longest_registered():
    RERANKERS.register("longest", Entry(f"{__name__}:longest_first", "the longest text first"))
    yield
    RERANKERS.unregister("longest")


DOCS = [doc(f"d{i}", "Vacation policy. " + "Other rules are listed here. " * i) for i in range(1, 6)]


def ids(response) -> list[str]:
    assert response.status_code == 200, response.text
    return [s["doc_id"] for s in response.json()["snippets"]]


def test_a_librarys_ranking_is_kept_and_applied(client) -> None:
    headers = new_tenant(client)
    lib = new_library(client, headers, "plain", retrieval_mode="economy")
    assert (lib["reranker"], lib["rerank_depth"], lib["postprocessor"], lib["fusion_weights"]) == ("none", 50, "none", None)
    lib = new_library(client, headers, "ranked", retrieval_mode="economy", reranker="longest", rerank_depth=20,
                      postprocessor="mmr, lost_in_middle,mmr", fusion_weights={"vector": 0.5})
    assert (lib["reranker"], lib["rerank_depth"], lib["postprocessor"], lib["fusion_weights"]) == (
        "longest", 20, "mmr,lost_in_middle", "vector=0.5")
    assert client.get("/v1/libraries/ranked", headers=headers).json()["reranker"] == "longest"
    for name in ("plain", "ranked"):
        ingest(client, headers, name, *DOCS)
    plain = ids(retrieve(client, headers, "vacation", libraries=["plain"], top_k=3))
    assert plain[0] == "d1"  # BM25: the shortest document first
    reranked = retrieve(client, headers, "vacation", libraries=["ranked"], top_k=3).json()["snippets"]
    # longest first, then lost_in_middle lays ranks 1, 3, 2 out
    assert [s["doc_id"] for s in reranked] == ["d5", "d3", "d4"]
    assert all("rerank" in s["scores"] for s in reranked)
    metrics = client.get("/metrics").text
    assert 'ragspine_rerank_seconds_count{reranker="longest"} 1.0' in metrics


def test_a_request_overrides_the_ranking_for_itself(client) -> None:
    headers = new_tenant(client)
    new_library(client, headers, "plain", retrieval_mode="economy")
    ingest(client, headers, "plain", *DOCS)
    assert ids(retrieve(client, headers, "vacation", libraries=["plain"], top_k=2, reranker="longest")) == ["d5", "d4"]
    assert ids(retrieve(client, headers, "vacation", libraries=["plain"], top_k=2, reranker="longest", rerank_depth=2)) == ["d2", "d1"]
    assert ids(retrieve(client, headers, "vacation", libraries=["plain"], top_k=2))[0] == "d1"  # only that request


@pytest.mark.parametrize(("body", "word"), [
    ({"reranker": "magic"}, "reranker"), ({"postprocessor": "shuffle"}, "postprocessor"),
    ({"fusion_weights": "dense=1"}, "unknown leg"), ({"fusion_weights": {"vector": -1}}, "within 0..100"),
    ({"rerank_depth": 500}, "rerank_depth"), ({"reranker": "cross_encoder"}, "RAGSPINE_CROSS_ENCODER_DIR"),
])
def test_bad_rankings_are_refused_with_the_reason(client, body, word) -> None:
    headers = new_tenant(client)
    new_library(client, headers, "plain", retrieval_mode="economy")
    for r in (client.post("/v1/libraries", json={"name": "bad", **body}, headers=headers),
              retrieve(client, headers, "vacation", libraries=["plain"], **body)):
        assert r.status_code in (400, 422) and word in r.text, r.text
    assert [l["name"] for l in client.get("/v1/libraries", headers=headers).json()] == ["plain"]
