"""Checking a saved lexical index against its chunk store before it is trusted.

A saved base segment (``segments.py``) is first checked against its own manifest when it is
read (counts, total length, term frequencies, term and row bounds, the digest of its chunk
versions). Once the store's changes since the save are replayed onto it, the index is
compared with the store itself:

* **the covered versions**: the number of active, indexed chunks and the digest of their
  ``(chunk_id, version)`` (:func:`~ragspine.retrieval.lexical.segments.version_digest`)
  must equal the store's (:func:`store_digest`, read without the chunks' text where the
  store offers :class:`~ragspine.retrieval.chunking.chunk_store.ActiveVersions`);
* **the content**: a few rows of the saved base, spread over it, are read back from the
  postings — each token and its count, through the vocabulary — and compared with the
  tokens of the same chunk version's index text in the store, and with the row's length.

Any difference and the saved files are not used: the index is rebuilt from the store (and
saved again), the rejection is logged once and counted by reason
(:func:`saved_index_rejections`, exported by the service as
``ragspine_lexical_saved_index_rejected_total{reason}``).
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import compress

import numpy as np

from ragspine.retrieval.chunking.chunk_store import ActiveVersions, ChunkStore, StoredChunk, StreamingReads
from ragspine.retrieval.lexical.segments import Segment, stable_hashes, version_digest
from ragspine.retrieval.sensitivity import is_restricted

log = logging.getLogger(__name__)

#: Rows of a loaded base whose tokens are compared with the store's text.
SAMPLE_ROWS = 24

_rejections: Counter[str] = Counter()
_rejections_lock = threading.Lock()


def saved_index_rejections() -> dict[str, int]:
    """Saved lexical indexes this process refused, by reason: ``format`` (an older file
    layout, e.g. after an upgrade), ``unreadable``, ``corrupt`` (disagrees with its own
    manifest), ``versions`` (covers other chunk versions than the store's) and ``content``
    (a row's tokens differ from its chunk's text)."""
    with _rejections_lock:
        return dict(_rejections)


def reject(reason: str, where: str | None, detail: str) -> None:
    """Count a refused saved index and say why, once (the caller rebuilds and saves anew)."""
    with _rejections_lock:
        _rejections[reason] += 1
    level = logging.INFO if reason == "format" else logging.WARNING
    log.log(level, "lexical index: the saved index in %s is not used (%s: %s); rebuilding it from the store", where, reason, detail)


def _pages(store: ChunkStore) -> Iterator[tuple[Sequence[str], Sequence[int], Sequence[str]]]:
    """The store's active chunks as column pages ``(chunk_ids, versions, sensitivities)``."""
    if isinstance(store, ActiveVersions):
        yield from store.active_versions()
        return
    chunks: Iterable[StoredChunk] = store.iter_active() if isinstance(store, StreamingReads) else store.iter_chunks()
    page: list[StoredChunk] = []
    for chunk in chunks:
        page.append(chunk)
        if len(page) >= 50_000:
            yield [c.chunk_id for c in page], [c.version for c in page], [c.sensitivity for c in page]
            page = []
    yield [c.chunk_id for c in page], [c.version for c in page], [c.sensitivity for c in page]


def store_digest(store: ChunkStore, *, include_restricted: bool = False) -> tuple[int, int]:
    """``(count, digest)`` of the store's active chunks an index holds (RESTRICTED ones left
    out unless ``include_restricted``)."""
    restricted: dict[str, bool] = {}
    count, digest = 0, 0
    for ids, versions, labels in _pages(store):
        if not len(ids):
            continue
        if not include_restricted:
            distinct = set(labels)
            for label in distinct - restricted.keys():
                restricted[label] = is_restricted(label)
            if any(restricted[label] for label in distinct):
                keep = [not restricted[label] for label in labels]
                ids, versions = list(compress(ids, keep)), list(compress(versions, keep))
        if len(ids):
            digest = (digest + version_digest(stable_hashes(ids), np.asarray(versions, dtype=np.int64))) % 2**64
            count += len(ids)
    return count, digest


def row_tokens(segment: Segment, rows: Sequence[int]) -> dict[int, Counter[str]]:
    """The tokens, with their counts, that the postings of ``segment`` hold for ``rows``
    (one pass over the postings, the terms named through the vocabulary)."""
    p = segment.postings
    wanted = np.zeros(segment.n_rows, dtype=bool)
    wanted[np.asarray(rows, dtype=np.int64)] = True
    out: dict[int, Counter[str]] = {int(r): Counter() for r in rows}
    posting_rows = np.asarray(p.rows)
    at = np.flatnonzero(wanted[posting_rows])
    if not len(at):
        return out
    terms = np.asarray(p.terms)[np.searchsorted(np.asarray(p.indptr), at, side="right") - 1]
    for row, tid, tf in zip(posting_rows[at].tolist(), terms.tolist(), np.asarray(p.tf)[at].tolist(), strict=True):
        out[row][segment.vocab[tid]] += tf
    return out


def content_mismatch(
    segment: Segment,
    rows: Sequence[int],
    store: ChunkStore,
    tokens_of: Callable[[StoredChunk], list[str]],
) -> str | None:
    """The first of ``rows`` (active rows of a loaded base) whose postings or length differ
    from its chunk's tokens in the store, described; ``None`` when all agree."""
    if not len(rows):
        return None
    ids = [segment.chunk_ids[int(r)] for r in rows]
    stored = {c.chunk_id: c for c in store.get_chunks(ids)}
    held = row_tokens(segment, rows)
    for row, cid in zip(rows, ids, strict=True):
        chunk = stored.get(cid)
        version = int(segment.versions[int(row)])
        if chunk is None or chunk.version != version:
            return f"chunk {cid!r} version {version} is not active in the store"
        want = Counter(tokens_of(chunk))
        if held[int(row)] != want:
            return f"the postings of chunk {cid!r} do not hold the tokens of its text"
        if float(segment.lengths[int(row)]) != float(want.total()):
            return f"chunk {cid!r} has length {segment.lengths[int(row)]:.0f}, its text {want.total()} tokens"
    return None


def sample_rows(active: np.ndarray, n_base: int, k: int = SAMPLE_ROWS) -> list[int]:
    """Up to ``k`` active rows of the base, spread evenly over it (first and last included)."""
    live = np.flatnonzero(np.asarray(active[:n_base]))
    if len(live) > k:
        live = live[np.linspace(0, len(live) - 1, k).round().astype(np.int64)]
    return [int(r) for r in live]


__all__ = ["content_mismatch", "reject", "row_tokens", "sample_rows", "saved_index_rejections", "store_digest"]
