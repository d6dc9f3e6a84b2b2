"""The versioned chunk store: the ``ChunkStore`` Protocol and the ``StoredChunk`` row.

A store instance is scoped to one library (``library_id``): every read and write it makes is
confined to that library, which is how tenants' libraries stay apart in a shared database.

Contract (every backend; the conformance suite checks it):

* ``init_schema()`` creates what the store needs and is idempotent.
* ``replace_doc_chunks(doc_id, chunks, valid_as_of="") -> int`` is one atomic versioned
  replace: ``version = max(version) + 1`` for the document, old rows become ``active=False``,
  the new rows are inserted ``active=True``; returns the number of rows written. Re-ingesting
  the same chunks leaves the same active set. An empty list retires the document. If it
  raises, the previous version stays active.
* ``iter_chunks(...)`` is an AND pre-filter over active rows (or all rows with
  ``include_inactive=True``), ordered by ``(doc_id, ordinal, version)``.
* ``get_chunks(chunk_ids)`` returns the active rows for those ids, in the order asked,
  skipping ids that are not active.
* ``change_seq()`` / ``changes_since(seq)`` let derived indexes (lexical, vector) follow
  the store: every replace appends one change.
* ``execute_read(sql, params)`` is the one read-only SQL entry point.
* ``replace_many(docs)`` is the bulk form: every document is a versioned replace as above, the
  batch is one transaction (all of it becomes visible, or none); a ``doc_id`` at most once
  per batch (:func:`check_batch`). Each replace records the
  document's :func:`fingerprint`; ``fingerprints(doc_ids)`` returns those of the active
  documents, so an interrupted bulk ingest resumes by skipping what is already current.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Mapping, NamedTuple, Protocol, Sequence, runtime_checkable

from ragspine.retrieval.chunking.chunking import Chunk

DEFAULT_LIBRARY_ID = "default"


@dataclass(frozen=True)
class StoredChunk(Chunk):
    """A :class:`Chunk` as stored: every chunk field plus ingestion metadata."""

    valid_as_of: str = ""
    ingested_at: str = ""
    version: int = 1
    active: bool = True
    library_id: str = DEFAULT_LIBRARY_ID

    @classmethod
    def from_row(cls, row: Mapping[str, Any], **overrides: Any) -> "StoredChunk":
        """Build from a database row as a mapping (extra keys ignored); ``overrides`` win.
        Integer columns are coerced to ``int`` and ``active`` to ``bool``."""
        values = {name: row[name] for name in _FIELD_NAMES if name in row}
        values.update(overrides)
        for name in _INT_FIELDS:
            if name in values:
                values[name] = int(values[name])
        if "active" in values:
            values["active"] = bool(values["active"])
        return cls(**values)


_FIELD_NAMES = tuple(f.name for f in fields(StoredChunk))
_INT_FIELDS = ("ordinal", "char_start", "char_end", "version")


@dataclass(frozen=True)
class LibraryInfo:
    """A library as the catalog knows it."""

    library_id: str
    description: str = ""
    created_at: str = ""
    documents: int = 0
    chunks: int = 0


@runtime_checkable
class ChunkStore(Protocol):
    """A versioned, library-scoped chunk store (see the module docstring for the contract)."""

    library_id: str

    def init_schema(self) -> None: ...

    def replace_doc_chunks(
        self, doc_id: str, chunks: Sequence[Chunk], valid_as_of: str = ""
    ) -> int: ...

    def iter_chunks(
        self,
        *,
        doc_id: str | None = None,
        topic: str | None = None,
        entity: str | None = None,
        geography: str | None = None,
        period: str | None = None,
        language: str | None = None,
        include_inactive: bool = False,
    ) -> list[StoredChunk]: ...

    def get_chunks(self, chunk_ids: Sequence[str]) -> list[StoredChunk]: ...

    def doc_ids(self) -> list[str]: ...

    def count(self, *, include_inactive: bool = False) -> int: ...

    def change_seq(self) -> int: ...

    def changes_since(self, seq: int) -> tuple[int, list[str]]: ...

    def replace_many(self, docs: Sequence["DocumentChunks"]) -> int: ...

    def fingerprints(self, doc_ids: Sequence[str]) -> dict[str, str]: ...

    def execute_read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...

    def close(self) -> None: ...


@runtime_checkable
class LibraryCatalog(Protocol):
    """Which libraries exist in a database, with a description used for routing."""

    def ensure_library(self, library_id: str, description: str | None = None) -> LibraryInfo: ...

    def get_library(self, library_id: str) -> LibraryInfo | None: ...

    def list_libraries(self) -> list[LibraryInfo]: ...

    def delete_library(self, library_id: str) -> bool: ...

    def chunk_store(self, library_id: str) -> ChunkStore: ...


class DocumentChunks(NamedTuple):
    """One document's new chunks for :meth:`ChunkStore.replace_many`."""

    doc_id: str
    chunks: Sequence[Chunk]
    valid_as_of: str = ""


def fingerprint(chunks: Sequence[Chunk], valid_as_of: str = "") -> str:
    """A digest of everything a replace stores for a document (ids, texts, titles, locators,
    metadata, sensitivity, parent fields, ``valid_as_of``): equal fingerprints mean a
    re-ingest would change nothing."""
    import hashlib
    import json

    records = [
        [c.chunk_id, c.doc_id, c.text, c.title, c.source_locator, c.ordinal, c.char_start, c.char_end,
         sorted(c.metadata.items()), c.sensitivity, c.parent_id, c.heading, c.window_text, c.parent_locator]
        for c in chunks
    ]
    data = json.dumps([valid_as_of, records], ensure_ascii=False, default=str)
    return hashlib.blake2b(data.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def check_replace_input(doc_id: str, chunks: Sequence[Chunk]) -> None:
    """Shared validation for ``replace_doc_chunks`` (raises ``IngestError``)."""
    from ragspine.errors import IngestError
    from ragspine.retrieval.metadata import validate_metadata

    if not isinstance(doc_id, str) or not doc_id:
        raise IngestError("doc_id must be a non-empty string")
    seen: set[str] = set()
    for chunk in chunks:
        if chunk.doc_id != doc_id:
            raise IngestError(
                f"chunk {chunk.chunk_id!r} belongs to doc {chunk.doc_id!r}, not {doc_id!r}"
            )
        if not chunk.chunk_id:
            raise IngestError(f"a chunk of {doc_id!r} has an empty chunk_id")
        if chunk.chunk_id in seen:
            raise IngestError(f"chunk_id {chunk.chunk_id!r} appears twice in {doc_id!r}")
        if not chunk.text:
            raise IngestError(f"chunk {chunk.chunk_id!r} has empty text")
        seen.add(chunk.chunk_id)
        validate_metadata(chunk.metadata)


def check_batch(docs: Sequence["DocumentChunks"]) -> list["DocumentChunks"]:
    """Shared validation for ``replace_many``, before any write (raises ``IngestError``): every
    document as ``replace_doc_chunks`` checks it, a ``doc_id`` at most once per batch, a chunk id
    in one document of the batch only."""
    from ragspine.errors import IngestError

    batch = [DocumentChunks(d[0], list(d[1]), *d[2:]) for d in docs]
    owner: dict[str, str] = {}
    seen_docs: set[str] = set()
    for doc in batch:
        check_replace_input(doc.doc_id, doc.chunks)
        if doc.doc_id in seen_docs:
            raise IngestError(f"doc_id {doc.doc_id!r} appears twice in one replace_many batch; send one version per batch")
        seen_docs.add(doc.doc_id)
        if not isinstance(doc.valid_as_of, str):
            raise IngestError(f"valid_as_of of {doc.doc_id!r} must be a string")
        for chunk in doc.chunks:
            other = owner.setdefault(chunk.chunk_id, doc.doc_id)
            if other != doc.doc_id:
                raise IngestError(f"chunk_id {chunk.chunk_id!r} appears in both {other!r} and {doc.doc_id!r}")
    return batch


def check_library_id(library_id: str) -> str:
    from ragspine.errors import ConfigError

    if not isinstance(library_id, str) or not library_id.strip():
        raise ConfigError("library_id must be a non-empty string")
    if len(library_id) > 200:
        raise ConfigError("library_id is longer than 200 characters")
    return library_id
