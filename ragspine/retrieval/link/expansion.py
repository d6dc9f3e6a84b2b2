"""Parent and window expansion at the exit: what a child hit adds for generation.

A chunker that records a parent (``parent_child``, ``laws``, ``qa``, ``book``) or a window
(``sentence_window``) stores it with each child: ``window_text`` (the parent's or window's
text) and ``parent_locator`` (its real extent). A snippet keeps the child's own ``text``,
``chunk_id``, ``source_locator`` and scores — citations point at the child, never at an
aggregate — and the expansion travels next to it:

* ``prompt_text``: the parent or window text, for the prompt only (never evidence);
* ``parent_locator``: where that text is in the source (the back-reference);
* ``prompt_text_in``: on the second and later hits under the same parent (same library,
  document, version and extent), the ``chunk_id`` of the snippet above it that carries the
  block — a snippet list holds each parent block once and every child citation.

RESTRICTED content never reaches a prompt through an expansion: a RESTRICTED child is no
snippet at all (the exit drops it before this step), and a parent or window that overlaps a
RESTRICTED chunk of the same document version gives no ``prompt_text`` to any child
(``expansion_withheld: True`` says why it is missing). Which chunks are RESTRICTED is read
from the chunk store in one statement for all the documents with an expansion; a list
without expansions costs nothing and is left exactly as it was.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from ragspine.retrieval.chunking.chunk_store import ChunkStore, RestrictedSpans, StoredChunk, StreamingReads
from ragspine.retrieval.sensitivity import is_restricted
from ragspine.retrieval.snippet import Snippet
from ragspine.retrieval.types import RetrievalResult

__all__ = ["expansion_key", "extent_of", "share_expansions", "withheld_extents"]

_CHAR = re.compile(r"#char=(\d+),(\d+)$")


def extent_of(locator: str) -> tuple[int, int] | None:
    """``(start, end)`` of an RFC 5147 ``#char=start,end`` locator (``None`` if it is not one)."""
    match = _CHAR.search(locator or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


def _overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def withheld_extents(results: Sequence[RetrievalResult], store: ChunkStore | None) -> set[tuple[str, int, str]]:
    """``(doc_id, version, parent_locator)`` of the results' expansions that overlap a
    RESTRICTED chunk of the same document version (one read for all their documents);
    without a store to check against, every expansion (fails closed)."""
    expanding = [r.chunk for r in results if r.chunk.window_text]
    if not expanding:
        return set()
    if store is None:
        return {(c.doc_id, c.version, c.parent_locator) for c in expanding}
    doc_ids = sorted({c.doc_id for c in expanding})
    restricted: dict[tuple[str, int], list[tuple[int, int]]] = {}
    if isinstance(store, RestrictedSpans):  # only the RESTRICTED rows are read
        restricted = store.restricted_spans(doc_ids)
    else:
        siblings: Iterable[StoredChunk]
        if isinstance(store, StreamingReads):
            siblings = store.iter_active_docs(doc_ids)
        else:
            siblings = [c for d in doc_ids for c in store.iter_chunks(doc_id=d)]
        for c in siblings:
            if is_restricted(c.sensitivity):
                restricted.setdefault((c.doc_id, c.version), []).append((c.char_start, c.char_end))
    out = set()
    for c in expanding:
        spans = restricted.get((c.doc_id, c.version))
        if not spans:
            continue
        extent = extent_of(c.parent_locator)
        if extent is None or any(_overlaps(extent, s) for s in spans):  # an extent we cannot read is withheld too
            out.add((c.doc_id, c.version, c.parent_locator))
    return out


def expansion_key(snippet: Snippet) -> tuple[Any, ...] | None:
    """What makes two snippets' expansions the same block (``None``: no expansion)."""
    if "prompt_text" not in snippet or "parent_locator" not in snippet:
        return None  # no expansion (a compression of the chunk's own text is its own)
    return (snippet.get("library_id"), snippet.get("doc_id"), snippet.get("version"), snippet.get("parent_locator"))


def share_expansions(snippets: list[Snippet]) -> list[Snippet]:
    """Each parent block once: the first snippet under a parent keeps ``prompt_text``, the
    later ones get ``prompt_text_in`` = that snippet's ``chunk_id`` instead (in place)."""
    carrier: dict[tuple[Any, ...], str] = {}
    for snippet in snippets:
        key = expansion_key(snippet)
        if key is None:
            continue
        if key in carrier:
            del snippet["prompt_text"]
            snippet["prompt_text_in"] = carrier[key]
        else:
            carrier[key] = snippet["chunk_id"]
    return snippets
