"""Pure conversion between RAPTOR trees and table rows (both stores use it; no I/O).

A node's vector is stored as little-endian float32 bytes; its children and leaves as JSON
lists (a leaf: ``[chunk_id, doc_id, version, source_locator]``); the tree's options as a JSON
object. The column order is :data:`NODE_COLUMNS` / :data:`TREE_COLUMNS`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ragspine.retrieval.raptor.base import Leaf, SynthesisNode, TreeInfo

if TYPE_CHECKING:
    import numpy.typing as npt

__all__ = ["NODE_COLUMNS", "TREE_COLUMNS", "info_row", "node_row", "row_to_info", "row_to_node"]

TREE_COLUMNS = ("library_id", "tree_id", "change_seq", "model", "params", "chunks", "nodes", "levels", "built_at", "build_seconds")
NODE_COLUMNS = ("library_id", "node_id", "level", "ordinal", "text", "children", "leaves", "vector", "written_by")


def vector_bytes(vector: npt.ArrayLike) -> bytes:
    return np.asarray(vector, dtype="<f4").tobytes()


def vector_from(blob: bytes | memoryview) -> np.ndarray:
    return np.frombuffer(bytes(blob), dtype="<f4").astype(np.float32)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def _loaded(value: Any) -> Any:
    """A JSON column as read: text (SQLite) or already decoded (PostgreSQL's JSONB)."""
    return json.loads(value) if isinstance(value, (str, bytes)) else value


def node_row(library_id: str, ordinal: int, node: SynthesisNode, *, json_as_text: bool = True) -> dict[str, Any]:
    leaves = [[leaf.chunk_id, leaf.doc_id, leaf.version, leaf.source_locator] for leaf in node.leaves]
    children = list(node.children)
    return {
        "library_id": library_id, "node_id": node.node_id, "level": node.level, "ordinal": ordinal, "text": node.text,
        "children": _json(children) if json_as_text else children, "leaves": _json(leaves) if json_as_text else leaves,
        "vector": vector_bytes(node.vector), "written_by": node.written_by,
    }


def row_to_node(row: Sequence[Any]) -> SynthesisNode:
    """A node from a row of :data:`NODE_COLUMNS`."""
    values = dict(zip(NODE_COLUMNS, row, strict=False))
    leaves = tuple(Leaf(str(c), str(d), int(v), str(loc)) for c, d, v, loc in _loaded(values["leaves"]))
    return SynthesisNode(
        node_id=values["node_id"], level=int(values["level"]), text=values["text"],
        children=tuple(str(c) for c in _loaded(values["children"])), leaves=leaves,
        vector=vector_from(values["vector"]), written_by=values["written_by"],
    )


def info_row(info: TreeInfo, *, json_as_text: bool = True) -> dict[str, Any]:
    params: Mapping[str, Any] = dict(info.params)
    return {
        "library_id": info.library_id, "tree_id": info.tree_id, "change_seq": info.change_seq, "model": info.model,
        "params": _json(params) if json_as_text else params, "chunks": info.chunks, "nodes": info.nodes,
        "levels": info.levels, "built_at": info.built_at, "build_seconds": float(info.build_seconds),
    }


def row_to_info(row: Sequence[Any]) -> TreeInfo:
    values = dict(zip(TREE_COLUMNS, row, strict=False))
    return TreeInfo(
        library_id=values["library_id"], tree_id=values["tree_id"], change_seq=int(values["change_seq"]), model=values["model"],
        params=dict(_loaded(values["params"])), chunks=int(values["chunks"]), nodes=int(values["nodes"]),
        levels=int(values["levels"]), built_at=str(values["built_at"]), build_seconds=float(values["build_seconds"]),
    )
