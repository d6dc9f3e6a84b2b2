"""``VisualIndex``: a library's PDF pages as patch vectors, built once, saved, searched by MaxSim.

**Build** (:meth:`VisualIndex.build`, ``ragspine visual build``): for each active document of
the library's chunk store whose file (the ``source_locator`` its chunks were read from) is a
PDF that still exists — and is still the document stored: read again as ingest reads it (its
sidecar too), it is not RESTRICTED now and its text is its chunks' — every page is rendered
(:func:`~ragspine.retrieval.visual.render.render_pages`, ``dpi``) and embedded by the
:class:`~ragspine.retrieval.visual.base.VisualEmbedder`. A document with any RESTRICTED active
chunk is **never opened**: its pages are neither rendered, embedded nor stored (fail closed: one
RESTRICTED chunk withholds the whole file, as the label is the document's); a file changed since
its ingest is skipped, so the pages rendered are those of the document whose label was checked.
What was skipped, and why, is counted in ``skipped``.

**Search** (:meth:`VisualIndex.search`): the query's token vectors against each page's patch
vectors, scored by the ColBERT path's MaxSim
(:func:`~ragspine.retrieval.rerank.maxsim.maxsim_many`), best first; pages scoring 0 or less are
no hint. Given the store, a hit whose document is no longer active, or is RESTRICTED now (it was
re-ingested with that label after the build), is dropped before it is returned. The results are
:class:`~ragspine.retrieval.visual.base.VisualHint` — page references, never snippets.

**Files** (:meth:`save` / :meth:`load`): ``index.json`` (format, library, the model's
fingerprint, dpi, the change the store was at, the pages), ``patches.npy`` (float16
``[all patches, dim]``) and ``offsets.npy`` (int64, page ``i``'s rows are
``offsets[i]:offsets[i+1]``) — plain ``.npy`` and JSON, no pickle — in the store's directory for
derived indexes (``<db file>.visual/<library hash>/`` for SQLite: :func:`visual_dir`). An index
built by another model is refused at search time (rebuild it).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable

import numpy as np

from ragspine.errors import ConfigError
from ragspine.retrieval.rerank.maxsim import maxsim_many
from ragspine.retrieval.sensitivity import is_restricted
from ragspine.retrieval.visual.base import VisualEmbedder, VisualHint, page_locator
from ragspine.retrieval.visual.render import DEFAULT_DPI, check_dpi, render_pages

if TYPE_CHECKING:
    from ragspine.readers.base import ReaderLimits
    from ragspine.retrieval.chunking.chunk_store import ChunkStore, StoredChunk

FORMAT = 1
DEFAULT_MAX_PAGES = 500  # pages of one PDF the build renders (a longer one: its first pages)
DEFAULT_TOP_K = 3


@dataclass(frozen=True)
class PageEntry:
    doc_id: str
    title: str
    page: int  # 1-based
    source: str  # the file, as the ingest was given it


@dataclass(frozen=True)
class _Doc:
    doc_id: str
    title: str
    source: str


def _is_pdf(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(5) == b"%PDF-"
    except OSError:
        return False


def _skip(skipped: dict[str, int], why: str) -> None:
    skipped[why] = skipped.get(why, 0) + 1


def _read_now(source: str, chunks: list[StoredChunk], limits: ReaderLimits | None, max_bytes: int | None) -> str | None:
    """Why the file at ``source`` is not (now) the document the store holds — ``None`` when it
    is: read again as ingest reads it (its sidecar too), it must not be RESTRICTED now, and every
    active chunk's text must be its text at the chunk's offsets."""
    from pathlib import Path

    from ragspine.documents import MAX_FILE_BYTES, read_document
    from ragspine.errors import IngestError

    try:
        doc = read_document(Path(source), max_bytes=max_bytes or MAX_FILE_BYTES, limits=limits)
    except IngestError:
        return "unreadable"
    if is_restricted(doc.sensitivity):
        return "restricted"
    start = doc.body_offset
    if any(doc.text[c.char_start - start:c.char_end - start] != c.text for c in chunks):
        return "changed_since_ingest"
    return None


def library_pdfs(store: ChunkStore, skipped: dict[str, int], *, limits: ReaderLimits | None = None,
                 max_bytes: int | None = None) -> list[_Doc]:
    """The active documents of ``store`` the build may render: not RESTRICTED (no active chunk
    labelled so), read from one file that is a PDF, is still there, and is still the document
    stored (:func:`_read_now`: read again, it is not RESTRICTED now and its text is the chunks');
    ``skipped`` counts the rest by reason. ``limits``/``max_bytes``: the ingest's (the settings')."""
    from ragspine.documents import source_of

    out = []
    for doc_id in store.doc_ids():
        chunks = store.iter_chunks(doc_id=doc_id)
        if not chunks:
            continue
        if any(is_restricted(c.sensitivity) for c in chunks):
            _skip(skipped, "restricted")  # never opened
            continue
        sources = {source_of(c.source_locator) for c in chunks}
        source = sources.pop() if len(sources) == 1 else ""
        if not source or not os.path.isfile(source):
            _skip(skipped, "no_file")
        elif not _is_pdf(source):
            _skip(skipped, "not_pdf")
        elif (why := _read_now(source, chunks, limits, max_bytes)) is not None:
            _skip(skipped, why)
        else:
            out.append(_Doc(doc_id, chunks[0].title, source))
    return out


def visual_dir(store: ChunkStore) -> str | None:
    """Where ``store``'s library keeps its visual index (``None``: the store has no place for
    derived files, e.g. an in-memory database)."""
    from ragspine.retrieval.chunking.chunk_store import PersistentStore

    return store.persist_dir("visual") if isinstance(store, PersistentStore) else None


def _change_seq(store: ChunkStore) -> int | None:
    from ragspine.retrieval.chunking.chunk_store import ChangeLog

    return store.change_seq() if isinstance(store, ChangeLog) else None


@dataclass
class VisualIndex:
    """See the module docstring."""

    library_id: str
    fingerprint: str
    dpi: int
    pages: list[PageEntry]
    patches: np.ndarray  # float16 [all patches, dim]
    offsets: np.ndarray  # int64 [len(pages) + 1]
    change_seq: int | None = None
    skipped: dict[str, int] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.pages)

    def page_patches(self, i: int) -> np.ndarray:
        return self.patches[int(self.offsets[i]):int(self.offsets[i + 1])]

    @classmethod
    def build(cls, store: ChunkStore, embedder: VisualEmbedder, *, dpi: int = DEFAULT_DPI, max_pages: int = DEFAULT_MAX_PAGES,
              batch_pages: int = 8, limits: ReaderLimits | None = None, max_bytes: int | None = None) -> VisualIndex:
        """Render and embed the library's PDF pages (see the module docstring); ``limits`` and
        ``max_bytes``: what the ingest reads (``ReaderLimits.from_settings``, ``max_file_bytes``)."""
        check_dpi(dpi)
        skipped: dict[str, int] = {}
        seq = _change_seq(store)
        pages: list[PageEntry] = []
        blocks: list[np.ndarray] = []
        for doc in library_pdfs(store, skipped, limits=limits, max_bytes=max_bytes):
            batch: list[tuple[int, Any]] = []
            for number, image in render_pages(doc.source, dpi=dpi, max_pages=max_pages):
                batch.append((number, image))
                if len(batch) == batch_pages:
                    blocks += _embed(embedder, doc, batch, pages)
                    batch = []
            blocks += _embed(embedder, doc, batch, pages)
        dim = next((b.shape[1] for b in blocks if b.size), 0)
        sizes = [len(b) for b in blocks]
        patches = np.concatenate([b.reshape(-1, dim) for b in blocks]).astype(np.float16) if blocks else np.zeros((0, 0), np.float16)
        offsets = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)]).astype(np.int64)
        return cls(store.library_id, embedder.fingerprint(), dpi, pages, patches, offsets, seq, skipped)

    def search(self, embedder: VisualEmbedder, query: str, *, top_k: int = DEFAULT_TOP_K,
               store: ChunkStore | None = None, hidden: Callable[[str], bool] | None = None) -> list[VisualHint]:
        """The pages that match ``query`` best, as hints (see the module docstring); ``hidden``:
        the documents the asker may not read (their pages are skipped before the ``top_k`` cut)."""
        if embedder.fingerprint() != self.fingerprint:
            raise ConfigError(f"the visual index of library {self.library_id!r} was built by another model ({self.fingerprint}):"
                              f" rebuild it with `ragspine visual build --library {self.library_id}`")
        if top_k <= 0 or not self.pages:
            return []
        q = np.asarray(embedder.embed_query(query), dtype=np.float32)
        scores = maxsim_many(q, [self.page_patches(i).astype(np.float32) for i in range(len(self.pages))])
        order = sorted((i for i, s in enumerate(scores) if s > 0), key=lambda i: (-scores[i], i))
        hints: list[VisualHint] = []
        live: dict[str, bool] = {}
        for i in order:
            entry = self.pages[i]
            if store is not None and not live.setdefault(entry.doc_id, _still_open(store, entry.doc_id)):
                continue
            if hidden is not None and hidden(entry.doc_id):
                continue
            hints.append(VisualHint(entry.doc_id, entry.title, self.library_id, entry.page, scores[i],
                                    page_locator(entry.source, entry.page)))
            if len(hints) == top_k:
                break
        return hints

    # -- files ---------------------------------------------------------------------------------
    def save(self, directory: str | os.PathLike[str]) -> None:
        where = Path(directory)
        where.mkdir(parents=True, exist_ok=True)
        head = {"format": FORMAT, "library_id": self.library_id, "fingerprint": self.fingerprint, "dpi": self.dpi,
                "change_seq": self.change_seq, "skipped": self.skipped,
                "pages": [[p.doc_id, p.title, p.page, p.source] for p in self.pages]}
        for name, array in (("patches.npy", self.patches), ("offsets.npy", self.offsets)):
            tmp = where / f".{name}.tmp"
            with open(tmp, "wb") as fh:
                np.save(fh, array, allow_pickle=False)
            os.replace(tmp, where / name)
        tmp = where / ".index.json.tmp"
        tmp.write_text(json.dumps(head, ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, where / "index.json")  # last: a reader sees a whole index or the previous one

    @classmethod
    def load(cls, directory: str | os.PathLike[str]) -> VisualIndex | None:
        """The index saved in ``directory``; ``None`` when there is none."""
        where = Path(directory)
        if not (where / "index.json").is_file():
            return None
        head = json.loads((where / "index.json").read_text(encoding="utf-8"))
        if head.get("format") != FORMAT:
            raise ConfigError(f"{where}: visual index format {head.get('format')!r}, this version reads {FORMAT}: rebuild it")
        patches = np.load(where / "patches.npy", mmap_mode="r", allow_pickle=False)
        offsets = np.load(where / "offsets.npy", allow_pickle=False)
        pages = [PageEntry(str(d), str(t), int(p), str(s)) for d, t, p, s in head["pages"]]
        if len(offsets) != len(pages) + 1 or (len(pages) and int(offsets[-1]) != len(patches)):
            raise ConfigError(f"{where}: the visual index's files do not agree (rewritten while read?):"
                              f" rebuild it with `ragspine visual build --library {head['library_id']}`")
        return cls(head["library_id"], head["fingerprint"], int(head["dpi"]), pages, patches, offsets, head.get("change_seq"),
                   dict(head.get("skipped", {})))


def _embed(embedder: VisualEmbedder, doc: _Doc, batch: list[tuple[int, Any]], pages: list[PageEntry]) -> Iterable[np.ndarray]:
    if not batch:
        return []
    vectors = embedder.embed_pages([image for _, image in batch])
    pages.extend(PageEntry(doc.doc_id, doc.title, number, doc.source) for number, _ in batch)
    return [np.asarray(v, dtype=np.float32) for v in vectors]


def _still_open(store: ChunkStore, doc_id: str) -> bool:
    chunks = store.iter_chunks(doc_id=doc_id)
    return bool(chunks) and not any(is_restricted(c.sensitivity) for c in chunks)
