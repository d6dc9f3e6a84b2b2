"""Document ACLs in the in-process lexical index: a principal's BM25 equals ``bm25_scores`` over
exactly the chunks it may read — the library L' that holds only those — bit for bit, over a
seeded random history (ingests with ACLs, ACL changes without a re-ingest, re-ingests,
retirements, merges, save and reopen), in both kernels, with the thresholds shrunk so a few
thousand chunks cross each of them (``RAGSPINE_TEST_ACL_CHUNKS`` grows it at real thresholds).
A leaky double — statistics over every row, scoring only the visible — must fail the same check."""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

from ragspine.retrieval.chunking.chunk_store import DocumentChunks
from ragspine.retrieval.chunking.chunking import chunk_document
from ragspine.retrieval.filtering.filters import FilterCondition, MetadataFilter
from ragspine.retrieval.lexical import index as index_module
from ragspine.retrieval.lexical.bm25 import bm25_scores
from ragspine.retrieval.lexical.index import InMemoryLexicalIndex
from ragspine.retrieval.lexical.segments import StringTable
from ragspine.retrieval.lexical.tokenizer import tokenize
from ragspine.retrieval.sensitivity import is_restricted
from ragspine.security.principals import ACL, ANONYMOUS, EVERYTHING, OPEN, Principal, Viewer
from ragspine.stores.sqlite.chunk_store import SQLiteChunkStore
from ragspine.testing.lexical_history import SyntheticText

SLOW_CHUNKS = int(os.environ.get("RAGSPINE_TEST_ACL_CHUNKS") or 0)
GROUPS = ["hr", "board", "sales", "legal", "eng"]
VIEWERS = [ANONYMOUS, Viewer(Principal.of("u1", ["hr"])), Viewer(Principal.of("u2", ["board", "sales", "eng"])),
           Viewer(Principal.of("u3")), Viewer(Principal.of("u4", GROUPS))]


def _acl(rng: random.Random) -> ACL:
    roll = rng.random()
    if roll < 0.4:
        return OPEN
    allow = [f"group:{g}" for g in rng.sample(GROUPS, rng.randint(1, 2))] + (["user:u3"] if rng.random() < 0.2 else [])
    deny = ["user:u4"] if rng.random() < 0.15 else []
    return ACL.parse({"allow": allow, "deny": deny})


class History:
    def __init__(self, path: str, kernel: str, seed: int) -> None:
        self.rng = random.Random(seed)
        self.text = SyntheticText(seed, ascii_words=3_000, cjk_words=500)
        self.path, self.kernel = path, kernel
        self.store = SQLiteChunkStore(path, library_id="acl")
        self.index = InMemoryLexicalIndex(self.store, kernel=kernel)
        self.docs: list[str] = []
        self.compared = 0
        self._tokens: dict[tuple[str, int], list[str]] = {}
        self._checks = 0

    def reopen(self) -> None:
        self.store.close()
        self.store = SQLiteChunkStore(self.path, library_id="acl")
        self.index = InMemoryLexicalIndex(self.store, kernel=self.kernel)

    def doc(self, doc_id: str) -> list:
        rng = self.rng
        text = "\n\n".join(self.text.paragraph(rng) for _ in range(rng.randint(1, 4)))
        sensitivity = "RESTRICTED" if rng.random() < 0.03 else "INTERNAL"
        return chunk_document(text, doc_id, title=doc_id, metadata={"topic": rng.choice(["a", "b"])}, sensitivity=sensitivity,
                              max_chars=240, overlap_chars=40)

    def write(self, n: int) -> None:
        batch, taken = [], set()
        for _ in range(n):
            if self.docs and self.rng.random() < 0.2:
                doc_id = self.rng.choice(self.docs)
                if doc_id in taken:
                    continue
                chunks = [] if self.rng.random() < 0.2 else self.doc(doc_id)
            else:
                doc_id = f"d{len(self.docs):06d}"
                self.docs.append(doc_id)
                chunks = self.doc(doc_id)
            taken.add(doc_id)
            batch.append(DocumentChunks(doc_id, chunks, "", _acl(self.rng) if self.rng.random() < 0.8 else None))
        self.store.replace_many(batch)

    def change_acls(self, n: int) -> None:
        self.store.set_acls({d: _acl(self.rng) for d in self.rng.sample(self.docs, min(n, len(self.docs)))}, by="test")

    def queries(self, n: int) -> list[list[str]]:
        out = []
        while len(out) < n:
            kind = self.rng.randrange(3)
            text = "".join(self.text.cjk_words(2)) if kind == 0 else " ".join(self.text.ascii(self.rng.randint(1, 4)))
            if tokenize(text):
                out.append(tokenize(text))
        return out

    def visible(self, viewer: Viewer) -> list:
        """The chunks of the library L' that holds only what ``viewer`` may read."""
        _, acls = self.store.document_acls()
        return [c for c in self.store.iter_chunks() if not is_restricted(c.sensitivity) and viewer.sees(acls.get(c.doc_id, OPEN))]

    def reference(self, chunks: list, query: list[str], where: MetadataFilter | None, top_k: int | None) -> list:
        """BM25 of ``chunks`` (``bm25_scores`` over L')."""
        docs = [self._tokens.get((c.chunk_id, c.version)) or self._tokens.setdefault((c.chunk_id, c.version), tokenize(c.text))
                for c in chunks]
        scores = bm25_scores(query, docs)
        ranked = sorted(((c.chunk_id, s, c.version) for c, s in zip(chunks, scores, strict=True)
                         if s > 0 and (where is None or where.matches(c.metadata))), key=lambda t: (-t[1], t[0]))
        return ranked if top_k is None else ranked[:top_k]

    def check(self, leaky: bool = False) -> None:
        self.index.refresh()
        self._checks += 1
        for n, viewer in enumerate(VIEWERS):
            if not leaky and (n + self._checks) % 2:
                continue  # every other viewer at each check: each viewer at every second check
            chunks = self.visible(viewer)
            view = self.index.view(viewer)
            if leaky and view is not None:  # the double: the viewer's rows, every row's statistics
                everyone = self.index.view(None) or index_module.RowView(
                    view.epoch, view.snapshot, view.viewer, view.live, int(np.count_nonzero(self.index._active)),
                    float(self.index._lengths[self.index._active].sum()), self.index._norms(), {})
                view = everyone._replace(live=view.live) if everyone is not None else view
            for i, query in enumerate(self.queries(3)):
                top_k = (None, 10, 1)[i % 3]
                where = MetadataFilter((FilterCondition("topic", "eq", "a"),)) if i == 2 else None
                got = [(h.chunk_id, h.score, h.version) for h in self.index.search(query, top_k=top_k, metadata_filter=where, view=view)]
                want = self.reference(chunks, query, where, top_k)
                assert got == want, (viewer, query, top_k, got[:3], want[:3])
                self.compared += 1


@pytest.fixture
def small_thresholds(monkeypatch) -> None:
    monkeypatch.setattr(InMemoryLexicalIndex, "prune_from", 300)
    monkeypatch.setattr(InMemoryLexicalIndex, "merge_min_rows", 200)
    monkeypatch.setattr(index_module, "_ADD_BATCH", 700)
    monkeypatch.setattr(index_module, "_MAX_SEGMENTS", 4)
    monkeypatch.setattr(index_module, "_TERMS_CACHE", 4_000)


def _run(h: History, chunks: int, batch: int, *, every_round: bool = True) -> None:
    """Grow the library to ``chunks`` in batches of ``batch`` documents, with single writes, ACL
    changes, saves and reopens between them; check after each step (``every_round``), else at
    the milestones only (full size, after an ACL change, after a reopen: the slow run)."""
    h.write(batch)
    h.check()
    rounds = 0
    while h.store.count() < chunks:
        h.write(batch)
        h.index.refresh()  # the in-process index follows each batch (merges on the way)
        if every_round:
            h.check()
        h.change_acls(max(5, batch // 4))  # no re-ingest: the next search sees it
        if every_round:
            h.check()  # the rows as they were: only the changed documents' rows are placed again
        h.write(1)
        if every_round:
            h.check()
        rounds += 1
        if rounds % 3 == 0:
            h.index.save()
            h.reopen()  # the saved index, loaded and checked against the store
            if every_round:
                h.check()
    h.check()  # at full size
    h.change_acls(len(h.docs) // 10)
    h.check()
    h.index.save()
    h.reopen()
    h.check()


@pytest.mark.parametrize("kernel", ["numpy", "numba"])
def test_a_principals_bm25_is_the_visible_librarys_bit_for_bit(tmp_path, small_thresholds, kernel) -> None:
    if kernel == "numba":
        pytest.importorskip("numba")
    h = History(str(tmp_path / "acl.db"), kernel, seed=29)
    _run(h, 2_000, 80)
    assert h.compared >= 300
    assert h.store.acl_seq() > 0 and len(h.store.document_acls()[1]) > 50


def test_the_leaky_double_fails_the_same_check(tmp_path, small_thresholds) -> None:
    h = History(str(tmp_path / "acl.db"), "numpy", seed=30)
    h.write(80)
    with pytest.raises(AssertionError):
        h.check(leaky=True)


def test_no_acl_means_no_view_and_the_answer_of_today(tmp_path) -> None:
    h = History(str(tmp_path / "acl.db"), "numpy", seed=31)
    h.store.replace_many([DocumentChunks(f"o{i}", h.doc(f"o{i}")) for i in range(30)])
    h.index.refresh()
    assert all(h.index.view(v) is None for v in VIEWERS)  # every search runs the path it ran before ACLs
    assert h.index.view(EVERYTHING) is None and h.index.view(None) is None


@pytest.mark.slow
@pytest.mark.scale
@pytest.mark.skipif(not SLOW_CHUNKS, reason="the slow run: set RAGSPINE_TEST_ACL_CHUNKS=100000 (.ci/run does)")
def test_at_scale_with_real_thresholds(tmp_path) -> None:
    h = History(str(tmp_path / "acl.db"), "auto", seed=32)
    _run(h, SLOW_CHUNKS, max(200, SLOW_CHUNKS // 25), every_round=False)
    assert h.compared >= 20 and h.store.count() >= SLOW_CHUNKS


def _live_chunks(index: InMemoryLexicalIndex, viewer: Viewer) -> tuple[int, float, list[str]] | None:
    view = index.view(viewer)
    return None if view is None else (view.n, view.total_len, sorted(index.chunk_ids(np.flatnonzero(view.live))))


def test_an_acl_change_is_read_as_the_changes_since_and_gives_a_fresh_indexs_views(
    tmp_path: Path, small_thresholds: None, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """After the first snapshot, an ACL change reaches the index as ``acl_changes_since`` alone
    (``document_acls`` is never read again): a few documents (their rows placed again), a class
    new to the library, a class no document keeps, a change on most documents (every row placed
    again) and several changes between two searches — each time every viewer's view holds the
    rows, and the statistics, of a fresh index's, and its BM25 equals the reference's."""
    h = History(str(tmp_path / "acl.db"), "numpy", seed=33)
    for _ in range(4):
        h.write(80)
        h.index.refresh()
    h.check()
    assert any(_live_chunks(h.index, v) is not None for v in VIEWERS)  # the rows placed in their classes
    reads: list[int] = []
    real = SQLiteChunkStore.document_acls
    rng = random.Random(33)

    def counted(store: SQLiteChunkStore) -> tuple[int, dict[str, ACL]]:
        reads.append(1)
        return real(store)

    moved: list[bool] = []  # per placement of the rows: only the changed documents' (True) or every row
    real_moved = InMemoryLexicalIndex._moved_classes

    def placed(index: InMemoryLexicalIndex, *args: Any) -> Any:
        moved.append(True)
        return real_moved(index, *args)

    newcomer = ACL.parse({"allow": ["group:newcomers"]})
    _, acls = h.store.document_acls()
    one_class = next(iter(acls.values()))
    def several() -> None:  # three changes between two searches
        h.change_acls(3)
        h.change_acls(4)
        h.store.set_acls({h.docs[0]: newcomer}, by="test")

    changes: list[Callable[[], object]] = [
        lambda: h.change_acls(5),
        lambda: h.store.set_acls({d: newcomer for d in rng.sample(h.docs, 7)}, by="test"),
        lambda: h.store.set_acls({d: OPEN for d, acl in h.store.document_acls()[1].items() if acl == one_class}, by="test"),
        several,
        lambda: h.change_acls(len(h.docs) // 2),
        lambda: h.store.set_acls({d: OPEN for d in h.docs}, by="test"),
        lambda: h.change_acls(20),
    ]
    for change in changes:
        change()
        with monkeypatch.context() as m:
            m.setattr(SQLiteChunkStore, "document_acls", counted)
            m.setattr(InMemoryLexicalIndex, "_moved_classes", placed)
            h.index.refresh()
            got = [_live_chunks(h.index, v) for v in VIEWERS]
        moved.append(False)
        assert h.index.acl_snapshot().acls == h.store.document_acls()[1]
        fresh = InMemoryLexicalIndex(h.store, kernel="numpy", persist=False)
        fresh.refresh()
        assert got == [_live_chunks(fresh, v) for v in VIEWERS]
        h.check()
        if change is changes[2]:
            assert one_class not in h.index._row_classes(h.index.acl_snapshot())[0]  # no document keeps it
    assert reads == []
    # the small changes moved only their documents' rows; half or all of the documents, every row
    assert moved == [True, False] * 4 + [False] * 2 + [True, False], moved


def test_rows_a_write_adds_are_placed_alone_and_give_a_fresh_indexs_views(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows written after the rows were placed in their ACL classes are placed alone — with no
    ACL change, with the write's own ACLs (new documents, re-ingests that change an ACL), with an
    ACL change beside it, and after retirements — never every row again until a merge numbers
    the rows anew; each time every viewer's view holds a fresh index's rows and statistics, and
    its BM25 equals the reference's."""
    h = History(str(tmp_path / "acl.db"), "numpy", seed=36)
    h.write(120)
    h.check()
    placed: list[str] = []
    for name in ("_placed_classes", "_appended_classes", "_moved_classes"):
        real = getattr(InMemoryLexicalIndex, name)

        def spy(index: InMemoryLexicalIndex, *args: Any, _real: Any = real, _name: str = name) -> Any:
            placed.append(_name)
            return _real(index, *args)

        monkeypatch.setattr(InMemoryLexicalIndex, name, spy)

    def fresh_views() -> list[Any]:
        fresh = InMemoryLexicalIndex(h.store, kernel="numpy", persist=False)
        fresh.refresh()
        return [_live_chunks(fresh, v) for v in VIEWERS]

    def unchanged_acls() -> None:  # new documents without an ACL, re-ingests keeping theirs
        keep = [DocumentChunks(d, h.doc(d), "", None) for d in h.rng.sample(h.docs, 5)]
        new = [f"n{len(h.docs) + i:06d}" for i in range(4)]
        h.docs += new
        h.store.replace_many(keep + [DocumentChunks(d, h.doc(d), "", None) for d in new])

    def beside() -> None:
        h.write(10)
        h.change_acls(3)

    writes: list[Callable[[], object]] = [unchanged_acls, lambda: h.write(12), beside, lambda: h.write(8), unchanged_acls]
    for write in writes:
        placed.clear()
        write()
        h.index.refresh()
        got = [_live_chunks(h.index, v) for v in VIEWERS]
        assert "_placed_classes" not in placed and "_appended_classes" in placed, placed
        assert got == fresh_views()
        h.check()
    assert len(h.index._segments) > 0  # no merge came between: the rows kept their numbers


def test_rows_are_matched_to_document_ids_by_their_bytes() -> None:
    """What finds a changed document's rows among those sharing its id's hash: equal ids only
    (lengths, multi-byte and surrogate-free UTF-8, prefixes)."""
    rng = random.Random(34)
    words = ["d1", "d10", "dé", "d\U0001F600x", "abc", "ab", "abd", "x" * 40]
    table = StringTable.from_strings([rng.choice(words) for _ in range(500)])
    wanted = [rng.choice(words) for _ in range(50)]
    rows = np.asarray([rng.randrange(500) for _ in range(2000)], dtype=np.int64)
    of = np.asarray([rng.randrange(50) for _ in range(2000)], dtype=np.int64)
    got = index_module._same_strings(table, rows, wanted, of)
    assert got.tolist() == [table[int(r)] == wanted[int(o)] for r, o in zip(rows, of, strict=True)]
    assert index_module._same_strings(table, rows[:0], wanted, of[:0]).tolist() == []
