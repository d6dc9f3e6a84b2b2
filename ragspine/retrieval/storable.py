"""What every store can keep: the one character check an ingest makes before it writes.

Two things in a string no backend keeps the same way, so every ingest path refuses them:

* a **NUL** character — PostgreSQL text and JSONB cannot hold one (SQLite, the in-process
  stores and Qdrant could, so a library would depend on its backend);
* a **lone surrogate** (``"\\ud800"``: half of a UTF-16 pair, e.g. from a JSON or YAML
  escape, or a file name that is not UTF-8) — not valid Unicode, so no driver can encode
  it (SQLite, psycopg and Qdrant raise ``UnicodeEncodeError`` mid-write).

Every other string is kept and returned unchanged by every store (astral-plane characters,
combining marks, right-to-left text, control characters other than NUL, long values):
``ragspine.testing``'s ``ChunkStoreUnicodeTests`` / ``VectorStoreUnicodeTests`` prove it on
each backend.

:func:`check_document` is applied at the edge of every ingest path — a file read by
``ragspine ingest`` (:func:`ragspine.documents.read_document`), an HTTP upload
(``service/ingest.py``), ``LibraryPipeline.ingest_text`` — and :func:`check_chunks` by every
chunk store's replace (:func:`~ragspine.retrieval.chunking.chunk_store.check_batch`), so a
document written by any path (``replace_doc_chunks``, ``replace_many``, ``ingest_many``) is
refused before anything is written, with the same one-line :class:`IngestError` on every
backend: ``document 'd': metadata key 'k\\ud800' holds a lone surrogate ...; <the fix>``.
:func:`check_record` does the same for a vector store's records.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, Mapping, Sequence

from ragspine.errors import IngestError

if TYPE_CHECKING:
    from ragspine.retrieval.vector.vector_store import VectorRecord

__all__ = ["check_chunks", "check_document", "check_fields", "check_record", "unstorable"]

#: Chunk fields a store writes as text, with how a message names them (the document's own
#: fields by their name alone, so a chunk's title reads as the document's title).
_CHUNK_FIELDS = (
    ("chunk_id", "chunk id {chunk!r}"),
    ("text", "text"),
    ("title", "title"),
    ("sensitivity", "sensitivity"),
    ("source_locator", "source locator of chunk {chunk!r}"),
    ("heading", "heading of chunk {chunk!r}"),
    ("parent_id", "parent id of chunk {chunk!r}"),
    ("window_text", "window text of chunk {chunk!r}"),
    ("parent_locator", "parent locator of chunk {chunk!r}"),
)


def unstorable(text: str) -> str | None:
    """What in ``text`` not every store can keep (``"a NUL character"``, ``"a lone surrogate
    \\ud800"``), or ``None``."""
    if "\x00" in text:
        return "a NUL character"
    if text.isascii():
        return None
    try:
        text.encode("utf-8")  # a few times faster than a regex scan; only a lone surrogate fails it
    except UnicodeEncodeError as exc:
        return f"a lone surrogate {ascii(text[exc.start])[1:-1]}"
    return None


def _refusal(owner: str, what: str, problem: str) -> IngestError:
    if problem.startswith("a NUL"):
        why = "which PostgreSQL cannot store (so no store takes it); remove it"
    else:
        why = "which is not valid Unicode (no store can encode it); remove it or fix the encoding it came from (UTF-8)"
    return IngestError(f"{owner}: {what} holds {problem}, {why}")


def _metadata_problems(metadata: Mapping[Any, Any], within: str = "") -> Iterator[tuple[str, str]]:
    """``(what, problem)`` for each unstorable key or string value, nested ones too."""
    for key, value in metadata.items():
        name = f"metadata key {key!r}" if not within else f"key {key!r} in {within}"
        problem = unstorable(key) if isinstance(key, str) else None
        if problem:
            yield name, problem
        yield from _value_problems(value, f"the value of {name}" if not within else f"{within}[{key!r}]")


def _value_problems(value: Any, what: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        problem = unstorable(value)
        if problem:
            yield what, problem
    elif isinstance(value, Mapping):
        yield from _metadata_problems(value, what)
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from _value_problems(item, f"{what}[{i}]")


def check_fields(owner: str, fields: Sequence[tuple[str, Any]], metadata: Mapping[Any, Any] | None = None) -> None:
    """Raise :class:`IngestError` ``"{owner}: {what} holds ..."`` for the first of ``fields``
    (``(what, value)``, non-strings skipped) or of ``metadata``'s keys and values (also nested
    in lists and objects) that holds a NUL or a lone surrogate."""
    for what, value in fields:
        problem = unstorable(value) if isinstance(value, str) else None
        if problem:
            raise _refusal(owner, what, problem)
    for what, problem in _metadata_problems(metadata if isinstance(metadata, Mapping) else {}):
        raise _refusal(owner, what, problem)  # (metadata that is no mapping: validate_metadata's to refuse)


def _owner(doc_id: Any) -> str:
    return f"document {doc_id!r}"


def check_document(
    doc_id: str, *, title: Any = "", text: Any = "", sensitivity: Any = "", valid_as_of: Any = "", source: Any = "",
    metadata: Mapping[Any, Any] | None = None,
) -> None:
    """The check of one document before it is chunked (raises :class:`IngestError` naming the
    document and the field or metadata key)."""
    check_fields(_owner(doc_id), [("the document id", doc_id)])
    check_fields(_owner(doc_id), [("title", title), ("text", text), ("sensitivity", sensitivity),
                                  ("valid_as_of", valid_as_of), ("source", source)], metadata)


def check_chunks(doc_id: str, chunks: Sequence[Any], valid_as_of: Any = "") -> None:
    """The check of one document's chunks before a store writes them: the same message as
    :func:`check_document` for the same bad field."""
    owner = _owner(doc_id)
    check_fields(owner, [("the document id", doc_id), ("valid_as_of", valid_as_of)])
    seen: set[int] = set()  # a document's chunks usually share one metadata mapping
    for chunk in chunks:
        for name, label in _CHUNK_FIELDS:
            value = getattr(chunk, name)
            problem = unstorable(value) if isinstance(value, str) else None
            if problem:
                raise _refusal(owner, label.format(chunk=chunk.chunk_id), problem)
        if id(chunk.metadata) not in seen:
            seen.add(id(chunk.metadata))
            check_fields(owner, (), chunk.metadata)


def check_record(record: VectorRecord) -> None:
    """The check of one vector store record (``VectorRecord``): its ids, sensitivity and
    metadata, named ``vector '<chunk id>'`` — every vector store refuses the same records."""
    check_fields(f"vector {record.id!r}", [("chunk id", record.id), ("doc_id", record.doc_id),
                                           ("sensitivity", record.sensitivity)], record.metadata)
