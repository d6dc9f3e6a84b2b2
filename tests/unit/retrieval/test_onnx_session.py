"""One onnxruntime session per model file in a process (ragspine.retrieval.onnx_session): the
dense MiniLM embedder and the colbert reranker on the packaged MiniLM share it, its outputs are
bit-identical to a session of its own, and two threads asking at once build it once."""

from __future__ import annotations

import gc
import os
import threading
import time
import weakref

import numpy as np
import pytest

from ragspine.errors import BackendError
from ragspine.retrieval import onnx_session
from ragspine.retrieval.onnx_session import session_options, shared_session
from tests.helpers import ONNX_MODULES, needs
from tests.unit.retrieval.rerank.onnx_graphs import token_encoder_dir

TEXTS = [
    "What does the insurance cover for parts?",
    "a",
    "Supply-chain disruption: port congestion in Shanghai delayed shipments by three weeks.",
    "供应链中断导致第三季度交付延迟",
    " ".join(f"Paragraph {i}: the committee reviewed supplier contracts and warranty claims." for i in range(30)),
]


def _direct_session(path, threads=None):
    """A session of its own, as the backends built one before the registry."""
    import onnxruntime as ort

    return ort.InferenceSession(str(path), session_options(threads), providers=["CPUExecutionProvider"])


@pytest.fixture
def minilm(tmp_path):
    needs(*ONNX_MODULES)
    from ragspine.config import load_settings
    from ragspine.retrieval.rerank.late_interaction import colbert_reranker
    from ragspine.retrieval.vector.onnx_backend import OnnxEmbeddingBackend

    settings = load_settings({"RAGSPINE_CACHE_DIR": str(tmp_path / "cache")})
    dense = OnnxEmbeddingBackend.from_settings(settings)
    colbert = colbert_reranker(settings=settings)
    return dense, colbert


@pytest.mark.slow
def test_the_dense_embedder_and_colbert_share_one_session(minilm, monkeypatch) -> None:
    import onnxruntime as ort

    built = []
    real = ort.InferenceSession

    def counting(*args, **kwargs):
        built.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(ort, "InferenceSession", counting)
    from ragspine.retrieval import onnx_session

    monkeypatch.setattr(onnx_session, "_sessions", weakref.WeakValueDictionary())  # none left by an earlier test
    dense, colbert = minilm
    dense.embed_array(["warm the dense leg"])
    colbert.scorer.score("what does the insurance cover", ["The insurance covers parts."])
    session, _ = colbert.scorer.model._load()
    assert session is dense._load()
    assert len(built) == 1, built  # the packaged model.onnx was loaded once, not once per user


@pytest.mark.slow
def test_shared_outputs_are_bit_identical_to_a_session_of_its_own(minilm) -> None:
    dense, colbert = minilm
    model = colbert.scorer.model
    shared_vectors = dense.embed_array(TEXTS)
    shared_states = model.token_states(TEXTS)
    shared_scores = colbert.scorer.score(TEXTS[0], TEXTS[1:])
    assert model._load()[0] is dense._load()

    own = _direct_session(dense.model_dir / "model.onnx")
    dense._session = own  # the backends' own sessions, as before the registry
    model._session = _direct_session(model.model_dir / "model.onnx")
    assert model._session is not dense._session
    own_vectors = dense.embed_array(TEXTS)
    own_states = model.token_states(TEXTS)
    from ragspine.retrieval.rerank.late_interaction import MaxSimScorer

    fresh = MaxSimScorer(model, languages=("en",))  # nothing cached: every text encoded by the own session
    own_scores = fresh.score(TEXTS[0], TEXTS[1:])

    assert shared_vectors.dtype == own_vectors.dtype and np.array_equal(shared_vectors, own_vectors)
    assert len(shared_states) == len(own_states)
    for a, b in zip(shared_states, own_states, strict=True):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    assert shared_scores == own_scores


def test_two_threads_asking_at_once_build_one_session(tmp_path, monkeypatch) -> None:
    needs("onnxruntime", "tokenizers", "onnx")
    import onnxruntime as ort

    path = token_encoder_dir(tmp_path / "enc") / "model.onnx"
    built = []
    real = ort.InferenceSession

    def slow(*args, **kwargs):
        built.append(args[0])
        time.sleep(0.2)  # the second thread arrives while the first is still building
        return real(*args, **kwargs)

    monkeypatch.setattr(ort, "InferenceSession", slow)
    start = threading.Barrier(4)
    got: list[object] = []

    def ask() -> None:
        start.wait()
        got.append(shared_session(path))

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(built) == 1 and len(got) == 4
    assert all(s is got[0] for s in got)
    assert not onnx_session._building  # no lock left behind


def test_other_threads_or_a_rewritten_file_get_their_own_session(tmp_path) -> None:
    needs("onnxruntime", "tokenizers", "onnx")
    path = token_encoder_dir(tmp_path / "enc") / "model.onnx"
    first = shared_session(path)
    assert shared_session(str(path)) is first
    assert shared_session(path, threads=1) is not first
    assert shared_session(path, threads=1).get_session_options().intra_op_num_threads == 1
    options = first.get_session_options()
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    # a link to the same file is the same file
    link = tmp_path / "link.onnx"
    os.symlink(path, link)
    assert shared_session(link) is first
    # a model replaced on disk is loaded again
    token_encoder_dir(tmp_path / "enc2", dim=8)
    os.replace(tmp_path / "enc2" / "model.onnx", path)
    assert shared_session(path) is not first


def test_a_session_nobody_holds_is_released(tmp_path) -> None:
    needs("onnxruntime", "tokenizers", "onnx")
    path = token_encoder_dir(tmp_path / "enc") / "model.onnx"
    shared_session(path)
    gc.collect()
    assert not [k for k in onnx_session._sessions.keys() if k[0] == str(path.resolve())]


def test_a_broken_model_keeps_the_callers_error(tmp_path) -> None:
    needs("onnxruntime", "tokenizers", "onnx")
    from ragspine.retrieval.rerank.onnx_model import OnnxTextModel

    directory = token_encoder_dir(tmp_path / "enc")
    (directory / "model.onnx").write_bytes(b"not an onnx graph")
    with pytest.raises(BackendError, match=r"cannot load the ONNX model in .*enc"):
        OnnxTextModel(directory).token_states(["text"])
    assert not onnx_session._building
