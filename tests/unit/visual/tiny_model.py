"""A tiny visual model the tests build themselves (no model can be downloaded here), in the
layout :class:`~ragspine.retrieval.visual.onnx_embedder.OnnxVisualEmbedder` reads.

Pages: a patch vector is the patch's mean colour, centred (``visual.json``'s mean 0.5): white
paper is (+.5, +.5, +.5), black ink (-.5, -.5, -.5), a red bar (+.5, -.5, -.5). Queries: the
packaged MiniLM tokenizer; the word pieces ``red``, ``blue`` and ``green`` are the directions of
those colours, every other piece a zero vector (it scores 0). So MaxSim of "red" is 1 on a page
with a red bar and at most 1/3 on a page of black text on white: a chart found by what it shows,
not by a text layer.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

from tests.unit.retrieval.rerank.onnx_graphs import TOKENIZER, vocab

PATCH = 16
COLOURS = {"red": (1.0, -1.0, -1.0), "blue": (-1.0, -1.0, 1.0), "green": (-1.0, 1.0, -1.0)}


def _save(graph, path: Path) -> None:
    import onnx

    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 13)])
    model.ir_version = 8
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path))


def build_tiny_visual_model(directory: Path) -> Path:
    from onnx import TensorProto, helper, numpy_helper

    # page_encoder.onnx: [b, 3, h, w] -> mean colour of each 16x16 patch -> [b, patches, 3]
    nodes = [
        helper.make_node("AveragePool", ["pixel_values"], ["pooled"], kernel_shape=[PATCH, PATCH], strides=[PATCH, PATCH]),
        helper.make_node("Reshape", ["pooled", "shape"], ["flat"]),  # [b, 3, patches]
        helper.make_node("Transpose", ["flat"], ["patches"], perm=[0, 2, 1]),
    ]
    graph = helper.make_graph(
        nodes, "tiny_page_encoder", [helper.make_tensor_value_info("pixel_values", TensorProto.FLOAT, ["b", 3, "h", "w"])],
        [helper.make_tensor_value_info("patches", TensorProto.FLOAT, ["b", "n", 3])],
        initializer=[numpy_helper.from_array(np.array([0, 3, -1], dtype=np.int64), "shape")],
    )
    _save(graph, directory / "page_encoder.onnx")

    # query/model.onnx: a word piece's colour direction, else zero
    ids = vocab()
    table = np.zeros((len(ids), 3), dtype=np.float32)
    for word, colour in COLOURS.items():
        table[ids[word]] = colour
    inputs = [helper.make_tensor_value_info(n, TensorProto.INT64, ["b", "s"]) for n in ("input_ids", "attention_mask")]
    graph = helper.make_graph([helper.make_node("Gather", ["E", "input_ids"], ["last_hidden_state"], axis=0)], "tiny_query_encoder",
                              inputs, [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["b", "s", 3])],
                              initializer=[numpy_helper.from_array(table, "E")])
    _save(graph, directory / "query" / "model.onnx")
    shutil.copyfile(TOKENIZER, directory / "query" / "tokenizer.json")
    (directory / "visual.json").write_text(json.dumps({"mean": [0.5, 0.5, 0.5], "std": [1, 1, 1]}), encoding="utf-8")
    return directory


def chart_pdf(path: Path, pages: list[tuple[str, tuple[float, float, float] | None]]) -> Path:
    """A PDF of one page per ``(caption, bar colour)``: the caption as text, and a chart's bar
    (a filled rectangle) in the colour given (``None``: text only)."""
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    c = canvas.Canvas(str(path), pagesize=A4)
    for caption, colour in pages:
        c.setFont("Helvetica", 12)
        c.drawString(72, 780, caption)
        if colour is not None:
            c.setFillColorRGB(*colour)
            c.rect(150, 200, 120, 400, fill=1, stroke=0)
            c.setFillColorRGB(*colour)
            c.rect(300, 200, 120, 250, fill=1, stroke=0)
        c.showPage()
    c.save()
    return path
