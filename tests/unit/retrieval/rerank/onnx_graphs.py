"""Tiny ONNX graphs the reranker tests build themselves (no model can be downloaded here),
paired with the real packaged WordPiece tokenizer."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

TOKENIZER = Path(__file__).parents[4] / "ragspine" / "retrieval" / "vector" / "models" / "minilm" / "tokenizer.json"


def vocab() -> dict[str, int]:
    return json.loads(TOKENIZER.read_text(encoding="utf-8"))["model"]["vocab"]


def _save(graph, directory: Path) -> Path:
    import onnx  # the [test] extra installs it
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 13)])
    model.ir_version = 8
    directory.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(directory / "model.onnx"))
    shutil.copyfile(TOKENIZER, directory / "tokenizer.json")
    return directory


def cross_encoder_dir(directory: Path, weights: dict[str, float], *, segments: bool = True, columns: int = 1) -> Path:
    """logit = sum over the passage's tokens (segment 1; every token without ``segments``) of
    ``weights[token]``; ``columns`` = 2 adds a constant first column (a 2-class head)."""
    from onnx import TensorProto, helper, numpy_helper

    ids = vocab()
    w = np.zeros((len(ids), 1), dtype=np.float32)
    for token, value in weights.items():
        w[ids[token], 0] = value
    inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["b", "s"]),
              helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["b", "s"])]
    nodes = [
        helper.make_node("Gather", ["W", "input_ids"], ["g"], axis=0),  # [b, s, 1]
        helper.make_node("Squeeze", ["g", "axis2"], ["per_token"]),  # [b, s]
        helper.make_node("Cast", ["attention_mask"], ["maskf"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["per_token", "maskf"], ["masked"]),
    ]
    last = "masked"
    if segments:
        inputs.append(helper.make_tensor_value_info("token_type_ids", TensorProto.INT64, ["b", "s"]))
        nodes += [helper.make_node("Cast", ["token_type_ids"], ["typef"], to=TensorProto.FLOAT),
                  helper.make_node("Mul", ["masked", "typef"], ["passage_only"])]
        last = "passage_only"
    nodes.append(helper.make_node("ReduceSum", [last, "axis1"], ["score"], keepdims=1))  # [b, 1]
    output = "score"
    inits = [numpy_helper.from_array(w, "W"), numpy_helper.from_array(np.array([2], dtype=np.int64), "axis2"),
             numpy_helper.from_array(np.array([1], dtype=np.int64), "axis1")]
    if columns == 2:
        nodes += [helper.make_node("Mul", ["score", "zero"], ["zeros"]), helper.make_node("Concat", ["zeros", "score"], ["logits"], axis=1)]
        inits.append(numpy_helper.from_array(np.array([[0.0]], dtype=np.float32), "zero"))
        output = "logits"
    graph = helper.make_graph(nodes, "tiny_cross_encoder", inputs,
                              [helper.make_tensor_value_info(output, TensorProto.FLOAT, ["b", columns])], initializer=inits)
    return _save(graph, directory)


def token_encoder_dir(directory: Path, dim: int = 16) -> Path:
    """last_hidden_state = a fixed random vector per word piece (so equal tokens have cosine 1
    and different ones near 0): MaxSim counts the query's word pieces found in a passage."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(7)
    table = rng.standard_normal((len(vocab()), 256)).astype(np.float32)
    table /= np.linalg.norm(table, axis=1, keepdims=True)
    inputs = [helper.make_tensor_value_info(n, TensorProto.INT64, ["b", "s"]) for n in ("input_ids", "attention_mask", "token_type_ids")]
    nodes = [helper.make_node("Gather", ["E", "input_ids"], ["last_hidden_state"], axis=0)]
    graph = helper.make_graph(nodes, "tiny_token_encoder", inputs,
                              [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["b", "s", 256])],
                              initializer=[numpy_helper.from_array(table, "E")])
    return _save(graph, directory)
