"""The ``ChunkStore`` role: versioned, library-scoped chunks — and ``StoredChunk``, the row.

A store instance is scoped to one library (``library_id``): every read and write it makes is
confined to that library, which is how tenants' libraries stay apart in a shared database.
The seed's contract is :class:`ChunkStore`; what a backend may offer besides is declared by
the capability Protocols below it (runtime-checkable, so callers test ``isinstance`` instead
of probing attributes):

* :class:`ChangeLog` — ``change_seq`` / ``changes_since``: derived indexes follow the store;
* :class:`BulkWrites` — ``replace_many``: a batch of replaces in one transaction;
* :class:`Fingerprints` — ``fingerprints``: what a resumed bulk ingest skips;
* :class:`StreamingReads` — ``iter_active`` / ``iter_active_docs``: paged reads;
* :class:`PersistentStore` — ``persist_dir`` / ``change_marker``: a place for saved indexes;
* :class:`ActiveVersions` — ``active_versions``: which chunk versions are active, without
  their text (what a saved index is checked against when it is loaded);
* :class:`DocumentAcls` — ``document_acls`` / ``set_acls`` / ``acl_seq`` / ``acl_history``:
  who may read each document (``ragspine/security/principals.py``), changed without a re-ingest
  and recorded;
* :class:`DocumentAclChanges` — ``acl_changes_since``: the ACLs changed since a sequence number
  (what a derived index applies instead of reading every document's ACL again).

Every backend passes ``ragspine.testing.ChunkStoreConformance`` (and the bulk pack when it
offers ``BulkWrites``).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Iterator, Mapping, NamedTuple, Protocol, Sequence, runtime_checkable

from ragspine.retrieval.chunking.chunking import Chunk

if TYPE_CHECKING:
    from ragspine.config import Settings
    from ragspine.security.principals import ACL

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
    def stored(cls, values: dict[str, Any]) -> StoredChunk:
        """A chunk read back from a store: ``values`` holds every field, already of the right
        types (as written), so the dataclass ``__init__`` is skipped (the read path's hot loop)."""
        chunk = object.__new__(cls)
        chunk.__dict__.update(values)
        return chunk

    @classmethod
    def from_row(cls, row: Mapping[str, Any], **overrides: Any) -> StoredChunk:
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
    """A versioned, library-scoped chunk store (the seed's contract)."""

    library_id: str

    def init_schema(self) -> None:
        """Make the store ready to use; idempotent."""
        ...

    def replace_doc_chunks(self, doc_id: str, chunks: Sequence[Chunk], valid_as_of: str = "") -> int:
        """One atomic versioned replace: ``version = max(version) + 1`` for the document, its
        old rows inactive, the new rows active; returns the rows written. An empty list
        retires the document. Invalid input raises ``IngestError`` before any write; if it
        raises, the previous version stays active."""
        ...

    def iter_chunks(self, *, doc_id: str | None = None, include_inactive: bool = False) -> list[StoredChunk]:
        """The active rows (every stored version with ``include_inactive``), of one document
        when ``doc_id`` is given, ordered by ``(doc_id, ordinal, version)``. Selecting by
        metadata is the retrievers' job (``MetadataFilter``), not the store's."""
        ...

    def get_chunks(self, chunk_ids: Sequence[str]) -> list[StoredChunk]:
        """The active rows of ``chunk_ids``, in the order asked; ids not active are skipped."""
        ...

    def doc_ids(self) -> list[str]:
        """The active documents, sorted by code point."""
        ...

    def count(self, *, include_inactive: bool = False) -> int:
        """Active rows (every stored version with ``include_inactive``)."""
        ...

    def execute_read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """The one read-only SQL entry point: a statement that would write raises ``BackendError``."""
        ...

    def close(self) -> None:
        """Release what the store owns (a database it opened itself)."""
        ...


@runtime_checkable
class ChangeLog(Protocol):
    """Every replace appends one change; derived indexes (lexical, vector) follow them."""

    def change_seq(self) -> int:
        """The sequence number of the library's latest change (0: none yet)."""
        ...

    def changes_since(self, seq: int) -> tuple[int, list[str]]:
        """``(latest seq, doc_ids changed after seq)``, the ids in order of first change; a
        doc_id ``""`` means the whole library was dropped."""
        ...


@runtime_checkable
class FollowableStore(ChunkStore, ChangeLog, Protocol):
    """A chunk store an index can follow (what :class:`InMemoryLexicalIndex` needs)."""


@runtime_checkable
class BulkWrites(Protocol):
    def replace_many(self, docs: Sequence[DocumentChunks]) -> int:
        """Versioned replace of every document (:meth:`ChunkStore.replace_doc_chunks`), the
        batch in one transaction: all of it becomes visible, or none. A ``doc_id`` at most
        once per batch (:func:`check_batch`). Returns rows written."""
        ...


@runtime_checkable
class Fingerprints(Protocol):
    def fingerprints(self, doc_ids: Sequence[str]) -> dict[str, str]:
        """``{doc_id: fingerprint}`` of the active documents among ``doc_ids``, as recorded
        by the replace that wrote them (:func:`fingerprint`)."""
        ...


@runtime_checkable
class RestrictedSpans(Protocol):
    def restricted_spans(self, doc_ids: Sequence[str]) -> dict[tuple[str, int], list[tuple[int, int]]]:
        """``{(doc_id, version): [(char_start, char_end), ...]}`` of the active RESTRICTED
        chunks of ``doc_ids`` (one read that returns only those rows: what an exit checks
        before it hands a parent or window text to a prompt)."""
        ...


@runtime_checkable
class ActiveVersions(Protocol):
    def active_versions(self, batch_size: int = 50_000) -> Iterator[tuple[Sequence[str], Sequence[int], Sequence[str]]]:
        """Pages of the active chunks as columns ``(chunk_ids, versions, sensitivities)``, by
        chunk id; no text is read. Each page is one statement: a writer committing between
        pages may be half seen, so a caller compares against the change sequence read around it."""
        ...


@runtime_checkable
class StreamingReads(Protocol):
    def iter_active(self, batch_size: int = 5000) -> Iterator[StoredChunk]:
        """Every active chunk, in pages of ``batch_size`` (one statement per page)."""
        ...

    def iter_active_docs(self, doc_ids: Sequence[str]) -> Iterator[StoredChunk]:
        """The active chunks of many documents (what an index reads to catch up)."""
        ...


@dataclass(frozen=True)
class AclChange:
    """One recorded change of a document's ACL: ``seq`` orders a library's changes."""

    seq: int
    doc_id: str
    before: ACL
    after: ACL
    changed_at: str
    changed_by: str


@runtime_checkable
class DocumentAcls(Protocol):
    """Who may read each document of the library (no row: every principal of its tenant)."""

    def acl_seq(self) -> int:
        """The sequence number of the library's latest ACL change (0: none yet): what a derived
        index compares to know its copy of the ACLs is current."""
        ...

    def document_acls(self) -> tuple[int, dict[str, ACL]]:
        """``(acl_seq, {doc_id: ACL})`` of every document with an ACL, read in one statement."""
        ...

    def set_acls(self, acls: Mapping[str, ACL], *, by: str) -> int:
        """Give each document its ACL (:data:`~ragspine.security.principals.OPEN`: none), in one
        transaction; each real change is recorded with ``by`` and the time. Returns how many
        documents changed. A document need not have chunks (its ACL waits for them)."""
        ...

    def acl_history(self, doc_id: str | None = None, *, limit: int = 100) -> list[AclChange]:
        """The latest ``limit`` recorded changes (of ``doc_id``'s ACL, or of any), newest first."""
        ...


@runtime_checkable
class DocumentAclChanges(DocumentAcls, Protocol):
    """:class:`DocumentAcls` with its change record readable from a point on. Apart from it, so a
    store without it still enforces ACLs (its readers fall back to :meth:`document_acls`)."""

    def acl_changes_since(self, seq: int) -> tuple[int, dict[str, ACL]] | None:
        """``(acl_seq, {doc_id: ACL now})`` of each document whose ACL changed after ``seq`` (a
        sequence number :meth:`acl_seq` or :meth:`document_acls` returned; ``OPEN``: it has none
        now), read in one statement: applied to the ACLs as of ``seq`` it gives
        :meth:`document_acls` as of ``acl_seq``. ``None`` when the store cannot prove the changes
        complete — ``seq`` negative or not a change of this library (its record was deleted with
        the library since, or it came from elsewhere): read :meth:`document_acls` then."""
        ...


#: The kinds of derived files a library may keep (:meth:`PersistentStore.persist_dir`): the
#: in-process lexical index's, the visual index's. Deleting the library deletes them all.
DERIVED_KINDS = ("lexical", "visual")


@runtime_checkable
class PersistentStore(Protocol):
    """A store with a place for derived indexes' files, and a way to check they belong to it."""

    def persist_dir(self, kind: str) -> str | None:
        """A directory for derived files of ``kind`` (``None``: none, e.g. in memory)."""
        ...

    def change_marker(self, seq: int) -> str | None:
        """What identifies change ``seq`` in this database (``None``: no such change)."""
        ...


@runtime_checkable
class LibraryCatalog(Protocol):
    """Which libraries exist in a database, with a description used for routing."""

    def ensure_library(self, library_id: str, description: str | None = None, tenant_id: str | None = None) -> LibraryInfo:
        """Create the library if new; a given ``description`` replaces the old one. Where the
        catalog records owners, a library claimed by another tenant raises ``ConfigError``."""
        ...

    def get_library(self, library_id: str) -> LibraryInfo | None: ...

    def descriptions(self, library_ids: Sequence[str]) -> dict[str, str]:
        """The description of each of ``library_ids`` that exists (absent ones are left out);
        no counting, so it costs the same at any library size (queries resolve through it)."""
        ...

    def list_libraries(self, library_ids: Sequence[str] | None = None) -> list[LibraryInfo]:
        """Every library (also one that only has chunks), by id; with ``library_ids``, only
        those of them that exist (what a tenant's listing counts: never the whole database)."""
        ...

    def delete_library(self, library_id: str) -> bool:
        """Delete the library's chunks, change history and catalog row (followers see the
        drop); ``True`` when there was anything to delete."""
        ...

    def library_profile(self, library_id: str) -> str | None:
        """The recipe the library was built with (a :class:`~ragspine.profile.Profile`'s JSON,
        recorded by :meth:`set_library_profile`), or ``None`` when none was recorded."""
        ...

    def set_library_profile(self, library_id: str, profile_json: str) -> None:
        """Record (or replace) the library's recipe; :meth:`delete_library` removes it."""
        ...

    def chunk_store(self, library_id: str) -> ChunkStore:
        """One library's view (no I/O until used)."""
        ...


@runtime_checkable
class ChunkDatabase(LibraryCatalog, Protocol):
    """A configured chunk store backend (``RAGSPINE_CHUNK_STORE``): one database holding many
    libraries. The constructor does no I/O."""

    #: The registry names ``auto`` resolves to on this database (the lexical index's without
    #: settings; :meth:`auto_lexical_index` says which with them).
    default_lexical_index: str
    default_embedding_cache: str

    @classmethod
    def auto_lexical_index(cls, settings: Settings) -> tuple[str, str]:
        """``(registry name, why)``: the lexical index ``RAGSPINE_LEXICAL_INDEX=auto`` picks on
        this database with ``settings``, and one line saying why (``ragspine config`` shows it)."""
        ...

    def init_schema(self) -> None:
        """Make the schema ready (or raise ``SchemaError`` naming ``ragspine migrate``)."""
        ...

    def check(self) -> None:
        """Raise ``BackendError`` unless the database answers."""
        ...

    def describe(self) -> str:
        """What it is, for ``ragspine config`` (a URL with its password hidden)."""
        ...

    def close(self) -> None: ...


class DocumentChunks(NamedTuple):
    """One document's new chunks for :meth:`ChunkStore.replace_many`; ``acl``: who may read it,
    written in the same transaction (``None``: the document keeps the ACL it has, if any —
    a store without :class:`DocumentAcls` refuses any other value)."""

    doc_id: str
    chunks: Sequence[Chunk]
    valid_as_of: str = ""
    acl: ACL | None = None


def fingerprint(chunks: Sequence[Chunk], valid_as_of: str = "") -> str:
    """A digest of everything a replace stores for a document (ids, texts, titles, locators,
    metadata, sensitivity, parent fields, PDF boxes, ``valid_as_of``): equal fingerprints mean a
    re-ingest would change nothing."""
    import hashlib
    import json

    records = [
        [c.chunk_id, c.doc_id, c.text, c.title, c.source_locator, c.ordinal, c.char_start, c.char_end,
         sorted(c.metadata.items()), c.sensitivity, c.parent_id, c.heading, c.window_text, c.parent_locator]
        + ([c.boxes] if c.boxes else [])  # a chunk without boxes digests as before
        for c in chunks
    ]
    data = json.dumps([valid_as_of, records], ensure_ascii=False, default=str)
    return hashlib.blake2b(data.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def check_replace_input(doc_id: str, chunks: Sequence[Chunk]) -> None:
    """Shared validation for ``replace_doc_chunks`` (raises ``IngestError``): every write path
    ends here, so a sensitivity that is not one string label, or a metadata key that names a
    document field in any case (``Sensitivity``), is refused on every one of them."""
    from ragspine.errors import IngestError
    from ragspine.retrieval.metadata import validate_metadata
    from ragspine.retrieval.sensitivity import parse_sensitivity, reserved_key

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
        parse_sensitivity(chunk.sensitivity, f"chunk {chunk.chunk_id!r}", default=None)  # None is no label
        field = next((k for k in chunk.metadata if reserved_key(k)), None)
        if field is not None:
            raise IngestError(f"chunk {chunk.chunk_id!r}: metadata key {field!r} is the document's {reserved_key(field)}; pass it as that field")


def check_batch(docs: Sequence["DocumentChunks"]) -> list["DocumentChunks"]:
    """Shared validation for ``replace_many``, before any write (raises ``IngestError``): every
    document as ``replace_doc_chunks`` checks it, a ``doc_id`` at most once per batch, a chunk id
    in one document of the batch only, no string any store cannot keep
    (:func:`~ragspine.retrieval.storable.check_chunks`: NUL, lone surrogates). Returns the
    batch with every spelling of RESTRICTED written as ``RESTRICTED`` (what the stores and
    their SQL compare)."""
    from dataclasses import replace

    from ragspine.errors import IngestError
    from ragspine.retrieval.sensitivity import RESTRICTED_SENSITIVITY, is_restricted
    from ragspine.retrieval.storable import check_chunks

    def canonical(chunk: Chunk) -> Chunk:
        if isinstance(chunk.sensitivity, str) and is_restricted(chunk.sensitivity) and chunk.sensitivity != RESTRICTED_SENSITIVITY:
            return replace(chunk, sensitivity=RESTRICTED_SENSITIVITY)
        return chunk

    batch = [DocumentChunks(d[0], [canonical(c) for c in d[1]], *d[2:]) for d in docs]
    owner: dict[str, str] = {}
    seen_docs: set[str] = set()
    for doc in batch:
        check_replace_input(doc.doc_id, doc.chunks)
        if doc.doc_id in seen_docs:
            raise IngestError(f"doc_id {doc.doc_id!r} appears twice in one replace_many batch; send one version per batch")
        seen_docs.add(doc.doc_id)
        if not isinstance(doc.valid_as_of, str):
            raise IngestError(f"valid_as_of of {doc.doc_id!r} must be a string")
        check_chunks(doc.doc_id, doc.chunks, doc.valid_as_of)  # no NUL, no lone surrogate: the same on every store
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
