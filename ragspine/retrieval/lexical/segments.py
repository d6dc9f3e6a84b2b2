"""The pieces of the in-process lexical index: posting segments, string tables, metadata
columns, and the files a segment is saved to (memory-mapped on load).

* :class:`Postings` — a CSC inverted index over *sparse* term ids: ``terms`` (sorted, unique),
  ``indptr``, then per term its posting ``rows`` (ascending) and term frequencies ``tf``.
* :class:`StringTable` — strings (chunk ids, doc ids, tokens) as one UTF-8 blob with offsets,
  plus a stable 64-bit hash per entry (:func:`blob_hashes`) and the entries in hash order, so ``find`` is a binary
  search that never builds a Python dict (a million chunk ids load in milliseconds). Every
  hash match is verified against the string itself: a collision costs a comparison, never a
  wrong answer.
* :class:`MetaColumns` — chunk metadata, one dictionary-encoded column per field (``codes``
  per row, ``-1`` when absent, and the distinct values). A filter condition is evaluated once
  per distinct value with :meth:`FilterCondition.matches` — the very semantics of the
  reference — and becomes a boolean mask over all rows.

A saved segment is a directory of ``.npy`` arrays, ``*.bin`` blobs and a ``manifest.json``;
:func:`save_segment` writes a fresh directory and then points ``CURRENT`` at it with one atomic
rename, so a reader sees the old segment or the new one, never a half-written one.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ragspine.retrieval.filtering.filters import FilterCondition

log = logging.getLogger(__name__)

#: Bumped whenever the token stream or the file layout changes: older files are rebuilt.
#: 2: RESTRICTED chunks are not indexed. 3: files of /2 could map a token added between two
#: merges to another token's postings (wrong BM25 scores past ~1,000 chunks written in steps);
#: the manifest records the statistics a load checks; string hashes are blob_hashes (vectorized).
FORMAT = "ragspine-lexical/3"
_EMPTY_I32 = np.zeros(0, dtype=np.int32)


def _tf_dtype(tf: np.ndarray) -> type:
    """The narrowest unsigned type holding every term frequency of ``tf``."""
    return np.uint16 if not len(tf) or int(np.max(tf)) < 2**16 else np.uint32


class SegmentError(Exception):
    """A saved segment that cannot be used; ``reason`` is one word for the metric
    (``missing``, ``format``, ``unreadable``, ``corrupt``)."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


def version_digest(hashes: np.ndarray, versions: np.ndarray) -> int:
    """An order-independent 64-bit checksum of the rows ``(chunk id hash, version)``: each row
    mixed (SplitMix64's finalizer) and the results added modulo 2**64, so a set of chunk
    versions has one digest whichever order its rows are in, and any changed, missing or extra
    row changes it (with probability ~1 - 2**-64)."""
    x = np.asarray(hashes, dtype=np.uint64) ^ (np.asarray(versions).astype(np.uint64) * np.uint64(0xD6E8FEB86659FD93))
    return int(np.sum(_mix(x), dtype=np.uint64))


def _mix(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finalizer, in place on a ``uint64`` array (wrapping arithmetic)."""
    x ^= x >> np.uint64(30)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return x


_POLY = np.uint64(0x100000001B3)
_HASH_BLOCK = 1 << 20  # bytes hashed per vectorized pass (bounds the temporaries)


def blob_hashes(blob: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each string ``blob[offsets[i]:offsets[i + 1]]`` (UTF-8 bytes), the same
    in every process: a polynomial in the bytes modulo 2**64, mixed with the length and
    finalized with SplitMix64 — computed with numpy over many strings at once (a million chunk
    ids in about a tenth of a second). Not a cryptographic hash: a lookup verifies every match
    against the string itself, and a digest only guards against accidents."""
    offsets = np.asarray(offsets, dtype=np.int64)
    n = len(offsets) - 1
    out = np.zeros(max(n, 0), dtype=np.uint64)
    if n <= 0:
        return out
    blob = np.asarray(blob, dtype=np.uint8)
    lengths = np.diff(offsets)
    powers = np.ones(int(lengths.max()) + 1, dtype=np.uint64)
    powers[1:] = _POLY
    powers = np.cumprod(powers, dtype=np.uint64)
    start = 0
    while start < n:  # strings in blocks of about _HASH_BLOCK bytes
        stop = int(np.searchsorted(offsets, offsets[start] + _HASH_BLOCK, side="right")) - 1
        stop = min(max(stop, start + 1), n)
        lo, hi = int(offsets[start]), int(offsets[stop])
        lens = lengths[start:stop]
        if hi > lo:
            ends = np.repeat(offsets[start + 1 : stop + 1], lens)
            terms = (blob[lo:hi].astype(np.uint64) + np.uint64(1)) * powers[ends - 1 - np.arange(lo, hi, dtype=np.int64)]
            nonempty = lens > 0
            firsts = offsets[start:stop][nonempty] - lo
            out[start:stop][nonempty] = np.add.reduceat(terms, firsts)
        start = stop
    out ^= (lengths.astype(np.uint64) + np.uint64(1)) * np.uint64(0x9E3779B97F4A7C15)
    return _mix(out)


def stable_hashes(strings: Iterable[str]) -> np.ndarray:
    """:func:`blob_hashes` of each string (UTF-8, lone surrogates kept), the same in every process."""
    strings = list(strings)
    joined = "".join(strings)
    if joined.isascii():  # one byte per character: no per-string encoding
        lengths: list[int] = list(map(len, strings))
        blob = joined.encode("ascii")
    else:
        data = [s.encode("utf-8", "surrogatepass") for s in strings]
        lengths, blob = list(map(len, data)), b"".join(data)
    offsets = np.zeros(len(strings) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return blob_hashes(np.frombuffer(blob, dtype=np.uint8), offsets)


@dataclass
class Postings:
    """One immutable posting segment (see the module docstring)."""

    terms: np.ndarray  # int32, sorted unique term ids
    indptr: np.ndarray  # int64, len(terms) + 1
    rows: np.ndarray  # int32, global row numbers, ascending per term
    tf: np.ndarray  # uint16 / uint32 term frequencies

    @classmethod
    def empty(cls) -> Postings:
        return cls(_EMPTY_I32, np.zeros(1, dtype=np.int64), _EMPTY_I32, np.zeros(0, dtype=np.uint16))

    @classmethod
    def build(cls, tids: np.ndarray, rows: np.ndarray, tf: np.ndarray) -> Postings:
        """From parallel arrays in which, for every term, rows already ascend (a stable sort by
        term keeps them so: appended rows only grow)."""
        if not len(tids):
            return cls.empty()
        order = np.argsort(tids, kind="stable")
        tids = tids[order]
        terms, starts = np.unique(tids, return_index=True)
        indptr = np.empty(len(terms) + 1, dtype=np.int64)
        indptr[:-1] = starts
        indptr[-1] = len(tids)
        return cls(terms.astype(np.int32), indptr, rows[order].astype(np.int32), tf[order].astype(_tf_dtype(tf)))

    def __len__(self) -> int:
        return len(self.rows)

    def span(self, tid: int) -> tuple[int, int]:
        """Where term ``tid``'s postings are: ``rows[lo:hi]`` / ``tf[lo:hi]`` (``lo == hi``: none)."""
        terms = self.terms
        n = len(terms)
        if n and int(terms[-1]) == n - 1:  # dense: every term id below n has a slot
            i = tid
            if i >= n:
                return 0, 0
        else:
            i = int(np.searchsorted(terms, tid))
            if i == n or terms[i] != tid:
                return 0, 0
        return int(self.indptr[i]), int(self.indptr[i + 1])

    def lookup(self, tid: int) -> tuple[np.ndarray, np.ndarray] | None:
        lo, hi = self.span(tid)
        if lo == hi:
            return None
        return self.rows[lo:hi], self.tf[lo:hi]

    def triples(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(tids, rows, tf)`` of every posting, in segment order."""
        tids = np.repeat(self.terms, np.diff(self.indptr))
        return tids, np.asarray(self.rows), np.asarray(self.tf)


def _live_counts(p: Postings, active: np.ndarray | None) -> tuple[np.ndarray | None, np.ndarray]:
    """``(live, per_term)``: the mask of ``p``'s live postings (``None``: all of them) and how
    many live postings each of ``p.terms`` has (int64, one per term of ``p``: sparse)."""
    if active is None:
        return None, np.diff(p.indptr)
    live = active[np.asarray(p.rows)]
    csum = np.zeros(len(live) + 1, dtype=np.int64)  # a segmented sum of the live mask
    np.cumsum(live, out=csum[1:])
    return live, csum[p.indptr[1:]] - csum[p.indptr[:-1]]


def merge_postings(parts: Sequence[Postings], active: np.ndarray | None = None, renumber: np.ndarray | None = None) -> Postings:
    """One segment from ``parts`` whose rows ascend from part to part (each part a later range
    of rows): term by term, each part's postings in part order, without a global sort. With
    ``active``, postings of inactive rows are dropped and rows become ``renumber[row]``.

    Two passes over the parts, each part's term counts kept sparse (only the terms it has): the
    first adds them into one vocabulary-sized total, the second places each part's postings
    after those of the earlier parts. Memory: the output, two vocabulary-sized arrays and one
    part's temporaries at a time, however many parts there are (dense counts per part cost
    2 x parts x vocabulary x 8 bytes: 200 parts of a 330k-term vocabulary, ~1 GB)."""
    parts = [p for p in parts if len(p)]
    if not parts:
        return Postings.empty()
    n_terms = max(int(p.terms[-1]) for p in parts) + 1
    starts = np.zeros(n_terms + 1, dtype=np.int64)
    for p in parts:  # live postings per term, all parts: accumulated in place
        starts[1:][np.asarray(p.terms)] += _live_counts(p, active)[1]  # terms are unique: no lost adds
    np.cumsum(starts, out=starts)
    out_rows = np.empty(int(starts[-1]), dtype=np.int32)
    out_tf = np.empty(int(starts[-1]), dtype=np.result_type(*(_tf_dtype(p.tf) for p in parts)))
    offset = starts[:-1].copy()  # where each term's next posting goes
    for p in parts:
        live, per_term = _live_counts(p, active)
        terms = np.asarray(p.terms)
        rows, tf = np.asarray(p.rows), np.asarray(p.tf)
        if live is not None:
            rows, tf = rows[live], tf[live]
            if renumber is not None:
                rows = renumber[rows]
        # a term's run in this part goes to offset[term]: the run's k-th posting to offset[term] + k
        first_in_part = np.cumsum(per_term) - per_term
        pos = np.repeat(offset[terms] - first_in_part, per_term)
        pos += np.arange(len(pos), dtype=np.int64)
        out_rows[pos] = rows
        out_tf[pos] = tf
        offset[terms] += per_term
        del live, per_term, rows, tf, pos, first_in_part
    # dense: a slot for every term id (empty for terms without live postings), O(1) lookups
    return Postings(np.arange(n_terms, dtype=np.int32), starts, out_rows, out_tf)


@dataclass
class StringTable:
    """Strings as one blob + offsets, with a hash lookup (see the module docstring)."""

    blob: np.ndarray  # uint8
    offsets: np.ndarray  # int64, len + 1
    hashes: np.ndarray  # uint64 per entry
    order: np.ndarray  # int64: entries sorted by hash
    _sorted: np.ndarray | None = field(default=None, repr=False)
    _view: memoryview | None = field(default=None, repr=False)

    @classmethod
    def from_strings(cls, strings: Sequence[str]) -> StringTable:
        data = [s.encode("utf-8", "surrogatepass") for s in strings]
        offsets = np.zeros(len(data) + 1, dtype=np.int64)
        np.cumsum([len(d) for d in data], out=offsets[1:])
        blob = np.frombuffer(b"".join(data), dtype=np.uint8)
        hashes = blob_hashes(blob, offsets)
        return cls(blob, offsets, hashes, np.argsort(hashes, kind="stable"))

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i: int) -> str:
        return self.blob[self.offsets[i] : self.offsets[i + 1]].tobytes().decode("utf-8", "surrogatepass")

    def strings(self, rows: np.ndarray) -> list[str]:
        """The entries ``rows``, in that order: one gather of their offsets, each string decoded
        straight from the blob's buffer (what a query does for its hits)."""
        rows = np.asarray(rows, dtype=np.int64)
        if not len(rows):
            return []
        offsets = np.asarray(self.offsets)
        view = self._view
        if view is None:
            view = self._view = memoryview(np.ascontiguousarray(self.blob).data)
        return [str(view[a:b], "utf-8", "surrogatepass") for a, b in zip(offsets[rows].tolist(), offsets[rows + 1].tolist(), strict=True)]

    def gather(self, rows: np.ndarray) -> StringTable:
        """The entries ``rows``, in that order (bytes and hashes copied, nothing decoded)."""
        rows = np.asarray(rows, dtype=np.int64)
        offsets = np.asarray(self.offsets)
        starts, sizes = offsets[rows], offsets[rows + 1] - offsets[rows]
        new_offsets = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(sizes, out=new_offsets[1:])
        index = np.repeat(starts - new_offsets[:-1], sizes) + np.arange(int(new_offsets[-1]), dtype=np.int64)
        hashes = np.asarray(self.hashes)[rows].astype(np.uint64)
        return StringTable(np.asarray(self.blob)[index], new_offsets, hashes, np.argsort(hashes, kind="stable"))

    def extend(self, strings: Sequence[str]) -> StringTable:
        """This table followed by ``strings``."""
        if not strings:
            return self
        more = StringTable.from_strings(strings)
        offsets = np.concatenate([np.asarray(self.offsets), np.asarray(more.offsets[1:]) + int(self.offsets[-1])])
        hashes = np.concatenate([np.asarray(self.hashes, dtype=np.uint64), more.hashes])
        return StringTable(np.concatenate([np.asarray(self.blob), more.blob]), offsets, hashes, np.argsort(hashes, kind="stable"))

    @property
    def sorted_hashes(self) -> np.ndarray:
        if self._sorted is None:
            self._sorted = np.asarray(self.hashes)[np.asarray(self.order)]
        return self._sorted

    def find(self, s: str) -> list[int]:
        """Every entry equal to ``s`` (ascending)."""
        return self.find_many([s])[0]

    def find_many(self, strings: Sequence[str]) -> list[list[int]]:
        """``find`` for each of ``strings`` (one hash pass and one sorted search for all)."""
        if not len(self) or not strings:
            return [[] for _ in strings]
        wanted = np.asarray(stable_hashes(list(strings)), dtype=np.uint64)
        keys = self.sorted_hashes
        los = np.searchsorted(keys, wanted, side="left")
        his = np.searchsorted(keys, wanted, side="right")
        order = self.order
        return [
            sorted(int(r) for r in order[lo:hi] if self[int(r)] == s) if hi > lo else []
            for s, lo, hi in zip(strings, los.tolist(), his.tolist(), strict=True)
        ]


_KIND = {bool: "b", int: "i", float: "f", str: "s", type(None): "n"}


def _value_key(value: Any) -> tuple[str, Any]:
    return (_KIND.get(type(value), "s"), value if type(value) in _KIND else str(value))


@dataclass
class MetaColumns:
    """Dictionary-encoded metadata of a segment's rows (see the module docstring)."""

    n_rows: int
    fields: dict[str, int]  # field -> column number
    codes: list[np.ndarray]  # per column: int32 code per row, -1 = absent
    values: Sequence[list[Any] | None]  # per column: distinct values (None until loaded)
    loader: Any = None  # column number -> list of values (lazy, for saved segments)

    def column_values(self, col: int) -> list[Any]:
        vals = self.values[col]
        if vals is None:
            vals = self.loader(col)
            assert isinstance(self.values, list)
            self.values[col] = vals
        return vals

    def gather(self, rows: np.ndarray) -> MetaColumns:
        """The rows ``rows``, in that order (codes copied; the value lists are shared)."""
        rows = np.asarray(rows, dtype=np.int64)
        values = [self.column_values(col) for col in range(len(self.codes))]
        codes = [np.asarray(c)[rows] for c in self.codes]
        return MetaColumns(len(rows), dict(self.fields), codes, values)

    def extend(self, metas: Sequence[Mapping[str, Any]]) -> MetaColumns:
        """These rows followed by ``metas`` (new values appended to the columns' lists)."""
        if not metas:
            return self
        n = self.n_rows + len(metas)
        fields = dict(self.fields)
        codes = [np.concatenate([np.asarray(c), np.full(len(metas), -1, dtype=np.int32)]) for c in self.codes]
        values = [list(self.column_values(col)) for col in range(len(self.codes))]
        index: list[dict[tuple[str, Any], int] | None] = [None] * len(codes)
        for i, meta in enumerate(metas):
            row = self.n_rows + i
            for name, value in meta.items():
                col = fields.get(name)
                if col is None:
                    col = fields[name] = len(codes)
                    codes.append(np.full(n, -1, dtype=np.int32))
                    values.append([])
                    index.append({})
                known = index[col]
                if known is None:
                    known = index[col] = {}
                    for j, v in enumerate(values[col]):
                        known.setdefault(_value_key(v), j)
                key = _value_key(value)
                code = known.get(key)
                if code is None:
                    code = known[key] = len(values[col])
                    values[col].append(value)
                codes[col][row] = code
        return MetaColumns(n, fields, codes, values)

    def mask(self, conditions: Sequence[FilterCondition], cache: dict[Any, np.ndarray] | None = None) -> np.ndarray:
        """Rows passing every condition (a condition on an absent field passes no row)."""
        mask = np.ones(self.n_rows, dtype=bool)
        for cond in conditions:
            col = self.fields.get(cond.field)
            if col is None:
                return np.zeros(self.n_rows, dtype=bool)
            key = (col, cond.op, repr(cond.value))
            allowed = None if cache is None else cache.get(key)
            if allowed is None:
                vals = self.column_values(col)
                allowed = np.zeros(len(vals) + 1, dtype=bool)  # the last slot: code -1, absent
                allowed[:-1] = [cond.matches({cond.field: v}) for v in vals]
                if cache is not None:
                    cache[key] = allowed
            mask &= allowed[np.asarray(self.codes[col])]
        return mask


@dataclass
class Segment:
    """The merged, immutable base of the index: postings over rows ``0..n-1`` and the rows'
    data. ``seq`` is the store change sequence it reflects, ``marker`` what identifies that
    change in the store (``ChunkStore.change_marker``)."""

    postings: Postings
    vocab: StringTable  # term id -> token (every term id below len(vocab))
    chunk_ids: StringTable
    doc_ids: StringTable
    lengths: np.ndarray  # float64 tokens per row
    versions: np.ndarray  # int32
    meta: MetaColumns
    seq: int = 0
    marker: str | None = None

    @property
    def n_rows(self) -> int:
        return len(self.lengths)

    @classmethod
    def empty(cls) -> Segment:
        none = StringTable.from_strings([])
        return cls(Postings.empty(), none, none, none, np.zeros(0), np.zeros(0, dtype=np.int32), MetaColumns(0, {}, [], []))


# -- files ------------------------------------------------------------------------------------
_ARRAYS = {
    "terms": ("postings", "terms"), "indptr": ("postings", "indptr"), "rows": ("postings", "rows"),
    "tf": ("postings", "tf"),
}
_TABLES = ("vocab", "chunk_ids", "doc_ids")


def save_segment(segment: Segment, directory: str) -> str:
    """Write ``segment`` under ``directory`` and make it the current one; returns its path.
    Older segment directories are removed (a process still mapping one keeps its pages)."""
    os.makedirs(directory, exist_ok=True)
    name = f"seg-{segment.seq}-{uuid.uuid4().hex[:12]}"
    tmp = os.path.join(directory, name + ".tmp")
    os.makedirs(tmp)
    p = segment.postings
    for key, arr in (("terms", p.terms), ("indptr", p.indptr), ("rows", p.rows), ("tf", p.tf),
                     ("lengths", segment.lengths), ("versions", segment.versions)):
        np.save(os.path.join(tmp, f"{key}.npy"), np.ascontiguousarray(arr))
    for table in _TABLES:
        t: StringTable = getattr(segment, table)
        np.asarray(t.blob).tofile(os.path.join(tmp, f"{table}.bin"))
        for part in ("offsets", "hashes", "order"):
            np.save(os.path.join(tmp, f"{table}.{part}.npy"), np.ascontiguousarray(getattr(t, part)))
    meta = segment.meta
    for col in meta.fields.values():
        np.save(os.path.join(tmp, f"meta{col}.npy"), np.ascontiguousarray(meta.codes[col]))
        with open(os.path.join(tmp, f"meta{col}.json"), "w", encoding="utf-8") as fh:
            json.dump(meta.column_values(col), fh, ensure_ascii=False)
    manifest = {
        "format": FORMAT, "seq": segment.seq, "marker": segment.marker, "n_rows": segment.n_rows,
        "postings": len(p), "fields": meta.fields, **segment_stats(segment),
    }
    with open(os.path.join(tmp, "manifest.json"), "w", encoding="utf-8") as fh:
        json.dump(manifest, fh, ensure_ascii=False)
    final = os.path.join(directory, name)
    os.rename(tmp, final)
    pointer = os.path.join(directory, f"CURRENT.{uuid.uuid4().hex[:8]}")
    with open(pointer, "w", encoding="utf-8") as fh:
        fh.write(name)
    os.replace(pointer, os.path.join(directory, "CURRENT"))
    _remove_old(directory, keep=name)
    return final


def _remove_old(directory: str, keep: str) -> None:
    """Remove the segments older saves left. Several processes may save into one directory
    (the PostgreSQL follower on one host): another's segment being written (``.tmp``) or just
    made current is left alone until it is a minute old (an hour for an unfinished one)."""
    try:
        with open(os.path.join(directory, "CURRENT"), encoding="utf-8") as fh:
            current = fh.read().strip()
    except OSError:
        current = keep
    now = time.time()
    for other in os.listdir(directory):
        if other in (keep, current) or not other.startswith("seg-"):
            continue
        path = os.path.join(directory, other)
        try:
            age = now - os.stat(path).st_mtime
        except OSError:
            continue
        if age > (_TMP_GRACE_S if other.endswith(".tmp") else _OLD_GRACE_S):
            shutil.rmtree(path, ignore_errors=True)
        elif not other.endswith(".tmp"):
            log.debug("segment %s kept for now: another process may have just saved it", path)


_OLD_GRACE_S = 60.0
_TMP_GRACE_S = 3600.0


def segment_stats(segment: Segment) -> dict[str, int]:
    """What a manifest records and a load recomputes: the rows' total length, the sum of every
    posting's term frequency (equal to it: a row's length is its tokens), the vocabulary size
    and the digest of the rows' chunk versions (:func:`version_digest`)."""
    return {
        "total_len": int(np.sum(segment.lengths)),
        "tf_total": int(np.sum(segment.postings.tf, dtype=np.int64)),
        "vocab": len(segment.vocab),
        "digest": version_digest(segment.chunk_ids.hashes, segment.versions),
    }


def load_segment(directory: str, name: str | None = None) -> Segment | None:
    """The current segment under ``directory`` (or the one called ``name``), memory-mapped;
    ``None`` when there is none or it cannot be used (:func:`read_segment` says why)."""
    try:
        return read_segment(directory, name)
    except SegmentError:
        return None


def read_segment(directory: str, name: str | None = None) -> Segment:
    """The current segment under ``directory`` (or the one called ``name``), memory-mapped,
    after checking it against its manifest: row and posting counts, total length, the sum of
    term frequencies, term ids within the vocabulary, rows within the segment and the digest
    of its chunk versions. Raises :class:`SegmentError` (the caller rebuilds)."""
    try:
        if name is None:
            try:
                with open(os.path.join(directory, "CURRENT"), encoding="utf-8") as fh:
                    name = fh.read().strip()
            except FileNotFoundError as exc:
                raise SegmentError("missing", f"no saved index in {directory}") from exc
        path = os.path.join(directory, name)
        with open(os.path.join(path, "manifest.json"), encoding="utf-8") as fh:
            manifest = json.load(fh)
        if manifest.get("format") != FORMAT:
            raise SegmentError("format", f"{path} is {manifest.get('format')!r}, this version reads {FORMAT!r}")

        def arr(name: str) -> np.ndarray:  # a plain ndarray view of the map (no memmap overhead)
            return np.asarray(np.load(os.path.join(path, f"{name}.npy"), mmap_mode="r"))

        def table(name: str) -> StringTable:
            blob_path = os.path.join(path, f"{name}.bin")
            size = os.path.getsize(blob_path)
            blob = np.asarray(np.memmap(blob_path, dtype=np.uint8, mode="r")) if size else np.zeros(0, dtype=np.uint8)
            return StringTable(blob, arr(f"{name}.offsets"), arr(f"{name}.hashes"), arr(f"{name}.order"))

        fields = {str(k): int(v) for k, v in manifest["fields"].items()}
        codes = [np.zeros(0, dtype=np.int32)] * len(fields)
        for col in fields.values():
            codes[col] = arr(f"meta{col}")

        def load_values(col: int) -> list[Any]:
            with open(os.path.join(path, f"meta{col}.json"), encoding="utf-8") as fh:
                values: list[Any] = json.load(fh)
            return values

        n = int(manifest["n_rows"])
        meta = MetaColumns(n, fields, codes, [None] * len(fields), load_values)
        segment = Segment(
            Postings(arr("terms"), arr("indptr"), arr("rows"), arr("tf")),
            table("vocab"), table("chunk_ids"), table("doc_ids"),
            np.array(arr("lengths")), np.array(arr("versions")), meta,
            int(manifest["seq"]), manifest.get("marker"),
        )
    except SegmentError:
        raise
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SegmentError("unreadable", f"{directory}: {exc}") from exc
    _check(segment, manifest, path)
    return segment


def _check(segment: Segment, manifest: Mapping[str, Any], path: str) -> None:
    """Raise :class:`SegmentError` ``corrupt`` unless ``segment`` agrees with its manifest (and
    a sample of each string table's hashes with its strings)."""
    p, n = segment.postings, segment.n_rows
    at_none = np.zeros(0, dtype=np.int64)
    problems = []
    if len(segment.chunk_ids) != n or len(segment.doc_ids) != n or len(segment.versions) != n or len(p) != int(manifest["postings"]):
        problems.append("row or posting counts differ from the manifest")
    elif len(p.indptr) != len(p.terms) + 1 or (len(p.indptr) and int(p.indptr[-1]) != len(p)):
        problems.append("the posting offsets do not cover the postings")
    else:
        stats = segment_stats(segment)
        problems += [f"{key} {stats[key]} where the manifest says {manifest.get(key)}" for key in stats if stats[key] != manifest.get(key)]
        if stats["tf_total"] != stats["total_len"]:
            problems.append(f"term frequencies add up to {stats['tf_total']}, the rows' lengths to {stats['total_len']}")
        if len(p) and (int(np.max(p.terms)) >= len(segment.vocab) or int(np.max(p.rows)) >= n or int(np.min(p.rows)) < 0):
            problems.append("a posting names a term or a row the segment does not have")
        for name in _TABLES:  # a sample of each table's stored hashes against its strings
            table: StringTable = getattr(segment, name)
            at = np.unique(np.linspace(0, len(table) - 1, min(len(table), 1024)).astype(np.int64)) if len(table) else at_none
            offsets = np.asarray(table.offsets)
            starts, ends = offsets[at], offsets[at + 1]
            picked = np.concatenate([np.asarray(table.blob)[a:b] for a, b in zip(starts.tolist(), ends.tolist(), strict=True)] or [at_none.astype(np.uint8)])
            sub = np.zeros(len(at) + 1, dtype=np.int64)
            np.cumsum(ends - starts, out=sub[1:])
            if not (blob_hashes(picked, sub) == np.asarray(table.hashes)[at]).all():
                problems.append(f"the {name} table's hashes do not match its strings")
    if problems:
        raise SegmentError("corrupt", f"{path}: " + "; ".join(problems))
