"""A cited passage, looked up again: what ``ragspine show LOCATOR`` prints.

A locator (``report.pdf#char=1200,1480``, what a snippet's ``source_locator`` holds) or a
``chunk_id`` resolves against one library's **store** — never the file, which may have changed
or be elsewhere: the passage is the text the library holds and cites. The context either side
is rebuilt from the document's other active chunks (their locators place them in the same
text; overlapping chunks agree where they overlap), so it stops where the chunks leave a gap.

RESTRICTED text is never returned: a passage that overlaps a RESTRICTED chunk is refused
(:class:`PassageRestricted`), and the context stops at RESTRICTED text, as the link exit
withholds a parent or window that overlaps it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ragspine.errors import RagspineError
from ragspine.retrieval.chunking.chunk_store import ChunkStore, StoredChunk, StreamingReads
from ragspine.retrieval.link.expansion import extent_of
from ragspine.retrieval.sensitivity import is_restricted
from ragspine.retrieval.snippet import snippet_pages

__all__ = ["Passage", "PassageNotFound", "PassageRestricted", "find_passage", "parse_locator"]

DEFAULT_CONTEXT_CHARS = 200
GAP = "…"  # in a passage's context: text the store does not hold here, or that is not shown


class PassageNotFound(RagspineError, LookupError):
    """A locator that names no text this library holds."""


class PassageRestricted(RagspineError, PermissionError):
    """A locator whose text is (or overlaps) RESTRICTED: it is never shown."""


@dataclass(frozen=True)
class Passage:
    """The cited text with up to ``context`` characters of the document's text either side."""

    locator: str
    library_id: str
    doc_id: str
    title: str
    sensitivity: str
    text: str
    before: str  # the held text just before the passage; GAP marks text not shown (past the context, a gap, RESTRICTED)
    after: str  # ... and just after
    page: int | None = None  # 1-based; None for a document without pages
    page_end: int | None = None
    chunk_id: str = ""  # the chunk cited, when the locator is exactly one chunk's


def parse_locator(locator: str) -> tuple[str, int, int] | None:
    """``(source, start, end)`` of ``source#char=start,end`` (``None``: not such a locator)."""
    extent = extent_of(locator)
    if extent is None or extent[0] >= extent[1]:
        return None
    return locator.rsplit("#char=", 1)[0], extent[0], extent[1]


def find_passage(store: ChunkStore, locator: str, *, context: int = DEFAULT_CONTEXT_CHARS) -> Passage | None:
    """The passage ``locator`` (a ``path#char=a,b`` locator or a ``chunk_id``) cites in ``store``
    (its active chunks); ``None`` when no document of the store was read from that source (or no
    chunk has that id). Raises :class:`PassageRestricted` for RESTRICTED text and
    :class:`PassageNotFound` for a span the document's chunks do not hold."""
    parsed = parse_locator(locator)
    if parsed is None:
        found = store.get_chunks([locator]) if locator else []
        if not found:
            return None
        parsed = parse_locator(found[0].source_locator)
        if parsed is None:
            raise PassageNotFound(f"chunk {locator!r} has no character locator ({found[0].source_locator!r})")
    source, start, end = parsed
    chunks = _document_chunks(store, source)
    if not chunks:
        return None
    return _passage(locator, chunks, start, end, max(context, 0))


def _document_chunks(store: ChunkStore, source: str) -> list[tuple[StoredChunk, int, int]]:
    """The active chunks read from ``source``, with their extents: of one document, the first
    found (a default ``doc_id`` is a tail of the path, so those are tried before a full scan)."""
    ids = set(store.doc_ids())
    parts = source.replace("\\", "/").split("/")
    tails = ["/".join(parts[i:]) for i in range(len(parts))]
    for doc_id in [t for t in tails if t in ids]:
        found = _of_source(store.iter_chunks(doc_id=doc_id), source)
        if found:
            return found
    every: Iterable[StoredChunk] = store.iter_active() if isinstance(store, StreamingReads) else store.iter_chunks()
    found = _of_source(every, source)
    first = found[0][0].doc_id if found else None
    return [f for f in found if f[0].doc_id == first]


def _of_source(chunks: Iterable[StoredChunk], source: str) -> list[tuple[StoredChunk, int, int]]:
    out = []
    for chunk in chunks:
        parsed = parse_locator(chunk.source_locator)
        if parsed is not None and parsed[0] == source and parsed[2] - parsed[1] == len(chunk.text):
            out.append((chunk, parsed[1], parsed[2]))
    return out


def _passage(locator: str, chunks: Sequence[tuple[StoredChunk, int, int]], start: int, end: int, context: int) -> Passage:
    version = max(c.version for c, _, _ in chunks)  # one active version; the newest if a store holds two
    chunks = [(c, a, b) for c, a, b in chunks if c.version == version]
    restricted = [(a, b) for c, a, b in chunks if is_restricted(c.sensitivity)]
    if any(a < end and start < b for a, b in restricted):
        raise PassageRestricted(f"{locator}: RESTRICTED text is never shown")
    segments = _subtract(_merge(_open_texts(chunks)), restricted)
    holding = [(s, text) for s, text in segments if s <= start and end <= s + len(text)]
    first, last = min(a for _, a, _ in chunks), max(b for _, _, b in chunks)
    if not holding:
        raise PassageNotFound(f"{locator}: the library holds no contiguous text at char={start},{end} of this document"
                              f" (its chunks span char={first},{last})")
    seg_start, seg_text = holding[0]
    exact = next((c for c, a, b in chunks if (a, b) == (start, end)), None)
    head = exact or chunks[0][0]
    page, page_end = _pages(chunks, start, end, exact)
    return Passage(
        locator=locator, library_id=head.library_id, doc_id=head.doc_id, title=head.title, sensitivity=head.sensitivity,
        text=seg_text[start - seg_start : end - seg_start],
        before=_window(segments, max(first, start - context), start, goes_on_before=start - context > first, goes_on_after=False),
        after=_window(segments, end, min(last, end + context), goes_on_before=False, goes_on_after=end + context < last),
        page=page, page_end=page_end, chunk_id=exact.chunk_id if exact is not None else "",
    )


def _open_texts(chunks: Sequence[tuple[StoredChunk, int, int]]) -> list[tuple[int, str]]:
    """``(offset, text)`` of the open chunks' texts and of their parent/window texts (which
    also cover what lies between the chunks)."""
    out = []
    for chunk, a, _ in chunks:
        if is_restricted(chunk.sensitivity):
            continue
        out.append((a, chunk.text))
        window = extent_of(chunk.parent_locator) if chunk.window_text else None
        if window is not None and window[1] - window[0] == len(chunk.window_text):
            out.append((window[0], chunk.window_text))
    return out


def _window(segments: Sequence[tuple[int, str]], lo: int, hi: int, *, goes_on_before: bool, goes_on_after: bool) -> str:
    """The held text of ``[lo, hi)``, :data:`GAP` wherever it is not held (between chunks,
    RESTRICTED text) and at an end where the document goes on."""
    out = [GAP] if goes_on_before else []
    at = lo
    for s, text in segments:
        a, b = max(s, lo), min(s + len(text), hi)
        if a >= b:
            continue
        if a > at and out[-1:] != [GAP]:
            out.append(GAP)
        out.append(text[a - s : b - s])
        at = b
    if (at < hi or goes_on_after) and out[-1:] != [GAP]:
        out.append(GAP)
    return "".join(out)


def _pages(chunks: Sequence[tuple[StoredChunk, int, int]], start: int, end: int,
           exact: StoredChunk | None) -> tuple[int | None, int | None]:
    """The pages of ``[start, end)``: the cited chunk's; else what the chunks that hold it agree on
    (the narrowest range), else the range of the chunks it overlaps."""
    if exact is not None:
        pages = snippet_pages(exact.metadata)
        return pages if pages is not None else (None, None)
    holding = [p for c, a, b in chunks if a <= start and end <= b and (p := snippet_pages(c.metadata))]
    if holding:
        lo, hi = max(p[0] for p in holding), min(p[1] for p in holding)
        if lo <= hi:
            return lo, hi
    touching = [p for c, a, b in chunks if a < end and start < b and (p := snippet_pages(c.metadata))]
    if touching:
        return min(p[0] for p in touching), max(p[1] for p in touching)
    return None, None


def _merge(spans: Iterable[tuple[int, str]]) -> list[tuple[int, str]]:
    """Texts placed at their offsets, overlapping or touching ones joined: ``[(start, text)]``."""
    out: list[tuple[int, str]] = []
    for start, text in sorted(spans):
        if out and start <= out[-1][0] + len(out[-1][1]):
            s0, t0 = out[-1]
            if start + len(text) > s0 + len(t0):
                out[-1] = (s0, t0 + text[s0 + len(t0) - start :])
        else:
            out.append((start, text))
    return out


def _subtract(segments: list[tuple[int, str]], holes: Sequence[tuple[int, int]]) -> list[tuple[int, str]]:
    """``segments`` with the ``holes`` (RESTRICTED extents) cut out."""
    for a, b in holes:
        cut: list[tuple[int, str]] = []
        for s, text in segments:
            e = s + len(text)
            if b <= s or e <= a:
                cut.append((s, text))
                continue
            if s < a:
                cut.append((s, text[: a - s]))
            if b < e:
                cut.append((b, text[b - s :]))
        segments = cut
    return segments
