"""A :class:`VisualSearch` held by a long-lived process (the service): it reads a library's index
again when ``ragspine visual build`` rewrites it, forgets it when it is removed, refuses files
that do not agree, and :func:`visual_search_for` builds one per stack (none with the seam off)."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np
import pytest

from ragspine.errors import ConfigError
from ragspine.retrieval.visual.index import PageEntry, VisualIndex
from ragspine.retrieval.visual.search import VisualSearch, gated_hints, visual_search_for


class _Embedder:
    """Queries are one 2-d token: "left" → (1, 0), "right" → (0, 1)."""

    def fingerprint(self) -> str:
        return "fake:1"

    def embed_pages(self, images):  # pragma: no cover - never built here
        raise AssertionError

    def embed_query(self, query: str) -> np.ndarray:
        return np.array([[1.0, 0.0] if query == "left" else [0.0, 1.0]], dtype=np.float32)


@dataclass
class _Store:
    root: str
    library_id: str

    def persist_dir(self, kind: str) -> str:
        return os.path.join(self.root, kind, self.library_id)

    def change_marker(self, seq: int) -> str | None:
        return None

    def iter_chunks(self, doc_id: str) -> list[SimpleNamespace]:  # every document active, none RESTRICTED
        return [SimpleNamespace(sensitivity=None)]


@dataclass
class _Catalog:
    root: str
    opened: list[str] = field(default_factory=list)

    def chunk_store(self, library_id: str) -> _Store:
        self.opened.append(library_id)
        return _Store(self.root, library_id)


def _save(catalog: _Catalog, library_id: str, pages: dict[str, list[float]]) -> str:
    """An index of one page per doc_id, its one patch the vector given."""
    entries = [PageEntry(doc, doc.title(), 1, f"/docs/{doc}.pdf") for doc in pages]
    patches = np.array(list(pages.values()), dtype=np.float16).reshape(len(pages), 2)
    index = VisualIndex(library_id, "fake:1", 120, entries, patches, np.arange(len(pages) + 1, dtype=np.int64))
    where = catalog.chunk_store(library_id).persist_dir("visual")
    index.save(where)
    os.utime(os.path.join(where, "index.json"), ns=(1, len(catalog.opened)))  # a new stamp each save, however fast
    return where


def test_a_held_search_reads_a_rebuilt_index_and_forgets_a_removed_one(tmp_path) -> None:
    catalog = _Catalog(str(tmp_path))
    search = VisualSearch(_Embedder(), catalog)  # type: ignore[arg-type]
    assert search.hints("left", ["lib"]) == [] and search.index("lib") is None
    where = _save(catalog, "lib", {"a": [1.0, 0.0]})
    assert [h.doc_id for h in search.hints("left", ["lib"])] == ["a"]
    _save(catalog, "lib", {"b": [1.0, 0.0], "c": [0.0, 1.0]})  # rebuilt while held
    assert [h.doc_id for h in search.hints("left", ["lib"])] == ["b"]
    assert [h.doc_id for h in search.hints("right", ["lib"])] == ["c"]
    held = search.index("lib")
    assert search.index("lib") is held  # unchanged files: the index held, not read again
    shutil.rmtree(where)  # the library deleted
    assert search.index("lib") is None and search.hints("left", ["lib"]) == []


def test_gated_hints_asks_the_gate_first_and_only_indexed_libraries(tmp_path) -> None:
    catalog = _Catalog(str(tmp_path))
    search = VisualSearch(_Embedder(), catalog)  # type: ignore[arg-type]

    class Gate:
        def __init__(self, allowed: bool) -> None:
            self.allowed, self.entity, self.checked = allowed, None, []

        def check(self, text: str):
            self.checked.append(text)
            return self

    refusing = Gate(False)
    assert gated_hints(search, "left", ["lib"], gate=refusing) is None and refusing.checked == ["left"]
    assert catalog.opened == []  # refused: no library's index was even looked for
    assert gated_hints(search, "left", ["lib"], gate=None) is None  # no index anywhere: no hint due
    _save(catalog, "lib", {"a": [1.0, 0.0]})
    assert [h.doc_id for h in gated_hints(search, "left", ["lib", "other"], gate=Gate(True)) or []] == ["a"]
    assert gated_hints(None, "left", ["lib"], gate=None) is None  # the seam off


def test_files_that_do_not_agree_are_refused_with_the_fix(tmp_path) -> None:
    catalog = _Catalog(str(tmp_path))
    where = _save(catalog, "lib", {"a": [1.0, 0.0], "b": [0.0, 1.0]})
    np.save(os.path.join(where, "offsets.npy"), np.arange(4, dtype=np.int64), allow_pickle=False)  # three pages' offsets
    with pytest.raises(ConfigError, match=r"do not agree.*ragspine visual build --library lib"):
        VisualIndex.load(where)


def test_one_visual_search_per_stack_and_none_when_off(tmp_path) -> None:
    from ragspine.config import load_settings
    from ragspine.stack import Stack

    with Stack(load_settings({"RAGSPINE_CHUNK_STORE": str(tmp_path / "a.db")})) as off:
        assert visual_search_for(off) is None
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tokenizers")
    pytest.importorskip("onnx")
    from tests.unit.visual.tiny_model import build_tiny_visual_model

    model = build_tiny_visual_model(tmp_path / "model")
    settings = load_settings({"RAGSPINE_CHUNK_STORE": str(tmp_path / "b.db"), "RAGSPINE_VISUAL_EMBEDDER": "onnx",
                              "RAGSPINE_VISUAL_MODEL": str(model)})
    with Stack(settings) as one, Stack(settings) as two:
        first = visual_search_for(one)
        assert first is not None and visual_search_for(one) is first and visual_search_for(two) is not first


def test_a_page_of_a_document_the_viewer_may_not_read_is_no_hint(tmp_path) -> None:
    """Skipped before the top-k cut: the viewer gets the hints of the library of what it may read."""
    from ragspine.security.principals import ACL, ANONYMOUS, Principal, Viewer

    class _AclStore(_Store):
        acls: dict = {}

        def acl_seq(self) -> int:
            return 1 if self.acls else 0

        def document_acls(self):
            return self.acl_seq(), dict(self.acls)

        def set_acls(self, acls, *, by):  # pragma: no cover - the protocol's shape
            raise AssertionError

        def acl_history(self, doc_id=None, *, limit=100):  # pragma: no cover
            return []

    class _AclCatalog(_Catalog):
        def chunk_store(self, library_id: str) -> _AclStore:
            self.opened.append(library_id)
            return _AclStore(self.root, library_id)

    catalog = _AclCatalog(str(tmp_path))
    search = VisualSearch(_Embedder(), catalog)  # type: ignore[arg-type]
    _save(catalog, "lib", {"a": [1.0, 0.0], "b": [0.9, 0.1], "c": [0.0, 1.0]})
    assert [h.doc_id for h in search.hints("left", ["lib"], top_k=1)] == ["a"]
    _AclStore.acls = {"a": ACL.parse("group:board")}
    try:
        board, hr = Viewer(Principal.of("bob", ["board"])), Viewer(Principal.of("ann", ["hr"]))
        assert [h.doc_id for h in search.hints("left", ["lib"], top_k=1, viewer=board)] == ["a"]
        assert [h.doc_id for h in search.hints("left", ["lib"], top_k=1, viewer=hr)] == ["b"]  # a is skipped, b takes its place
        assert [h.doc_id for h in search.hints("left", ["lib"], top_k=1)] == ["b"]  # default: a caller who is no principal
        assert [h.doc_id for h in gated_hints(search, "left", ["lib"], gate=None, top_k=1, viewer=ANONYMOUS) or []] == ["b"]
    finally:
        _AclStore.acls = {}
