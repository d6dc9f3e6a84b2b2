"""``InMemoryLexicalIndex``: the in-process ``LexicalIndex`` (the role is in ``lexical/base.py``).

It answers BM25 queries over one library's active chunks without re-tokenizing them per
query, following its chunk store through the store's change log (``ChangeLog``:
``change_seq`` / ``changes_since``).

It keeps a log-structured inverted index (``segments.py``): a
merged *base* segment — CSC postings, the rows' chunk ids, doc ids, lengths, versions and
dictionary-encoded metadata columns — plus small posting segments of the rows added since, and
an ``active`` mask. Scoring one token is a slice of each segment; retiring a chunk flips its
mask bit; a metadata filter is a boolean mask over rows computed from the columns. When the
added or the dead rows grow past a fraction of the base, everything is merged into a new base
(no re-tokenizing).

On a store that offers a directory (``PersistentStore``: a SQLite file) the base is saved next to the database (``<db>.lexical/<library hash>/``)
and memory-mapped by the next process, which then only replays the store's changes since the
saved sequence: a million-chunk library opens in a second instead of re-tokenizing it. A saved
segment records the store change it reflects (``change_marker``); one that does not belong to
the database's history, or of an older format, is ignored and rebuilt.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import Any, NamedTuple

import numpy as np

from ragspine.deadline import check as check_deadline
from ragspine.errors import ConfigError
from ragspine.retrieval.chunking.chunk_store import (
    ChunkStore,
    DocumentAclChanges,
    DocumentAcls,
    FollowableStore,
    PersistentStore,
    StoredChunk,
    StreamingReads,
)
from ragspine.retrieval.filtering.filters import MetadataFilter
from ragspine.retrieval.lexical import verify
from ragspine.retrieval.lexical.base import LexicalHit, LexicalIndex, VersionedIndex, default_index_text
from ragspine.retrieval.lexical.bm25 import DEFAULT_BM25_B, DEFAULT_BM25_K1, bm25_idf
from ragspine.retrieval.lexical.segments import (
    Postings,
    Segment,
    SegmentError,
    StringTable,
    load_segment,
    merge_postings,
    read_segment,
    save_segment,
    stable_hashes,
    version_digest,
)
from ragspine.retrieval.lexical.tokenizer import tokenize
from ragspine.retrieval.sensitivity import is_restricted
from ragspine.security.principals import ACL, OPEN, Viewer

log = logging.getLogger(__name__)


__all__ = ["BuildStopped", "InMemoryLexicalIndex", "LexicalHit", "LexicalIndex", "VersionedIndex", "default_index_text"]


class BuildStopped(Exception):
    """A rebuild from the store given up because :meth:`InMemoryLexicalIndex.stop` was called
    (the index stays unbuilt)."""


class InMemoryLexicalIndex:
    """In-process BM25 index following a :class:`ChunkStore` (see the module docstring)."""

    #: Active rows from which a top-k query is pruned (the compiled kernel, else numpy MaxScore);
    #: below, a full scoring of the cached per-term arrays is faster (SciFact's 5,183: 2x).
    prune_from = 50_000
    #: Rows added or retired since the base before a merge is considered (with ``merge_fraction``).
    merge_min_rows = 1000

    def __init__(
        self,
        store: FollowableStore,
        *,
        k1: float = DEFAULT_BM25_K1,
        b: float = DEFAULT_BM25_B,
        tokenizer: Callable[[str], list[str]] = tokenize,
        index_text: Callable[[StoredChunk], str] = default_index_text,
        merge_fraction: float = 0.25,
        persist: bool | str = True,
        include_restricted: bool = False,
        kernel: str = "auto",
    ) -> None:
        self.store = store
        self.k1 = k1
        self.b = b
        self._tokenize = tokenizer
        self._index_text = index_text
        self._merge_fraction = merge_fraction
        self.include_restricted = include_restricted
        self.kernel = _kernel_choice(kernel)
        self._persist_dir = self._where(persist)
        self._lock = threading.RLock()  # the index state, as searches read it
        self._write_lock = threading.RLock()  # serializes what changes it (refresh, merge)
        self._seq: int | None = None
        self._top_k_fn: Any = None  # the compiled kernel, once loaded
        self._unverified = False  # a base loaded from disk, not yet compared with the store
        self._origin: str | None = None
        self._stop = threading.Event()  # set by stop(): a rebuild gives up at its next batch
        self._acls = AclSnapshot(-1, {})  # the store's document ACLs as last read (-1: never)
        self._acl_delta: _AclDelta | None = None  # what changed between two snapshots (the row classes follow it)
        self._epoch = 0  # counts changes of the rows: a view of another epoch is computed again
        self._reset(Segment.empty())

    @classmethod
    def from_config(
        cls, store: ChunkStore, settings: object = None, *, index_text: Callable[[StoredChunk], str] = default_index_text,
    ) -> InMemoryLexicalIndex:
        """``RAGSPINE_LEXICAL_INDEX=memory`` (the registry's factory): needs a store with a change log."""
        if not isinstance(store, FollowableStore):
            raise ConfigError(f"the in-process lexical index follows a store's change log, and {type(store).__name__} has none")
        return cls(store, kernel=getattr(settings, "lexical_kernel", "auto"), index_text=index_text)

    def _where(self, persist: bool | str) -> str | None:
        """Where the base segment is saved: only for the default tokenizer and index text (the
        files record tokens), on a store that offers a directory (a SQLite file)."""
        variant = getattr(self._index_text, "persist_key", None)  # "" for the chunk text; None: not saved
        if not persist or self._tokenize is not tokenize or variant is None or self.include_restricted:
            return None
        if isinstance(persist, str):
            where: str | None = persist
        else:
            where = self.store.persist_dir("lexical") if isinstance(self.store, PersistentStore) else None
        return os.path.join(where, variant) if where and variant else where

    def _reset(self, base: Segment) -> None:
        self._base = base
        nb = base.n_rows
        # token -> term id for every token ingested since the base: new ones (id >= len(base.vocab))
        # and base tokens met again (their base id); only refresh writes it
        self._vocab: dict[str, int] = {}
        self._n_new = 0  # tokens not in the base vocabulary: ids len(base.vocab) + 0, 1, 2, ...
        self._segments: list[Postings] = []  # postings of the rows added since the base
        self._d_chunk_ids: list[str] = []
        self._d_docs: list[str] = []
        self._d_meta: list[Mapping[str, Any]] = []
        self._d_row_of: dict[str, int] = {}  # active chunk_id -> row, rows added since the base
        self._d_rows_by_doc: dict[str, list[int]] = {}
        self._lengths = np.asarray(base.lengths, dtype=np.float64)
        self._versions = np.asarray(base.versions, dtype=np.int32)
        self._active = np.ones(nb, dtype=bool)
        self._n_active = nb
        self._total_len = float(self._lengths.sum())
        self._dead_rows = 0
        self._mask_cache: dict[Any, np.ndarray] = {}
        self._tid_cache: dict[str, int | None] = {}
        # the kernel's block statistics of base tokens (they hold for the base's lifetime):
        # tid -> first block in _blk_tf / _blk_dl
        self._blocks: dict[int, int] = {}
        self._blk_tf = np.zeros(0)
        self._blk_dl = np.zeros(0)
        self._blk_used = 0
        # a new base numbers the rows anew: every row is placed in its ACL class again
        self._acl_rows: tuple[list[ACL], np.ndarray] | None = None  # the ACL classes and each row's
        self._acl_rows_seq = -1  # the ACL snapshot they were placed under
        self._acl_class_docs: list[int] = []  # how many of that snapshot's documents hold each class
        self._changed()

    def _changed(self) -> None:
        """Forget what depends on the rows' liveness or statistics. The rows' ACL classes stay:
        rows are only added (placed at the next view) or retired (masked by ``_active``) until
        the next base."""
        self._epoch += 1
        self._views: OrderedDict[tuple[int, frozenset[ACL]], RowView] = OrderedDict()
        self._hidden_for: dict[tuple[Viewer, int], frozenset[ACL]] = {}  # (viewer, ACL seq) -> the ACLs hiding rows from it
        self._norm: np.ndarray | None = None
        self._terms: OrderedDict[int, tuple[np.ndarray, np.ndarray]] = OrderedDict()  # tid -> (rows, terms)
        self._terms_size = 0
        self._kernel_tokens: dict[int, _KernelToken | None] = {}

    # -- following the store --------------------------------------------------------------
    def refresh(self) -> None:
        """Catch up with the store. Writers of the index state are serialized by a second lock,
        and a merge builds its new base without holding the lock searches take: searches (and
        refreshes that find nothing new) go on during a merge; only a refresh with changes to
        apply waits for it. A base loaded from disk is checked against the store before the
        first refresh returns (``verify.py``); a store that changed during the check has it
        repeated at the next refresh."""
        if self._seq is not None and not self._unverified and self.store.change_seq() == self._seq:
            self._sync_acls()
            return
        with self._write_lock:
            with self._lock:
                try:
                    if not self._refresh_rows():
                        return
                finally:
                    # read after the rows and installed with them, under the searches' lock: a
                    # document written with its ACL (one transaction) never shows without it
                    self._sync_acls()
            self._maybe_merge()

    def _refresh_rows(self) -> bool:
        """Catch the rows up (under both locks); ``False`` when that was a rebuild or a check that
        rebuilt (nothing left to merge)."""
        seq = self.store.change_seq()
        if self._seq is None and not self._load(seq):
            self._rebuild_from_store(seq)
            return False
        assert self._seq is not None  # rebuilt, or the saved base adopted
        if seq != self._seq and not self._catch_up():
            return False
        return not (self._unverified and not self._check_loaded())

    def _sync_acls(self) -> None:
        """Bring the document ACLs up to the store's when they changed (one small read otherwise):
        the changes since this snapshot applied to a copy of it, where the store records them
        (:class:`DocumentAclChanges`) and can show the record complete, else every document's ACL
        read again. Snapshots are never changed in place (views and searches hold them)."""
        store = self.store
        if not isinstance(store, DocumentAcls):
            return
        for _ in range(3):  # another refresh installing a snapshot meanwhile: read again from it
            old = self._acls
            if store.acl_seq() == old.seq:
                return
            changes = store.acl_changes_since(old.seq) if isinstance(store, DocumentAclChanges) else None
            if changes is None:
                break
            seq, changed = changes
            acls = dict(old.acls)
            before = {doc_id: acls.pop(doc_id, OPEN) for doc_id in changed}  # each one's ACL as of ``old``
            acls.update((doc_id, acl) for doc_id, acl in changed.items() if not acl.is_open)
            with self._lock:
                if self._acls is old:
                    self._acls = AclSnapshot(seq, acls)
                    self._acl_delta = self._next_delta(old.seq, seq, before, max(len(acls), len(old.acls)))
                    return
        seq, acls = store.document_acls()
        with self._lock:
            self._acls = AclSnapshot(seq, acls)
            self._acl_delta = None

    def _next_delta(self, since: int, seq: int, before: dict[str, ACL], n_docs: int) -> _AclDelta | None:
        """What the row classes placed under some snapshot need to reach ``seq``: the changes from
        ``since`` joined to the pending ones when the rows were placed before those (a document's
        ACL as of the earlier snapshot wins); ``None`` past 1/_ACL_DELTA_SHARE of the documents
        (placing every row again is about as cheap then)."""
        pending = self._acl_delta
        if pending is not None and pending.seq == since and self._acl_rows_seq != since:
            before.update(pending.before)
            since = pending.since
        return _AclDelta(since, seq, before) if len(before) <= max(_ACL_DELTA_MIN, n_docs // _ACL_DELTA_SHARE) else None

    def acl_snapshot(self) -> AclSnapshot:
        """The document ACLs this index enforces now (one read of the store: every leg and exit of
        a search uses the same snapshot, so an ACL change while it runs is seen whole or not at all)."""
        return self._acls

    def view(self, viewer: Viewer | None, snapshot: AclSnapshot | None = None) -> RowView | None:
        """The rows ``viewer`` may read under ``snapshot`` (this index's current one by default)
        and BM25's statistics over them — ``None`` when that is every active row (searches then
        run exactly as without ACLs). ``viewer`` ``None``: no ACL applies (the library's own work)."""
        if viewer is None or viewer.everything:
            return None
        snapshot = snapshot or self._acls
        with self._lock:
            classes, row_class = self._row_classes(snapshot)
            known = self._hidden_for.get((viewer, snapshot.seq))
            if known is None:  # which ACLs hide their documents from this viewer, once per viewer and snapshot
                known = self._hidden_for[(viewer, snapshot.seq)] = frozenset(acl for acl in classes if not viewer.sees(acl))
                while len(self._hidden_for) > _VIEWERS_CACHED:
                    self._hidden_for.pop(next(iter(self._hidden_for)))
            hidden = known
            if not hidden:
                return None
            key = (snapshot.seq, hidden)
            found = self._views.get(key)
            if found is not None:
                self._views.move_to_end(key)
                return found
            readable = np.ones(len(classes) + 1, dtype=bool)  # the last entry: rows without an ACL
            readable[: len(classes)] = [acl not in hidden for acl in classes]
            live = self._active & readable[row_class]
            n = int(np.count_nonzero(live))
            total = float(self._lengths[live].sum())
            avgdl = (total / n or 1.0) if n else 1.0  # as _avgdl computes it over the active rows
            view = RowView(self._epoch, snapshot, viewer, live, n, total, self.k1 * (1.0 - self.b + self.b * self._lengths / avgdl), {})
            self._views[key] = view
            while len(self._views) > _VIEWS_CACHED:
                self._views.popitem(last=False)
            return view

    def _row_classes(self, snapshot: AclSnapshot) -> tuple[list[ACL], np.ndarray]:
        """``(classes, row_class)``: the distinct ACLs of ``snapshot`` and, per row, the index of its
        document's (``len(classes)``: none) — kept until the next base (a merge numbers rows anew).
        Rows added since they were placed are placed alone (:meth:`_appended_classes`), and an ACL
        change on a few documents moves only their rows (:meth:`_moved_classes`); otherwise every
        row is placed (:meth:`_placed_classes`).

        Vectorized: each row's document id hash (the base segment keeps them; the rows added
        since are hashed here) is looked up among the ACL'd documents' hashes, and every run of
        rows with one matching hash has its document id compared as text once, so a hash that
        two ids share never gives a row another document's ACL."""
        held, delta = self._acl_rows, self._acl_delta
        follows = delta is not None and (delta.since, delta.seq) == (self._acl_rows_seq, snapshot.seq)
        if held is not None and len(held[1]) != len(self._lengths):  # rows added since they were placed
            if self._acl_rows_seq == snapshot.seq or follows:  # placed alone (and moved below with the others)
                self._acl_rows = held = self._appended_classes(snapshot, held)
            else:
                held = self._acl_rows = None  # every row is placed again
        if held is not None and self._acl_rows_seq == snapshot.seq:
            return held
        if held is not None and delta is not None and follows:
            moved = self._moved_classes(snapshot, delta)
            if moved is not None:
                self._acl_rows, self._acl_rows_seq = moved, snapshot.seq
                return moved
        self._acl_rows = self._placed_classes(snapshot)
        self._acl_rows_seq = snapshot.seq
        return self._acl_rows

    def _placed_classes(self, snapshot: AclSnapshot) -> tuple[list[ACL], np.ndarray]:
        """Every row placed in its class under ``snapshot`` (see :meth:`_row_classes`)."""
        docs = list(snapshot.acls)
        index_of: dict[ACL, int] = {}
        by_object: dict[int, int] = {}  # a snapshot shares one ACL object per class: grouped by identity first, cheaply
        for acl in snapshot.acls.values():
            if id(acl) not in by_object:
                by_object[id(acl)] = index_of.setdefault(acl, len(index_of))
        doc_class = np.fromiter((by_object[id(a)] for a in snapshot.acls.values()), dtype=np.int32, count=len(docs))
        classes = list(index_of)
        row_class = np.full(len(self._lengths), len(classes), dtype=np.int32)
        if docs and len(row_class):
            hashes = np.asarray(stable_hashes(docs), dtype=np.uint64)
            order = np.argsort(hashes, kind="stable")
            sorted_hashes = hashes[order]
            row_hashes = np.concatenate([np.asarray(self._base.doc_ids.hashes, dtype=np.uint64), stable_hashes(self._d_docs)])
            pos = np.minimum(np.searchsorted(sorted_hashes, row_hashes), len(sorted_hashes) - 1)
            matched = np.flatnonzero(sorted_hashes[pos] == row_hashes)
            if len(matched):
                starts = matched[np.r_[True, (np.diff(matched) != 1) | (row_hashes[matched[1:]] != row_hashes[matched[:-1]])]]
                run_of = np.searchsorted(starts, matched, side="right") - 1
                doc_at = order[pos[starts]]
                same = np.asarray(self._doc_ids_of(starts), dtype=object) == np.asarray([docs[d] for d in doc_at.tolist()], dtype=object)
                duplicate = len(sorted_hashes) > 1 and bool((sorted_hashes[1:] == sorted_hashes[:-1]).any())
                if duplicate:  # two ACL'd documents share a hash: place those rows one by one
                    same[:] = False
                    for r in matched.tolist():
                        doc_id = self._doc_id(r)
                        if doc_id in snapshot.acls:
                            row_class[r] = index_of[snapshot.acls[doc_id]]
                keep = same[run_of]
                row_class[matched[keep]] = doc_class[doc_at[run_of[keep]]]
        self._acl_class_docs = np.bincount(doc_class, minlength=len(classes)).tolist()
        return classes, row_class

    def _appended_classes(self, snapshot: AclSnapshot, held: tuple[list[ACL], np.ndarray]) -> tuple[list[ACL], np.ndarray]:
        """``held`` with the rows added since it was placed placed too, each by its document's ACL
        in ``snapshot``. A document whose ACL is not one of ``held``'s classes has had its ACL
        changed since ``held`` was placed, so :meth:`_moved_classes` places all its rows next
        (here: none)."""
        classes, row_class = held
        index_of = {acl: i for i, acl in enumerate(classes)}
        none, nb, acls = len(classes), self._base.n_rows, snapshot.acls
        added = [index_of.get(acls.get(doc_id, OPEN), none) for doc_id in self._d_docs[len(row_class) - nb:]]
        return classes, np.concatenate([row_class, np.asarray(added, dtype=np.int32)])

    def _moved_classes(self, snapshot: AclSnapshot, delta: _AclDelta) -> tuple[list[ACL], np.ndarray] | None:
        """The row classes placed under ``delta.since`` carried to ``snapshot``: only the rows of
        the documents whose ACL changed are placed again (their base rows found by id, the rows
        added since from ``_d_rows_by_doc``; a row retired since keeps its class: it is never
        live again), a class new to the snapshot is added, and one no document holds any more is
        dropped — the classes are the snapshot's distinct ACLs, as :meth:`_row_classes` finds
        them. ``None`` when the cached classes don't match ``delta`` (place every row then)."""
        assert self._acl_rows is not None
        classes, row_class = self._acl_rows
        n_old = len(classes)
        work = list(classes)  # the old classes, then the new ones; a row's value: i < n_old, none n_old, new i + 1
        index_of = {acl: i for i, acl in enumerate(work)}
        by_object: dict[int, int] = {}  # reads share one ACL object per class: looked up by identity first, cheaply
        counts = list(self._acl_class_docs)

        def class_of(acl: ACL) -> int:
            i = by_object.get(id(acl))
            if i is None:
                i = index_of.get(acl)
                if i is None:
                    i = index_of[acl] = len(work)
                    work.append(acl)
                    counts.append(0)
                by_object[id(acl)] = i
            return i

        docs = list(delta.before)
        values: list[int] = []
        for doc_id in docs:
            was, now = delta.before[doc_id], snapshot.acls.get(doc_id, OPEN)
            if not was.is_open:
                i = class_of(was)
                if i >= n_old:
                    return None
                counts[i] -= 1
            if now.is_open:
                values.append(n_old)
            else:
                i = class_of(now)
                counts[i] += 1
                values.append(i if i < n_old else i + 1)
        out = row_class.copy()
        rows, which = self._rows_of(docs)
        out[rows] = np.asarray(values, dtype=np.int32)[which]
        keep = [i for i, n in enumerate(counts) if n > 0]
        if len(keep) != n_old or len(work) != n_old:  # classes came or went: renumber
            remap = np.full(len(work) + 1, len(keep), dtype=np.int32)
            for new, i in enumerate(keep):
                remap[i if i < n_old else i + 1] = new
            out = remap[out]
        self._acl_class_docs = [counts[i] for i in keep]
        return [work[i] for i in keep], out

    def _rows_of(self, docs: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """Every row of ``docs`` as ``(rows, which)``, row ``rows[k]`` of ``docs[which[k]]``: the
        base's found among its sorted document id hashes (each candidate's id then compared byte
        for byte, vectorized), the rows added since from ``_d_rows_by_doc``."""
        table = self._base.doc_ids
        found: list[np.ndarray] = [np.zeros(0, np.int64)]
        which: list[np.ndarray] = [np.zeros(0, np.int64)]
        if len(table) and docs:
            wanted = np.asarray(stable_hashes(docs), dtype=np.uint64)
            lo = np.searchsorted(table.sorted_hashes, wanted, side="left")
            sizes = np.searchsorted(table.sorted_hashes, wanted, side="right") - lo
            of = np.repeat(np.arange(len(docs), dtype=np.int64), sizes)
            at = np.repeat(lo - (np.cumsum(sizes) - sizes), sizes) + np.arange(int(sizes.sum()), dtype=np.int64)
            candidates = np.asarray(table.order)[at].astype(np.int64)
            same = _same_strings(table, candidates, docs, of)
            found.append(candidates[same])
            which.append(of[same])
        added = [(row, i) for i, doc_id in enumerate(docs) for row in self._d_rows_by_doc.get(doc_id, ())]
        if added:
            pairs = np.asarray(added, dtype=np.int64)
            found.append(pairs[:, 0])
            which.append(pairs[:, 1])
        return np.concatenate(found), np.concatenate(which)

    def _doc_ids_of(self, rows: np.ndarray) -> list[str]:
        """The document ids of ``rows`` (ascending), the base's decoded in one pass."""
        nb = self._base.n_rows
        base = rows[rows < nb]
        return (self._base.doc_ids.strings(base) if len(base) else []) + [self._d_docs[r - nb] for r in rows[rows >= nb].tolist()]

    def _doc_id(self, row: int) -> str:
        nb = self._base.n_rows
        return self._base.doc_ids[row] if row < nb else self._d_docs[row - nb]

    def _current_view(self, view: RowView | None) -> RowView | None:
        """``view`` if it was made for the rows as they are, else its viewer's under the same ACL
        snapshot for the rows as they are now (a merge renumbers rows)."""
        if view is None or view.epoch == self._epoch:
            return view
        return self.view(view.viewer, view.snapshot) or _ALL_VISIBLE

    def _catch_up(self) -> bool:
        """Apply the store's changes since ``_seq``; ``False`` when that meant a rebuild."""
        assert self._seq is not None
        new_seq, docs = self.store.changes_since(self._seq)
        if "" in docs:  # the whole library was dropped
            self._rebuild_from_store(self.store.change_seq())
            return False
        self._apply(docs)
        self._seq = new_seq
        return True

    def has_saved_files(self) -> bool:
        """Whether a saved index exists for this library on this host (not yet checked)."""
        return self._persist_dir is not None and os.path.exists(os.path.join(self._persist_dir, "CURRENT"))

    def _load(self, seq: int) -> bool:
        """Adopt the saved base segment if it belongs to this store's history (it is compared
        with the store once the changes since are replayed: :meth:`_check_loaded`)."""
        if self._persist_dir is None:
            return False
        try:
            base = read_segment(self._persist_dir)
        except SegmentError as exc:
            if exc.reason != "missing":
                verify.reject(exc.reason, self._persist_dir, exc.detail)
            return False
        if base.seq > seq or self._marker(base.seq) != base.marker:
            return False  # another database's (or a dropped library's) history: not ours to check
        self._reset(base)
        self._seq = base.seq
        self._unverified = True
        self._origin = "loaded"
        return True

    def _check_loaded(self) -> bool:
        """Compare the loaded base, with the changes replayed onto it, with the store: the
        chunk versions covered (count and digest) and a sample of rows' tokens. On a
        difference, rebuild from the store and return ``False``."""
        seq = self._seq
        count, digest = verify.store_digest(self.store, include_restricted=self.include_restricted)
        if self.store.change_seq() != seq:
            return True  # the store moved while it was read: checked again at the next refresh
        self._unverified = False
        mine = self.version_digest()
        problem: tuple[str, str] | None = None
        if (count, digest) != mine:
            problem = ("versions", f"it covers {mine[0]} chunk versions (digest {mine[1]:016x}), the store has {count} ({digest:016x})")
        else:
            rows = verify.sample_rows(self._active, self._base.n_rows)
            tokens_of = lambda chunk: self._tokenize(self._index_text(chunk))  # noqa: E731
            found = verify.content_mismatch(self._base, rows, self.store, tokens_of)
            problem = ("content", found) if found else None
        if problem is None:
            return True
        verify.reject(problem[0], self._persist_dir, problem[1])
        self._rebuild_from_store(self.store.change_seq())
        return False

    def version_digest(self) -> tuple[int, int]:
        """``(count, digest)`` of the chunk versions this index holds as active (the digest of
        :func:`~ragspine.retrieval.lexical.segments.version_digest`)."""
        with self._lock:
            hashes = np.concatenate([np.asarray(self._base.chunk_ids.hashes, dtype=np.uint64), stable_hashes(self._d_chunk_ids)])
            live = self._active
            return int(live.sum()), version_digest(hashes[live], self._versions[live])

    def stop(self) -> None:
        """Make a rebuild from the store that another thread runs give up at its next batch
        (it raises :class:`BuildStopped` there), and every later one: the index is done."""
        self._stop.set()

    def _check_stop(self) -> None:
        if self._stop.is_set():
            raise BuildStopped(f"{self.store}: the in-process lexical index was stopped while it was being built")

    def _rebuild_from_store(self, seq: int) -> None:
        self._unverified = False
        self._origin = "built"
        self._seq = None  # until the rebuild is done: one given up (stopped, failed) leaves the index unbuilt
        self._reset(Segment.empty())
        store = self.store
        chunks: Iterable[StoredChunk] = store.iter_active() if isinstance(store, StreamingReads) else store.iter_chunks()
        batch: list[StoredChunk] = []
        for chunk in chunks:
            batch.append(chunk)
            if len(batch) >= _ADD_BATCH:
                self._check_stop()
                self._add_rows(batch, collapse=False)
                batch = []
        self._check_stop()
        self._add_rows(batch, collapse=False)
        self._seq = seq
        self._merge()
        _trim_heap()  # the build's token counters are freed: give their pages back to the OS

    def _apply(self, docs: Sequence[str]) -> None:
        for doc_id, rows in zip(docs, self._base.doc_ids.find_many(docs), strict=True):  # one lookup pass
            self._retire_doc(doc_id, rows)
        if isinstance(self.store, StreamingReads):
            self._add_rows(list(self.store.iter_active_docs(docs)))
        else:
            self._add_rows([c for doc_id in docs for c in self.store.iter_chunks(doc_id=doc_id)])

    def _retire_doc(self, doc_id: str, base_rows: list[int]) -> None:
        rows = base_rows + self._d_rows_by_doc.pop(doc_id, [])
        live = [row for row in rows if self._active[row]]
        for row in live:
            if row >= self._base.n_rows:
                self._d_row_of.pop(self._d_chunk_ids[row - self._base.n_rows], None)
            self._active[row] = False
            self._n_active -= 1
            self._total_len -= self._lengths[row]
            self._dead_rows += 1
        if live:
            self._changed()

    def _term_ids(self, tokens: Iterable[str]) -> dict[str, int]:
        """Each token's term id: known ones from the vocabulary, the rest looked up in the
        base's in one pass, and a token new to both given the next id after the base's, with
        no gap, in the order given (the merge appends these tokens in id order)."""
        vocab, out, missing = self._vocab, dict[str, int](), list[str]()
        for token in tokens:
            tid = vocab.get(token)
            if tid is None:
                missing.append(token)
            else:
                out[token] = tid
        for token, found in zip(missing, self._base.vocab.find_many(missing), strict=True):
            if found:
                tid = found[0]
            else:
                tid = len(self._base.vocab) + self._n_new
                self._n_new += 1
            vocab[token] = out[token] = tid
        return out

    def _add_rows(self, chunks: Sequence[StoredChunk], collapse: bool = True) -> None:
        chunks = [c for c in chunks if c.active and (self.include_restricted or not is_restricted(c.sensitivity))]
        if not chunks:
            return
        first = len(self._lengths)
        counters = [Counter(self._tokenize(self._index_text(chunk))) for chunk in chunks]
        local = self._term_ids(set().union(*counters))  # each token resolved once
        tids: list[int] = []
        tfs: list[int] = []
        for counts in counters:
            tids.extend(map(local.__getitem__, counts))
            tfs.extend(counts.values())
        counts_per_row = [len(c) for c in counters]
        lengths = [float(c.total()) for c in counters]
        rows = np.repeat(np.arange(first, first + len(chunks), dtype=np.int32), counts_per_row)
        self._segments.append(Postings.build(np.asarray(tids, dtype=np.int32), rows, np.asarray(tfs, dtype=np.int64)))
        for row, chunk in enumerate(chunks, start=first):
            self._d_chunk_ids.append(chunk.chunk_id)
            self._d_docs.append(chunk.doc_id)
            self._d_meta.append(chunk.metadata)
            self._d_row_of[chunk.chunk_id] = row
            self._d_rows_by_doc.setdefault(chunk.doc_id, []).append(row)
        self._lengths = np.concatenate([self._lengths, np.asarray(lengths)])
        self._versions = np.concatenate([self._versions, np.asarray([c.version for c in chunks], dtype=np.int32)])
        self._active = np.concatenate([self._active, np.ones(len(chunks), dtype=bool)])
        self._n_active += len(chunks)
        self._total_len += float(sum(lengths))
        self._mask_cache.clear()
        self._tid_cache.clear()
        self._changed()
        if collapse and len(self._segments) > _MAX_SEGMENTS:  # keep the per-token work of a query bounded
            self._segments = [merge_postings(self._segments)]

    def _maybe_merge(self) -> None:
        base = max(self._base.n_rows, 1)
        added = len(self._d_chunk_ids)
        least = max(self.merge_min_rows, self._merge_fraction * base)
        if added > least or self._dead_rows > least:
            self._merge()

    def _merge(self) -> None:
        """Fold everything into a new base of the active rows (no re-tokenizing), and save it.
        Built under the writers' lock only (the state it reads changes only under that lock);
        the search lock is held just to install the result."""
        with self._write_lock:
            segment = self._merged_segment()
            with self._lock:
                self._reset(segment)
            if self._persist_dir is not None and segment.marker is not None:
                try:
                    saved = save_segment(segment, self._persist_dir)
                except OSError as exc:  # a read-only or full disk: the index still works, unsaved
                    log.warning("lexical index not saved to %s: %s", self._persist_dir, exc)
                    return
                # serve the saved file's pages instead of the arrays just built: the same rows,
                # but memory the OS shares between processes and can reclaim
                mapped = load_segment(self._persist_dir, os.path.basename(saved))
                if mapped is not None and mapped.n_rows == segment.n_rows and mapped.seq == segment.seq:
                    with self._lock:
                        self._reset(mapped)

    def _merged_segment(self) -> Segment:
        base, nb = self._base, self._base.n_rows
        keep = np.flatnonzero(self._active)
        renumber = np.full(len(self._active), -1, dtype=np.int64)
        renumber[keep] = np.arange(len(keep))
        everyone = bool(self._active.all())  # nothing retired: rows keep their numbers
        postings = merge_postings(
            [base.postings, *self._segments], None if everyone else self._active, None if everyone else renumber
        )
        kb, kd = keep[keep < nb], keep[keep >= nb] - nb
        new_tokens = sorted((t for t, tid in self._vocab.items() if tid >= len(base.vocab)), key=self._vocab.__getitem__)
        if [self._vocab[t] for t in new_tokens] != list(range(len(base.vocab), len(base.vocab) + len(new_tokens))):
            raise AssertionError("lexical index: the new tokens' term ids are not contiguous after the base's")
        vocab = base.vocab.extend(new_tokens)  # term ids never change: the vocabulary only grows; token i is term i
        chunk_ids = base.chunk_ids.gather(kb).extend([self._d_chunk_ids[i] for i in kd])
        doc_ids = base.doc_ids.gather(kb).extend([self._d_docs[i] for i in kd])
        meta = base.meta.gather(kb).extend([self._d_meta[i] for i in kd])
        return Segment(
            postings, vocab, chunk_ids, doc_ids, self._lengths[keep].copy(), self._versions[keep].copy(),
            meta, int(self._seq or 0), self._marker(self._seq) if self._seq else None,
        )

    def _marker(self, seq: int | None) -> str | None:
        """The store's marker of change ``seq`` (``None`` on a store without one)."""
        if seq is None or not isinstance(self.store, PersistentStore):
            return None
        return self.store.change_marker(seq)

    def save(self) -> None:
        """Merge and save now (a bulk load calls this once at the end)."""
        with self._write_lock:
            if self._seq is None:
                self.refresh()
            self._merge()

    # -- queries --------------------------------------------------------------------------
    def __len__(self) -> int:
        return self._n_active

    @property
    def resident_rows(self) -> int:
        """Rows held in this process (``ResidentIndex``), retired ones not yet merged away included."""
        return len(self._lengths)

    @property
    def origin(self) -> str | None:
        """How this index got its base: ``"loaded"`` from the saved files (checked against the
        store), ``"built"`` from the store; ``None`` before the first refresh."""
        return self._origin

    @property
    def seq(self) -> int | None:
        """The store change sequence this index reflects (``None`` before the first refresh)."""
        return self._seq

    def _tid(self, token: str) -> int | None:
        try:
            return self._tid_cache[token]
        except KeyError:
            pass
        tid = self._vocab.get(token)
        if tid is None:
            found = self._base.vocab.find(token)
            tid = found[0] if found else None
        if len(self._tid_cache) >= _TID_CACHE:
            self._tid_cache.clear()
        self._tid_cache[token] = tid
        return tid

    def _term(self, tid: int, view: RowView | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(rows, terms)``: the live rows holding term ``tid`` and each row's BM25 term
        ``idf * tf / (tf + norm)`` — computed as the reference does, then kept (bounded, least
        recently used first out) until the library changes: a query is gathers and adds. Under a
        ``view`` (ACLs), over its rows and statistics, not kept."""
        if view is not None:
            def make() -> tuple[np.ndarray, np.ndarray]:
                rows, tfs, idf = self._live_postings(tid, view)
                return rows, self._bm25_terms(rows, tfs, idf, view)

            return view.cached("term", tid, make, lambda hit: len(hit[0]))  # type: ignore[no-any-return]
        hit = self._terms.get(tid)
        if hit is not None:
            self._terms.move_to_end(tid)
            return hit
        rows, tfs, idf = self._live_postings(tid)
        terms = self._bm25_terms(rows, tfs, idf)
        self._terms[tid] = (rows, terms)
        self._terms_size += len(rows)
        while self._terms_size > _TERMS_CACHE and len(self._terms) > 1:
            _, (old, _) = self._terms.popitem(last=False)
            self._terms_size -= len(old)
        return rows, terms

    def _kernel_top_k(
        self, query_tokens: Sequence[str], top_k: int, mask: np.ndarray | None, view: RowView | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """The exact top ``top_k`` with every tie, by the compiled block-max MaxScore kernel
        (``kernel.py``) straight over the postings: the base's, and the later segments' copied
        per token (:meth:`_kernel_token`)."""
        from ragspine.retrieval.lexical import kernel

        top_k_fn = self._top_k_fn
        if top_k_fn is None:
            top_k_fn = self._top_k_fn = kernel.load()
        distinct: dict[int, int] = {}
        tokens: list[_KernelToken] = []
        occ: list[int] = []
        for tid in map(self._tid, query_tokens):
            if tid is None:
                continue
            at = distinct.get(tid)
            if at is None:
                if view is None:
                    info = self._kernel_tokens.get(tid, _MISSING)
                else:
                    info = view.cached("kernel", tid, partial(self._kernel_token, tid, view), _kernel_token_size)
                if info is _MISSING:
                    info = self._kernel_tokens[tid] = self._kernel_token(tid)
                if info is None:
                    continue
                at = distinct[tid] = len(tokens)
                tokens.append(info)
            occ.append(at)
        if not tokens:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        spans = np.zeros((len(tokens), 5), dtype=np.int64)
        d_rows, d_tf, d_at = [], [], 0
        for i, info in enumerate(tokens):
            spans[i] = (info.base_start, info.base_len, d_at, len(info.d_rows), info.first_block)
            if len(info.d_rows):
                d_rows.append(info.d_rows)
                d_tf.append(info.d_tf)
                d_at += len(info.d_rows)
        if view is not None:
            mask = view.live if mask is None else mask & view.live
        elif self._dead_rows:
            mask = self._active if mask is None else mask & self._active
        base = self._base.postings
        rows, scores = top_k_fn(
            base.rows, base.tf,
            np.concatenate(d_rows) if d_rows else _NO_ROWS, np.concatenate(d_tf) if d_tf else _NO_TF,
            self._norms() if view is None else view.norms, spans, np.array([t.idf for t in tokens]), np.array([t.d_max for t in tokens]),
            self._blk_tf, self._blk_dl, np.array(occ, dtype=np.int64), int(top_k),
            _NO_MASK if mask is None else mask, mask is not None, float(self.k1), float(self.b),
            self._avgdl() if view is None else view.avgdl,
        )
        return rows, scores

    def _kernel_token(self, tid: int, view: RowView | None = None) -> _KernelToken | None:
        """What the kernel needs of token ``tid`` (kept until the library changes): its span in
        the base postings and the base blocks' statistics, its later postings, its idf over the
        active rows and the largest term of its later postings; ``None`` when no active row
        holds it."""
        from ragspine.retrieval.lexical import kernel

        base = self._base.postings
        start, stop = base.span(tid)
        later = [hit for seg in self._segments if (hit := seg.lookup(tid)) is not None]
        d_rows = np.concatenate([h[0] for h in later]).astype(np.int32) if later else _NO_ROWS
        d_tf = np.concatenate([h[1] for h in later]).astype(np.uint32) if later else _NO_TF
        if view is not None or self._dead_rows:
            live = self._active if view is None else view.live
            df = int(np.count_nonzero(live[np.asarray(base.rows[start:stop])])) + int(np.count_nonzero(live[d_rows]))
        else:
            df = stop - start + len(d_rows)
        if not df:
            return None
        idf = bm25_idf(df, self._n_active if view is None else view.n)
        d_max = float(self._bm25_terms(d_rows, d_tf, idf, view).max()) if len(d_rows) else 0.0
        first = self._blocks.get(tid)
        if first is None and stop > start:
            tf_max, dl_min = kernel.block_stats(base.rows[start:stop], base.tf[start:stop], self._lengths)
            first = self._blocks[tid] = self._blk_used
            end = first + len(tf_max)
            if end > len(self._blk_tf):
                size = max(end, 2 * len(self._blk_tf), 1024)
                self._blk_tf = np.concatenate([self._blk_tf[: self._blk_used], np.zeros(size - self._blk_used)])
                self._blk_dl = np.concatenate([self._blk_dl[: self._blk_used], np.zeros(size - self._blk_used)])
            self._blk_tf[first:end] = tf_max
            self._blk_dl[first:end] = dl_min
            self._blk_used = end
        return _KernelToken(start, stop - start, first or 0, d_rows, d_tf, idf, d_max)

    def _live_postings(self, tid: int, view: RowView | None = None) -> tuple[np.ndarray, np.ndarray, float]:
        """``(rows, tf, idf)`` of term ``tid`` over the active rows (``view``'s rows and statistics)."""
        rows, tfs = self._postings(tid)
        if view is not None:
            live = view.live[rows]
            rows, tfs = rows[live], tfs[live]
        elif self._dead_rows:
            live = self._active[rows]
            rows, tfs = rows[live], tfs[live]
        return rows, tfs, bm25_idf(len(rows), self._n_active if view is None else view.n) if len(rows) else 0.0

    def _bm25_terms(self, rows: np.ndarray, tfs: np.ndarray, idf: float, view: RowView | None = None) -> np.ndarray:
        """:func:`bm25_term` of each ``(row, tf)``, vectorized with the same operations."""
        terms = tfs.astype(np.float64)
        terms /= terms + (self._norms() if view is None else view.norms)[rows]
        terms *= idf
        return terms

    def _postings(self, tid: int) -> tuple[np.ndarray, np.ndarray]:
        parts = [hit for seg in (self._base.postings, *self._segments) if (hit := seg.lookup(tid)) is not None]
        if len(parts) == 1:
            return parts[0]
        if not parts:
            return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.uint16)
        return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])

    def score_rows(self, query_tokens: Sequence[str], view: RowView | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(rows, scores)`` of every active row (``view``'s rows) with a positive BM25 score."""
        n = self._n_active if view is None else view.n
        if n == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        parts: list[tuple[np.ndarray, np.ndarray]] = []
        for start in range(0, len(query_tokens), _QUERY_TOKENS_PER_CHECK):  # a query of megabytes: the deadline stops it
            if start:
                check_deadline("scoring the query")
            tids = map(self._tid, query_tokens[start : start + _QUERY_TOKENS_PER_CHECK])
            parts += [self._term(tid, view) for tid in tids if tid is not None]
        parts = [p for p in parts if len(p[0])]
        if not parts:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        if len(parts) == 1:
            rows, terms = parts[0]
            return rows.astype(np.int64), terms.copy()
        # one pass: bincount adds each row's terms in the order given — query order, from 0.0,
        # exactly the reference's sequence of additions
        rows = np.concatenate([p[0] for p in parts])
        weights = np.concatenate([p[1] for p in parts])
        if view is not None:  # counted in the view's own numbering: passes over its rows, not the library's
            visible, number = view.cached("rows", -1, lambda: _numbering(view.live), lambda _: 0)
            scores = np.bincount(number[rows], weights=weights, minlength=len(visible))
            hit = np.flatnonzero(scores)
            return visible[hit], scores[hit]
        scores = np.bincount(rows, weights=weights, minlength=len(self._active))
        hit = np.flatnonzero(scores)
        return hit, scores[hit]

    def _pruned_top_k(
        self, query_tokens: Sequence[str], top_k: int, mask: np.ndarray | None, view: RowView | None = None,
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """The exact top ``top_k`` (with every tie) without scoring the common tokens' long
        posting lists in full, or ``None`` when that cannot be proven (MaxScore, term at a time).

        The rarest query tokens are *essential*: only rows holding one of them are candidates,
        scored exactly — every occurrence of every token, in query order, the same operations
        as :meth:`score_rows`, so the scores are bit-identical. A row holding only the other
        tokens scores at most the sum of their idf (``tf / (tf + norm) < 1``); when that bound
        is below the k-th candidate's score, no such row can enter the top k or tie with it."""
        n = self._n_active if view is None else view.n
        if self._n_active < self.prune_from:
            return None  # a small library is scored in full faster than pruned
        occurrences: list[int] = []
        postings: dict[int, tuple[np.ndarray, np.ndarray, float]] = {}
        for tid in map(self._tid, query_tokens):
            if tid is None:
                continue
            if tid not in postings:
                postings[tid] = self._live_postings(tid, view)
            if len(postings[tid][0]):
                occurrences.append(tid)
        by_rarity = sorted(set(occurrences), key=lambda t: len(postings[t][0]))
        for m in range(1, min(len(by_rarity), _MAX_ESSENTIAL + 1)):
            essential = by_rarity[:m]
            if sum(len(postings[t][0]) for t in essential) > n // 4:
                return None  # the candidates alone would cost about as much as scoring everything
            bound = sum(postings[t][2] for t in occurrences if t not in essential)
            cand = np.unique(np.concatenate([postings[t][0] for t in essential]))
            if mask is not None:
                cand = cand[mask[cand]]
            if len(cand) < top_k:
                continue
            scores = np.zeros(len(cand), dtype=np.float64)
            for tid in occurrences:
                rows, tfs, idf = postings[tid]
                pos = np.searchsorted(rows, cand)
                np.minimum(pos, len(rows) - 1, out=pos)
                hit = rows[pos] == cand
                scores[hit] += self._bm25_terms(cand[hit], tfs[pos[hit]], idf, view)
            kth = _kth_largest(scores, top_k)
            if bound * (1.0 + 1e-9) < kth:
                sel = scores >= kth
                return cand[sel].astype(np.int64), scores[sel]
        return None

    def _avgdl(self) -> float:
        """The active rows' mean length, as the reference computes it."""
        return self._total_len / self._n_active or 1.0

    def _norms(self) -> np.ndarray:
        """``k1 * (1 - b + b * dl / avgdl)`` of every row, as the reference computes it, cached
        until the library changes (one gather per query token instead of four passes)."""
        if self._norm is None or len(self._norm) != len(self._lengths):
            self._norm = self.k1 * (1.0 - self.b + self.b * self._lengths / self._avgdl())
        return self._norm

    def _filter_mask(self, metadata_filter: MetadataFilter) -> np.ndarray:
        """Rows passing ``metadata_filter``: the base's columns, then the rows added since."""
        base = self._base.meta.mask(metadata_filter.conditions, self._mask_cache) if self._base.n_rows else np.zeros(0, bool)
        added = np.fromiter((metadata_filter.matches(m) for m in self._d_meta), dtype=bool, count=len(self._d_meta))
        return np.concatenate([base, added])

    def chunk_id(self, row: int) -> str:
        nb = self._base.n_rows
        return self._base.chunk_ids[row] if row < nb else self._d_chunk_ids[row - nb]

    def chunk_ids(self, rows: np.ndarray) -> list[str]:
        """The chunk ids of ``rows``, in that order (the base's decoded in one pass)."""
        nb = self._base.n_rows
        rows = np.asarray(rows, dtype=np.int64)
        if not len(rows) or rows.max() < nb:
            return self._base.chunk_ids.strings(rows)
        return [self._base.chunk_ids[r] if r < nb else self._d_chunk_ids[r - nb] for r in rows.tolist()]

    def search(
        self,
        query_tokens: Sequence[str],
        *,
        metadata_filter: MetadataFilter | None = None,
        top_k: int | None = None,
        view: RowView | None = None,
    ) -> list[LexicalHit]:
        """BM25's ranking of ``query_tokens``: over ``view``'s rows with its statistics (those of
        the rows a principal may read: :meth:`view`), else over every active row."""
        with self._lock:
            if top_k is not None and top_k <= 0:
                return []
            view = self._current_view(view)
            if view is _ALL_VISIBLE:
                view = None
            elif view is not None and not view.n:
                return []
            mask = self._filter_mask(metadata_filter) if metadata_filter else None
            pruned: tuple[np.ndarray, np.ndarray] | None
            if view is not None and view.n * _SMALL_VIEW < self._n_active:
                # a principal who reads a small part of the library: its rows' postings scored in
                # full cost less than pruning, whose block bounds know nothing of the view
                pruned = None
            elif top_k is not None and self.kernel == "numba" and self._n_active >= self.prune_from:
                pruned = self._kernel_top_k(query_tokens, top_k, mask, view)
            else:
                pruned = self._pruned_top_k(query_tokens, top_k, mask, view) if top_k is not None else None
            if pruned is not None:
                rows, scores = pruned
            else:
                rows, scores = self.score_rows(query_tokens, view)
                if mask is not None and len(rows):
                    keep = mask[rows]
                    rows, scores = rows[keep], scores[keep]
            if top_k is not None and len(rows) > top_k:
                # keep every row tied with the k-th score, then order exactly
                sel = scores >= _kth_largest(scores, top_k)
                rows, scores = rows[sel], scores[sel]
            ranked = sorted(
                zip(scores.tolist(), self.chunk_ids(rows), self._versions[rows].tolist(), strict=True), key=lambda t: (-t[0], t[1]),
            )
            if top_k is not None:
                ranked = ranked[:top_k]
            return [LexicalHit(cid, s, v) for s, cid, v in ranked]

    def candidates(self, metadata_filter: MetadataFilter | None = None, view: RowView | None = None) -> list[tuple[str, int]]:
        """``(chunk_id, version)`` of every active chunk (of ``view``'s rows) passing ``metadata_filter``."""
        with self._lock:
            view = self._current_view(view)
            live = self._active if view is None or view is _ALL_VISIBLE else view.live
            mask = live if not metadata_filter else live & self._filter_mask(metadata_filter)
            rows = np.flatnonzero(mask).tolist()
            return [(self.chunk_id(r), int(self._versions[r])) for r in rows]

    def version_of(self, chunk_id: str) -> int | None:
        """The active version of ``chunk_id``, or ``None`` when it is not active."""
        return self.versions([chunk_id]).get(chunk_id)

    def versions(self, chunk_ids: Sequence[str]) -> dict[str, int]:
        """``{chunk_id: active version}`` for the ids that are active (one lock, one lookup pass)."""
        with self._lock:
            out: dict[str, int] = {}
            rest = []
            for cid in dict.fromkeys(chunk_ids):
                row = self._d_row_of.get(cid)
                if row is not None:
                    out[cid] = int(self._versions[row])
                else:
                    rest.append(cid)
            for cid, rows in zip(rest, self._base.chunk_ids.find_many(rest), strict=True):
                row = next((r for r in rows if self._active[r]), None)
                if row is not None:
                    out[cid] = int(self._versions[row])
            return out


def _kernel_token_size(token: _KernelToken | None) -> int:
    return 1 if token is None else len(token.d_rows) + 1


def _numbering(live: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(rows, number)``: the ``live`` rows ascending, and each row's position among them."""
    visible = np.flatnonzero(live)
    number = np.zeros(len(live), dtype=np.int64)
    number[visible] = np.arange(len(visible))
    return visible, number


def _trim_heap() -> None:
    """Return freed heap pages to the OS (glibc's ``malloc_trim``; nothing elsewhere): a build
    allocates hundreds of MB of short-lived Python objects, which the allocator would otherwise
    keep (at 100k chunks on PostgreSQL: 258 MB anonymous after a build, 96 MB after the trim)."""
    global _malloc_trim
    if _malloc_trim is None:
        _malloc_trim = False
        if sys.platform.startswith("linux"):
            try:
                import ctypes

                _malloc_trim = ctypes.CDLL("libc.so.6").malloc_trim
            except (OSError, AttributeError):
                pass
    if _malloc_trim:
        _malloc_trim(0)


_malloc_trim: Any = None


def _kernel_choice(kernel: str) -> str:
    """``numba`` or ``numpy``: ``auto`` is the compiled kernel when numba is installed."""
    from ragspine.retrieval.lexical import kernel as compiled

    name = (kernel or "auto").strip().lower()
    if name == "auto":
        return "numba" if compiled.available() else "numpy"
    if name not in ("numba", "numpy"):
        raise ConfigError(f"unknown lexical kernel {kernel!r}: choose auto, numba or numpy (RAGSPINE_LEXICAL_KERNEL)")
    if name == "numba" and not compiled.available():
        compiled.load()  # raises MissingDependencyError naming the extra
    return name


def _kth_largest(scores: np.ndarray, k: int) -> float:
    return float(np.partition(scores, len(scores) - k)[len(scores) - k])


_NO_MASK = np.zeros(1, dtype=bool)
_NO_ROWS = np.zeros(0, dtype=np.int32)
_NO_TF = np.zeros(0, dtype=np.uint32)
_MISSING: Any = object()


class AclSnapshot(NamedTuple):
    """One read of a library's document ACLs: ``seq`` (the store's ACL sequence), ``acls``
    (``{doc_id: ACL}`` of the documents that have one)."""

    seq: int
    acls: Mapping[str, ACL]

    def hides(self, viewer: Viewer | None, doc_id: str) -> bool:
        """Whether ``viewer`` (``None``: no ACL applies) may not read ``doc_id``."""
        return viewer is not None and not viewer.sees(self.acls.get(doc_id, OPEN))


def _same_strings(table: StringTable, rows: np.ndarray, strings: list[str], of: np.ndarray) -> np.ndarray:
    """``table[rows[k]] == strings[of[k]]`` for each ``k``, compared as UTF-8 bytes in a few
    vectorized passes (nothing decoded)."""
    data = [s.encode("utf-8", "surrogatepass") for s in strings]
    s_offsets = np.zeros(len(data) + 1, dtype=np.int64)
    np.cumsum([len(d) for d in data], out=s_offsets[1:])
    s_blob = np.frombuffer(b"".join(data), dtype=np.uint8)
    offsets = np.asarray(table.offsets)
    starts, s_starts = offsets[rows], s_offsets[of]
    sizes = offsets[rows + 1] - starts
    same: np.ndarray = sizes == s_offsets[of + 1] - s_starts
    k = np.flatnonzero(same & (sizes > 0))
    if len(k):
        n = sizes[k]
        first = np.cumsum(n) - n
        step = np.arange(int(n.sum()), dtype=np.int64) - np.repeat(first, n)
        equal = np.asarray(table.blob)[np.repeat(starts[k], n) + step] == s_blob[np.repeat(s_starts[k], n) + step]
        same[k] = np.logical_and.reduceat(equal, first)
    return same


class _AclDelta(NamedTuple):
    """The documents whose ACL changed from snapshot ``since`` to snapshot ``seq``, each with its
    ACL in ``since`` (``OPEN``: none)."""

    since: int
    seq: int
    before: dict[str, ACL]


class RowView(NamedTuple):
    """The rows a viewer may read (``live``: active and visible) under one ACL snapshot, and
    BM25's statistics over exactly them — the ones the library holding only those rows has."""

    epoch: int
    snapshot: AclSnapshot
    viewer: Viewer
    live: np.ndarray
    n: int
    total_len: float
    norms: np.ndarray
    #: what searches under this view computed per token (kept with the view: its rows never change)
    cache: dict[Any, Any]

    @property
    def avgdl(self) -> float:
        return self.total_len / self.n or 1.0

    def cached(self, kind: str, tid: int, make: Callable[[], Any], size: Callable[[Any], int]) -> Any:
        """``make()`` once per token and statistics (a copy with other statistics never reads
        another's), the oldest dropped past :data:`_VIEW_CACHE_POSTINGS` postings."""
        key = (kind, tid, self.n, self.total_len)
        hit = self.cache.get(key, _MISSING)
        if hit is not _MISSING:
            return hit
        value = make()
        self.cache[key] = value
        used = self.cache.get("size", 0) + size(value)
        while used > _VIEW_CACHE_POSTINGS and len(self.cache) > 2:
            oldest = next(k for k in self.cache if k != "size")
            used -= size(self.cache.pop(oldest))
        self.cache["size"] = used
        return value


#: What :meth:`InMemoryLexicalIndex._current_view` returns when a view made before a change now hides nothing.
_ALL_VISIBLE: Any = RowView(-1, AclSnapshot(-1, {}), Viewer(everything=True), np.zeros(0, bool), 0, 0.0, np.zeros(0), {})
_VIEW_CACHE_POSTINGS = 4_000_000  # postings a view keeps its tokens' terms for (~48 MB)
_VIEWERS_CACHED = 4096  # viewers whose hidden ACLs are remembered (per ACL snapshot and rows)
#: a view holding fewer than 1/_SMALL_VIEW of the active rows is scored in full over its own postings
_SMALL_VIEW = 4
#: the row classes follow an ACL change on up to max(_ACL_DELTA_MIN, documents // _ACL_DELTA_SHARE)
#: documents (only their rows placed again); past it every row is placed again. Measured at 200,000
#: rows / 66,667 ACL'd documents: 10,000 documents' rows placed again 76-82 ms, every row 171 ms
#: (about 8 us a changed document against 2.6 us a document: even at 1/3 of them)
_ACL_DELTA_MIN = 64
_ACL_DELTA_SHARE = 4
_VIEWS_CACHED = 8  # (ACL snapshot, hidden ACLs) views kept per index: ~9 bytes a row each (a mask, the norms)


class _KernelToken(NamedTuple):
    """One token as the compiled kernel reads it (:meth:`InMemoryLexicalIndex._kernel_token`)."""

    base_start: int
    base_len: int
    first_block: int
    d_rows: np.ndarray
    d_tf: np.ndarray
    idf: float
    d_max: float
# Chunks tokenized per posting segment while (re)building. 5,000 lowers a 100k-chunk rebuild's peak
# (336-338 vs 474-490 MB) and a million chunks' a little (2,121-2,133 vs 2,153-2,166 MB), in the same time
# within noise (CPU 11.5-14.5 vs 12.1-15.9 s; 115-129 vs 122-125 s). More segments no longer cost the
# final merge: ``merge_postings`` keeps each segment's term counts sparse (200 segments x 330k terms:
# +9 MB, was +987 MB with dense ones). ``scripts/bench_scale.py --rebuild --add-batch N``.
_ADD_BATCH = 5_000
_MAX_SEGMENTS = 16
_MAX_ESSENTIAL = 3  # MaxScore attempts before scoring every posting
_TID_CACHE = 200_000  # query tokens remembered -> term id
_QUERY_TOKENS_PER_CHECK = 4096  # query tokens scored between two looks at the deadline
_TERMS_CACHE = 8_000_000  # cached BM25 terms (8 bytes each) across the library's tokens

