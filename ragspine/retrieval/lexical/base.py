"""The ``LexicalIndex`` role: BM25 over one library's *active* chunks.

An index follows its chunk store (the in-process one through the store's change log, the
PostgreSQL one by reading what is committed): a new version is searchable after the next
``refresh()``, a retired chunk is gone after it. Statistics (``N``, ``avgdl``, ``df``) are
those of the library's active chunks, so a metadata filter narrows the result without
changing any score.

**RESTRICTED chunks are not indexed.** They are never a candidate, never scored and never
count in the statistics, so nothing a search answers — which chunks, in which order, with
which scores — depends on whether a library holds RESTRICTED documents. (The rerank and
link exits still drop any RESTRICTED result that reaches them; ``InMemoryLexicalIndex(...,
include_restricted=True)`` serves them to prove it.) Every backend passes ``ragspine.testing.LexicalIndexConformance``:
rankings equal :func:`~ragspine.retrieval.lexical.bm25.bm25_scores` over the library.

Implementations: :class:`~ragspine.retrieval.lexical.index.InMemoryLexicalIndex` (the
default) and :class:`~ragspine.stores.postgres.lexical.PostgresLexicalIndex`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Protocol, Sequence, runtime_checkable

from ragspine.retrieval.chunking.chunk_store import ChunkStore, StoredChunk
from ragspine.retrieval.filtering.filters import MetadataFilter

if TYPE_CHECKING:
    from ragspine.config import Settings


@dataclass(frozen=True)
class LexicalHit:
    """One scored chunk: its id, BM25 score and the version the score was computed from."""

    chunk_id: str
    score: float
    version: int


@runtime_checkable
class LexicalIndex(Protocol):
    """BM25 over one library's active chunks (see the module docstring)."""

    def refresh(self) -> None:
        """Catch up with the store: every committed replace is searchable afterwards."""
        ...

    def search(
        self,
        query_tokens: Sequence[str],
        *,
        metadata_filter: MetadataFilter | None = None,
        top_k: int | None = None,
    ) -> list[LexicalHit]:
        """Chunks with a positive BM25 score for ``query_tokens`` (a repeated token counts
        each time), best first, ties by ``chunk_id`` in code-point order; at most ``top_k``
        (``None``: all). ``metadata_filter`` masks rows without changing any score."""
        ...

    def candidates(self, metadata_filter: MetadataFilter | None = None) -> list[tuple[str, int]]:
        """``(chunk_id, version)`` of every active chunk passing ``metadata_filter``."""
        ...

    def __len__(self) -> int:
        """Active chunks of the library (as of the last ``refresh``)."""
        ...


@runtime_checkable
class AclViews(Protocol):
    """An index that enforces document ACLs before scoring: :meth:`view` is the rows a viewer
    may read and BM25's statistics over exactly them (``None``: every row — the search then
    runs as if there were no ACLs); ``search`` and ``candidates`` take it as ``view=``."""

    def view(self, viewer: Any, snapshot: Any = None) -> Any:
        """The view of ``viewer`` (a :class:`~ragspine.security.principals.Viewer`; ``None``: no
        ACL applies) under ``snapshot`` (the index's current ACL snapshot by default)."""
        ...

    def acl_snapshot(self) -> Any:
        """The document ACLs the index enforces now."""
        ...


@runtime_checkable
class VersionedIndex(Protocol):
    """An index that says which store state it reflects and each chunk's active version, so
    the dense leg can skip work at an unchanged state and tell stale vectors apart."""

    @property
    def seq(self) -> int | None:
        """The store change sequence reflected (``None`` before the first refresh)."""
        ...

    def version_of(self, chunk_id: str) -> int | None:
        """The active version of ``chunk_id``, or ``None`` when it is not active."""
        ...

    def versions(self, chunk_ids: Sequence[str]) -> dict[str, int]:
        """``{chunk_id: active version}`` for those of ``chunk_ids`` that are active, in one
        call (the dense leg checks every hit at once)."""
        ...


@runtime_checkable
class ResidentIndex(Protocol):
    """An index held in this process's memory (the in-process one): how many rows it holds,
    which is what the stack's bound on open indexes counts (``RAGSPINE_LEXICAL_CACHE_ROWS``)."""

    @property
    def resident_rows(self) -> int:
        """Rows held now, the retired ones not yet merged away included (0 before the first refresh)."""
        ...


def default_index_text(chunk: StoredChunk) -> str:
    """The text BM25 indexes and the dense leg embeds for a chunk: its own text."""
    return chunk.text


#: Saved segments record tokens, so an index text says which saved files are its own: the
#: chunk text's are the library's directory itself ("" = no subdirectory).
default_index_text.persist_key = ""  # type: ignore[attr-defined]


def make_lexical_index(
    spec: str, store: ChunkStore, *, settings: Settings | None = None, auto: str = "memory", index_text: Callable[[StoredChunk], str] | None = None,
) -> LexicalIndex:
    """The lexical index named ``spec`` (``RAGSPINE_LEXICAL_INDEX``) over ``store``; ``auto`` is
    what the chunk database picks (``auto=``: ``ChunkDatabase.auto_lexical_index``, e.g. ``warm``
    on PostgreSQL). ``index_text`` (default: the chunk's text) is what BM25 indexes; PostgreSQL's
    postings hold the chunk text only, so another index text makes ``auto`` the in-process index
    and ``postgres`` or ``warm`` an error."""
    from ragspine.errors import ConfigError
    from ragspine.registries import LEXICAL_INDEXES

    name = LEXICAL_INDEXES.canonical(spec)
    chosen = auto if name == "auto" else name
    custom = index_text is not None and index_text is not default_index_text
    if custom and chosen in ("postgres", "warm"):  # warm: PostgreSQL's postings answer while it builds
        if name != "auto":
            raise ConfigError(
                f"RAGSPINE_CONTEXTUAL=header changes the text BM25 indexes, and PostgreSQL's postings (which"
                f" RAGSPINE_LEXICAL_INDEX={name} reads) hold the chunk text only: use RAGSPINE_LEXICAL_INDEX=memory"
                " (or auto), or RAGSPINE_CONTEXTUAL=none"
            )
        chosen = "memory"
    factory = LEXICAL_INDEXES.load(chosen)
    index: LexicalIndex = factory(store, settings, index_text=index_text) if custom else factory(store, settings)
    return index
