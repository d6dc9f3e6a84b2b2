"""The workflow preview: a :class:`~ragspine.workflow.view.PipelineView` drawn as a Dify DSL graph.

A **redacted UI projection** of the pipeline — nodes, edges, labels and geometry only. It is
not evidence, not the engine's topology and not executable: importing it into Dify draws a
canvas and runs nothing (its description and a note on the canvas say so).

The shape is Dify's app DSL as its importer reads it (``api/services/app_dsl_service.py``:
``version`` a string, ``kind: app``, ``app.mode``, ``workflow.graph``; the graph check of
``WorkflowService.validate_graph_structure`` reads every node's ``data.type`` as a node type)
and as its canvas draws it (``web/app/components/workflow``: React Flow nodes of ``type:
custom`` with ``data.type`` a ``BlockEnum`` value, notes of ``type: custom-note`` with an empty
``data.type`` and a Lexical ``text``; edges ``{source, target, sourceHandle: source,
targetHandle: target, type: custom, data: {sourceType, targetType}}``). Stage → node type:

    question            start                  the pipeline's input
    security gate       list-operator          refuses a question naming a deny-listed entity
    query reasoning     template-transform     HyDE / RAG-Fusion / step-back / decomposition
    metadata pre-filter list-operator          narrowing only (router, automatic filters)
    BM25 / dense legs   knowledge-retrieval    ``dataset_ids: []`` — no dataset is named
    RRF fusion          variable-aggregator    joins the legs (``variables: []``)
    rerank, postprocess list-operator          reorder / trim a list (rerank: RESTRICTED exit)
    link exit           list-operator          RESTRICTED dropped, cited snippets built
    cited snippets      end                    ``outputs: []``
    index time, about   custom-note            the chunker; what this picture is

The ``version`` is :data:`DIFY_DSL_VERSION` (Dify's ``CURRENT_APP_DSL_VERSION`` when checked):
an importer of that DSL version or a newer minor imports it (newer ones with a version
warning); an older importer asks for confirmation first.
"""

from __future__ import annotations

import json
from typing import Any

from ragspine.workflow.view import PipelineView

__all__ = ["DESCRIPTION", "DIFY_DSL_VERSION", "DIFY_NODE_TYPES", "NOTE_NODE", "check_dify_graph", "dify_preview", "render"]

DIFY_DSL_VERSION = "0.6.0"
#: Dify's workflow node types (``BlockEnum`` / ``NodeType``) this projection may use.
DIFY_NODE_TYPES = frozenset({"start", "end", "knowledge-retrieval", "variable-aggregator", "list-operator", "template-transform"})
#: Dify's canvas annotation (a sticky note): not a workflow node, its ``data.type`` is empty.
NOTE_NODE = "custom-note"
DESCRIPTION = (
    "A picture of RAGSpine's configured retrieval pipeline for Dify's canvas: nodes, edges, labels and geometry only. "
    "It is not evidence and not executable: it holds no prompts, datasets, credentials or variables, and importing it runs nothing."
)
_WIDTH, _HEIGHT, _STEP_X, _ROW_Y, _LANE = 244, 90, 300, 300, 140
_EXTRA: dict[str, dict[str, Any]] = {"start": {"variables": []}, "end": {"outputs": []}, "knowledge-retrieval": {"dataset_ids": []},
          "variable-aggregator": {"variables": [], "output_type": "array[object]"}}


def _stages(view: PipelineView) -> list[list[tuple[str, str, str, str]]]:
    """Columns of ``(id, node type, title, description)``, left to right (a column of two: the legs)."""
    weights = "every leg 1" if view.fusion_weights == "none" else view.fusion_weights
    rerank = ("none: the fused order is kept" if view.reranker == "none" else
              f"{view.reranker}, depth {view.rerank_depth}{' (an LLM judge)' if view.reranker == 'listwise' else ''}")
    columns: list[list[tuple[str, str, str, str]]] = [[("question", "start", "Question", "the query and optional metadata filters")]]
    if view.security_gate:
        columns.append([("security_gate", "list-operator", "Security gate",
                         "deterministic deny list: a question naming a denied entity is refused before any retrieval")])
    if view.query_reasoning:
        columns.append([("query_reasoning", "template-transform", "Query reasoning",
                         ", ".join(view.query_reasoning) + " (generated texts are probes, never evidence)")])
    columns += [
        [("prefilter", "list-operator", "Metadata pre-filter",
          f"narrowing only, before scoring; automatic filters: {view.filter_extractor}; library router: {view.library_router}")],
        [("bm25_leg", "knowledge-retrieval", "BM25 leg", f"lexical index: {view.lexical_index}")]
        + ([("dense_leg", "knowledge-retrieval", "Dense leg", f"embedding: {view.embedding}; vector store: {view.vector_store}")]
           if view.dense else []),
        [("fusion", "variable-aggregator", "Z-score fusion", "each leg's scores z-scored, weighted by its best hit's z-score")]
        if weights == "zscore" else [("fusion", "variable-aggregator", "RRF fusion", f"k={view.rrf_k}; weights: {weights}")],
        [("rerank", "list-operator", "Rerank", f"{rerank}; RESTRICTED exit: restricted chunks are never sent to a reranker")],
        [("postprocess", "list-operator", "Postprocess", ", ".join(view.postprocessors) or "none")],
        [("link_exit", "list-operator", "Link exit",
          "RESTRICTED exit: restricted chunks (and their parent text) dropped; snippets keep text, doc_id, source_locator, chunk_id")],
        [("snippets", "end", "Cited snippets", "each with its source; never generated text")],
    ]
    return columns


def dify_preview(view: PipelineView) -> dict[str, Any]:
    """The Dify DSL document of ``view`` (see the module docstring)."""
    columns = _stages(view)
    nodes: list[dict[str, Any]] = []
    types: dict[str, str] = {}
    for col, stages in enumerate(columns):
        for row, (node_id, node_type, title, desc) in enumerate(stages):
            y = _ROW_Y + round((row - (len(stages) - 1) / 2) * _LANE)
            nodes.append(_node(node_id, node_type, title, desc, 80 + col * _STEP_X, y))
            types[node_id] = node_type
    edges = [_edge(a[0], b[0], types) for left, right in zip(columns, columns[1:], strict=False) for a in left for b in right]
    index_time = (f"Index time — chunker: {view.chunker} ({view.chunk_chars} characters, overlap {view.overlap_chars}); "
                  f"contextual header: {view.contextual}; chunk store: {view.chunk_store}.")
    nodes.append(_note("note_index", index_time, 80, 40, 560))
    nodes.append(_note("note_about", DESCRIPTION, 80 + 2 * _STEP_X + 300, 40, 560))
    return {
        "version": DIFY_DSL_VERSION,
        "kind": "app",
        "app": {"name": "RAGSpine retrieval pipeline (preview)", "mode": "workflow", "icon": "🔎", "icon_type": "emoji",
                "icon_background": "#E0F2FE", "description": DESCRIPTION, "use_icon_as_answer_icon": False},
        "dependencies": [],
        "workflow": {
            "conversation_variables": [], "environment_variables": [], "features": {},
            "graph": {"nodes": nodes, "edges": edges, "viewport": {"x": 0, "y": 0, "zoom": 0.7}},
        },
    }


def render(document: dict[str, Any], fmt: str = "json") -> str:
    """``document`` as JSON (default) or YAML text."""
    if fmt == "yaml":
        import yaml

        return str(yaml.safe_dump(document, allow_unicode=True, sort_keys=False))
    return json.dumps(document, ensure_ascii=False, indent=2) + "\n"


def check_dify_graph(document: dict[str, Any]) -> None:
    """``AssertionError`` unless ``document`` has the shape of the module docstring: unique node
    ids, known node types (or notes), every edge's endpoints and types matching its nodes."""
    assert document.get("kind") == "app" and isinstance(document.get("version"), str), "kind: app and a string version"
    assert document["app"]["mode"] == "workflow", "app.mode: workflow"
    graph = document["workflow"]["graph"]
    ids = [n["id"] for n in graph["nodes"]]
    assert len(ids) == len(set(ids)), "node ids are unique"
    kinds = {}
    for node in graph["nodes"]:
        assert {"x", "y"} <= set(node["position"]) and node["width"] > 0 and node["height"] > 0, f"{node['id']} has geometry"
        if node["type"] == NOTE_NODE:
            assert node["data"]["type"] == "" and json.loads(node["data"]["text"])["root"]["children"], f"{node['id']} is a note"
            continue
        assert node["type"] == "custom" and node["data"]["type"] in DIFY_NODE_TYPES, f"{node['id']}: {node['data']['type']}"
        assert node["data"]["title"], f"{node['id']} has a title"
        kinds[node["id"]] = node["data"]["type"]
    assert sum(1 for k in kinds.values() if k == "start") == 1, "one start node"
    for edge in graph["edges"]:
        assert edge["source"] in kinds and edge["target"] in kinds, f"edge {edge['id']} joins two workflow nodes"
        assert (edge["data"]["sourceType"], edge["data"]["targetType"]) == (kinds[edge["source"]], kinds[edge["target"]])
        assert (edge["sourceHandle"], edge["targetHandle"], edge["type"]) == ("source", "target", "custom")
    reached, frontier = {"question"}, ["question"]
    while frontier:
        here = frontier.pop()
        for edge in graph["edges"]:
            if edge["source"] == here and edge["target"] not in reached:
                reached.add(edge["target"])
                frontier.append(edge["target"])
    assert reached == set(kinds), f"every node is reached from the start: {sorted(set(kinds) - reached)}"


def _node(node_id: str, node_type: str, title: str, desc: str, x: float, y: float) -> dict[str, Any]:
    data = {"type": node_type, "title": title, "desc": desc, "selected": False, **_EXTRA.get(node_type, {})}
    position = {"x": x, "y": y}
    return {"id": node_id, "type": "custom", "data": data, "position": position, "positionAbsolute": dict(position),
            "width": _WIDTH, "height": _HEIGHT, "selected": False, "sourcePosition": "right", "targetPosition": "left"}


def _edge(source: str, target: str, types: dict[str, str]) -> dict[str, Any]:
    return {"id": f"{source}-source-{target}-target", "source": source, "sourceHandle": "source", "target": target,
            "targetHandle": "target", "type": "custom", "zIndex": 0,
            "data": {"sourceType": types[source], "targetType": types[target], "isInIteration": False, "isInLoop": False}}


def _note(node_id: str, text: str, x: float, y: float, width: int) -> dict[str, Any]:
    """A Dify canvas note: its ``text`` is a Lexical editor state (one paragraph)."""
    leaf = {"detail": 0, "format": 0, "mode": "normal", "style": "", "text": text, "type": "text", "version": 1}
    paragraph = {"children": [leaf], "direction": "ltr", "format": "", "indent": 0, "type": "paragraph", "version": 1, "textFormat": 0}
    state = {"root": {"children": [paragraph], "direction": "ltr", "format": "", "indent": 0, "type": "root", "version": 1}}
    data = {"type": "", "title": "", "desc": "", "text": json.dumps(state, ensure_ascii=False), "theme": "blue", "author": "RAGSpine",
            "showAuthor": True, "width": width, "height": 120, "selected": False}
    position = {"x": x, "y": y}
    return {"id": node_id, "type": NOTE_NODE, "data": data, "position": position, "positionAbsolute": dict(position),
            "width": width, "height": 120, "selected": False, "sourcePosition": "right", "targetPosition": "left", "zIndex": 0}
