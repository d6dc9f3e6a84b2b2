"""Ingestion: documents validated at upload, written by a job.

An upload is checked completely before it is queued (size → 413, shape and metadata → 422),
and stored with the job as plain dicts. The job then, document by document:

1. chunks it (the library pipeline's chunker: ``RAGSPINE_CHUNKER`` with ``RAGSPINE_CHUNK_CHARS`` /
   ``RAGSPINE_OVERLAP_CHARS``);
2. computes its vectors into the embedding cache — *before* anything is written, so a model
   failure leaves the previous version active;
3. makes the new version active in one atomic versioned replace (the index's vectors follow
   from the cache). If storing vectors fails after that, the job still succeeds with a
   ``warning``: the document is searchable (BM25, and its cached vectors score it while the
   store lacks them); ``POST /v1/libraries/{name}/embed`` or ``ragspine embed`` writes them.

A document's ACL (who of the tenant may read it) travels in its payload as ``"acl": {"allow":
[...], "deny": [...]}`` (absent: the document keeps the ACL it has); an uploaded file's comes from
the form's ``acl`` field, else its front matter (:func:`ragspine.front_matter.split_acl`, as
``ragspine ingest`` reads it), and is written with the document's chunks.

A failed job reports the document and the reason; that document and the ones after it keep
their previous version (documents before it in the same batch were applied).

The documents are written in groups (:class:`Groups`, one replace
transaction each, their vectors embedded as one pass): one transaction per document made an
ingest on PostgreSQL a few hundred chunks/s. A group that cannot be written at once is
written document by document, so a failure still names its document and keeps the ones
before it.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ragspine.deadline import DeadlineExceeded
from ragspine.documents import MAX_FILE_BYTES, front_sensitivity, with_structure
from ragspine.errors import ConfigError, IngestError, MissingDependencyError
from ragspine.front_matter import acl_key, split_acl
from ragspine.readers.base import LineBox, ReadDocument, ReaderLimits
from ragspine.retrieval.chunking.base import Chunker
from ragspine.retrieval.chunking.chunking import Chunk
from ragspine.retrieval.metadata import validate_metadata
from ragspine.retrieval.sensitivity import parse_sensitivity, reserved_key, split_document_fields
from ragspine.retrieval.storable import check_document

if TYPE_CHECKING:
    from ragspine.retrieval.chunking.chunk_store import ChunkStore
    from ragspine.retrieval.pipeline import LibraryPipeline
    from ragspine.security.principals import ACL
    from ragspine.service.context import ServiceContext
    from ragspine.service.models import DocumentIn

class FileTooLarge(IngestError):
    """An uploaded file over ``RAGSPINE_MAX_FILE_BYTES`` (413)."""


PROGRESS_EVERY_S = 0.5  # progress is written at most this often (and when the job ends)
BATCH_DOCS = 500  # documents per replace transaction at most (a job's documents are written in groups)
BATCH_CHARS = 4_000_000  # ... and about this much text
GROUP_TARGET_S = 0.5  # a group is sized to take about this long (see Groups)


def document_payload(doc: DocumentIn) -> dict[str, Any]:
    """A validated :class:`~ragspine.service.models.DocumentIn` as the job stores it (its
    ``acl``, when the model has one and it is given, as ``{"allow": [...], "deny": [...]}``)."""
    payload = storable({
        "doc_id": doc.doc_id, "title": doc.title, "text": doc.text, "metadata": dict(doc.metadata),
        "sensitivity": parse_sensitivity(doc.sensitivity, f"document {doc.doc_id!r}"),
        "valid_as_of": doc.valid_as_of, "source": doc.doc_id, "source_offset": 0,
    })
    acl = getattr(doc, "acl", None)
    if acl is not None:
        payload["acl"] = _parsed_acl(acl, f"document {doc.doc_id!r}: acl").as_dict()
    return payload


def _parsed_acl(value: Any, where: str) -> ACL:
    from ragspine.security.principals import ACL

    try:
        return ACL.parse(value)
    except ConfigError as exc:
        raise IngestError(f"{where}: {exc}") from None


def parse_form_acl(text: str) -> ACL:
    """An upload form's ``acl`` field: JSON (``{"allow": [...], "deny": [...]}`` or a list of
    entries), one comma-separated string of entries (allow), or ``open`` (no ACL); ``ConfigError``
    naming the problem (a bad entry, an ACL naming nobody)."""
    from ragspine.security.principals import ACL, OPEN

    if text.strip().lower() == "open":
        return OPEN
    try:
        value: Any = json.loads(text)
    except ValueError:
        value = text  # group:hr,user:alice
    acl = ACL.parse(value)
    if acl.is_open:
        raise ConfigError("names nobody; send entries (group:hr,user:alice), or open to give the document no ACL")
    return acl


class FormAclError(IngestError):
    """An upload form's ``acl`` refused (:func:`form_acl`): ``reason`` is :func:`parse_form_acl`'s
    message (the HTTP route answers it as the validation 422 on ``acl``)."""

    def __init__(self, where: str, reason: str) -> None:
        super().__init__(f"{where}: {reason}")
        self.reason = reason


def form_acl(text: str, where: str = "acl") -> ACL:
    """:func:`parse_form_acl`, a problem a :class:`FormAclError` naming ``where``."""
    try:
        return parse_form_acl(text)
    except ConfigError as exc:
        raise FormAclError(where, str(exc)) from None


def payload_acl(doc: Mapping[str, Any]) -> ACL | None:
    """The ACL a job payload document carries (``None``: it keeps the one it has)."""
    return _parsed_acl(doc["acl"], f"document {doc['doc_id']!r}: acl") if doc.get("acl") is not None else None


def storable(payload: dict[str, Any]) -> dict[str, Any]:
    """Refuse at upload what no job could store on every backend — a NUL character or a lone
    surrogate in any field or metadata key/value — with the message the Python API and the
    CLI give for the same document (:func:`~ragspine.retrieval.storable.check_document`)."""
    check_document(
        payload["doc_id"], title=payload["title"], text=payload["text"], sensitivity=payload["sensitivity"],
        valid_as_of=payload["valid_as_of"], source=payload["source"], metadata=payload["metadata"],
    )
    return payload


def file_payload(filename: str, raw: bytes, fields: Mapping[str, str | None], *, media_type: str = "",
                 max_bytes: int = MAX_FILE_BYTES, limits: ReaderLimits | None = None) -> dict[str, Any]:
    """An uploaded file, read by the reader its content calls for (``ragspine ingest``'s:
    text and Markdown with optional YAML front matter, PDF, Word, PowerPoint, Excel, CSV, HTML).
    The form ``fields`` (``doc_id, title, sensitivity, valid_as_of``, ``metadata`` as JSON) are
    what front matter is to a text file, by the same rules, and override it. Locators point into
    the uploaded text file, or into another format's extracted text; a paged document's payload
    keeps its page ranges (``pages``) so its chunks get ``page``/``page_end``, its tables
    (``tables``) so a long one is cut at its rows, and a PDF's its lines' boxes (``line_boxes``).

    Raises :class:`FileTooLarge` over ``max_bytes`` (413), :class:`UnsupportedFormat` for a
    type no reader takes or a name or media type the content belies (415), and
    :class:`IngestError` for a corrupt, encrypted or over-limit file or bad fields (422)."""
    name = filename or "upload.txt"
    if len(raw) > max_bytes:
        raise FileTooLarge(f"{name}: {len(raw):,} bytes is over the {max_bytes:,}-byte limit (RAGSPINE_MAX_FILE_BYTES)")
    read = read_upload(name, raw, media_type, limits)
    body, offset = read.text, read.body_offset
    own_fields, acl = split_acl(dict(read.fields), name)  # front matter's ACL: never metadata
    if (fields.get("acl") or "").strip():  # the form's wins (a blank field is one left out)
        acl = form_acl(fields["acl"] or "")
    front, extra_front = split_document_fields(own_fields, name)
    if front.get("chunker") is not None:
        raise IngestError(
            f"{name}: front matter chunker: a service library's chunker is chosen when the library is created"
            " (POST /v1/libraries with \"chunker\"); remove it from the front matter"
        )
    meta: dict[str, Any] = {k: _plain(v) for k, v in {**read.metadata, **extra_front}.items()}
    if fields.get("metadata"):
        try:
            extra = json.loads(fields["metadata"] or "")
        except ValueError:
            raise IngestError("metadata: not valid JSON (send a JSON object)") from None
        if not isinstance(extra, dict):
            raise IngestError("metadata: send a JSON object of field -> scalar")
        reserved = sorted(k for k in extra if reserved_key(k) or acl_key(k))
        if reserved:
            what = "the document's ACL" if acl_key(reserved[0]) else "a document field"
            raise IngestError(f"metadata: {reserved[0]!r} is {what}; send it as a form field")
        meta.update(extra)
    try:
        metadata = validate_metadata(meta)
    except IngestError as exc:
        raise IngestError(f"{name}: {exc}") from None
    stem = name.rsplit("/", 1)[-1]
    doc_id = fields.get("doc_id") or str(front.get("doc_id") or stem)
    title = fields.get("title") or str(front.get("title") or read.title or stem.rsplit(".", 1)[0])
    payload = storable({
        "doc_id": doc_id, "title": title, "text": body, "metadata": metadata,
        "sensitivity": front_sensitivity(front, name, fields.get("sensitivity") or None, given_wins=True),
        "valid_as_of": fields.get("valid_as_of") or str(_plain(front.get("valid_as_of")) or ""),
        "source": stem, "source_offset": offset,
    })
    if acl is not None:  # only then: a payload without one is what it always was (the document keeps its ACL)
        payload["acl"] = acl.as_dict()
    if read.paged:  # only then: a text upload's job payload is what it always was
        payload["pages"] = [list(page) for page in read.pages]
    if read.tables:  # a long table's chunks are its rows (ragspine ingest's rule)
        payload["tables"] = [list(table) for table in read.tables]
    if read.line_boxes:  # a PDF's chunks keep their lines' boxes (``"boxes": true`` in a retrieve)
        payload["line_boxes"] = [[b.start, b.end, b.page, *(round(v, 2) for v in b.box), *([1] if b.ocr else [])]
                                 for b in read.line_boxes]
    return payload


#: media type → the format it claims (a generic type claims none: the name and content decide)
MEDIA_FORMATS = {
    "application/pdf": "pdf",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": "pptx",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
    "text/csv": "csv", "text/tab-separated-values": "csv", "text/html": "html",
    "text/plain": "text", "text/markdown": "text", "text/x-markdown": "text",
    "image/png": "image", "image/jpeg": "image", "image/tiff": "image",  # read by OCR when RAGSPINE_OCR is set, else 415 naming it
}
GENERIC_MEDIA = ("", "application/octet-stream")


def read_upload(name: str, raw: bytes, media_type: str = "", limits: ReaderLimits | None = None) -> ReadDocument:
    """``raw`` read by the reader its content calls for (:func:`~ragspine.readers.sniff.sniff_format`).
    A name whose extension no reader takes is refused unless its media type names a format; a
    media type claiming a binary format (PDF, Office) the content is not is refused, as a
    lying extension is. Whatever a reader's library raises becomes one line (422), never a 500."""
    from pathlib import PurePath

    from ragspine.readers.base import one_line
    from ragspine.readers.registry import make_document_reader
    from ragspine.readers.sniff import BINARY_FORMATS, EXTENSIONS, IMAGE_EXTENSIONS, UnsupportedFormat, sniff_format

    media = media_type.split(";")[0].strip().lower()
    claimed = MEDIA_FORMATS.get(media)
    fmt = sniff_format(raw, name)  # first: what the content is says the most (an image, a legacy .doc)
    if PurePath(name).suffix.lower() not in (*EXTENSIONS, *IMAGE_EXTENSIONS) and claimed is None and media not in GENERIC_MEDIA:
        kinds = " ".join(sorted(EXTENSIONS))
        raise UnsupportedFormat(f"{name}: {media} is not a format ingest reads; upload one of {kinds}")
    if claimed in BINARY_FORMATS and fmt != claimed:
        raise UnsupportedFormat(f"{name}: sent as {media}, but its content is {fmt}: the media type does not match the content")
    reader = make_document_reader(fmt, limits)
    try:
        return reader.read(raw, name)
    except (IngestError, MissingDependencyError, DeadlineExceeded):
        raise
    except Exception as exc:  # a reader library's own error on a malformed file: the file is bad, not the server
        raise IngestError(f"{name}: cannot read this {fmt} file ({one_line(exc)})") from None


def _plain(value: Any) -> Any:
    return value.isoformat() if isinstance(value, (dt.date, dt.datetime)) else value


def plan(chunker: Chunker, doc: Mapping[str, Any]) -> list[Chunk]:
    """The chunks of one uploaded document (the library's chunker); a long table's are its rows
    and a paged document's get ``page``/``page_end`` (:func:`~ragspine.documents.with_structure`),
    as ``ragspine ingest``'s do."""
    chunks = chunker.chunk(
        doc["text"], doc["doc_id"], title=doc["title"], metadata=doc["metadata"], sensitivity=doc["sensitivity"],
        source=doc["source"], source_offset=doc["source_offset"],
    )
    if not doc.get("pages") and not doc.get("tables") and not doc.get("line_boxes"):
        return chunks
    structure = ReadDocument(text=doc["text"], pages=tuple((int(a), int(b)) for a, b in doc.get("pages", ())),
                             tables=tuple((int(a), int(b)) for a, b in doc.get("tables", ())),
                             line_boxes=tuple(line_box_of(row) for row in doc.get("line_boxes", ())))
    return with_structure(chunks, structure, chunker, doc["source_offset"])


def line_box_of(row: Sequence[Any]) -> LineBox:
    """A job payload's line box: ``[start, end, page, left, bottom, right, top(, 1: OCR'd)]``."""
    return LineBox(int(row[0]), int(row[1]), int(row[2]), (float(row[3]), float(row[4]), float(row[5]), float(row[6])),
                   ocr=len(row) > 7 and bool(row[7]))


def active_version(store: ChunkStore, doc_id: str) -> int:
    """The document's active version (0: none)."""
    return max((c.version for c in store.iter_chunks(doc_id=doc_id)), default=0)


def active_versions(index: LibraryPipeline, doc_ids: Sequence[str]) -> dict[str, int]:
    """``{doc_id: active version}`` of those of ``doc_ids`` that are active (one read)."""
    out: dict[str, int] = {}
    for c in index.active_chunks(doc_ids):
        out[c.doc_id] = max(out.get(c.doc_id, 0), c.version)
    return out


class Groups:
    """A job's documents in order, taken in groups for one replace each: a ``doc_id`` at
    most once per group and about :data:`BATCH_CHARS` of text at most. The group size adapts
    so that a group takes about :data:`GROUP_TARGET_S` (progress stays fresh while a slow
    model embeds): it starts at one document, at most doubles, and stays within
    :data:`BATCH_DOCS`."""

    def __init__(self, docs: Sequence[Mapping[str, Any]]) -> None:
        self._docs = list(docs)
        self._next = 0
        self.size = 1

    def take(self) -> list[Mapping[str, Any]]:
        group: list[Mapping[str, Any]] = []
        ids: set[str] = set()
        chars = 0
        while self._next < len(self._docs) and len(group) < self.size:
            doc = self._docs[self._next]
            if group and (doc["doc_id"] in ids or chars + len(doc["text"]) > BATCH_CHARS):
                break
            group.append(doc)
            ids.add(doc["doc_id"])
            chars += len(doc["text"])
            self._next += 1
        return group

    def took(self, n_docs: int, seconds: float) -> None:
        """A group of ``n_docs`` took ``seconds``: size the next one."""
        per_doc = max(seconds, 1e-6) / max(n_docs, 1)
        self.size = max(1, min(BATCH_DOCS, 2 * self.size, int(GROUP_TARGET_S / per_doc)))


def run_job(ctx: ServiceContext, job_id: str) -> None:
    """Run one queued job (see the module docstring); a job that is not queued is skipped.
    While it runs, its heartbeat says this worker is alive (:mod:`ragspine.service.jobs`)."""
    from ragspine.service.jobs import heartbeat_interval, heartbeating, worker_name

    claimed = ctx.store.claim_job(job_id, worker_name())
    if claimed is None:
        return
    job, payload = claimed
    stale_after = ctx.settings.job_stale_after
    with heartbeating(ctx.store, job_id, heartbeat_interval(stale_after)):
        state, fields = _apply(ctx, job_id, job, payload)
        _finish(ctx, job_id, state, fields, patience=stale_after / 2)


def _finish(ctx: Any, job_id: str, state: str, fields: dict[str, Any], *, patience: float) -> None:
    """Record the outcome, retrying while the database is briefly away (the heartbeat keeps
    the job alive meanwhile); past ``patience`` the sweep fails the job once it is back."""
    from ragspine.errors import BackendError

    give_up, pause = time.monotonic() + patience, 0.2
    while True:
        try:
            ctx.store.finish_job(job_id, state, **fields)
            return
        except BackendError:
            if time.monotonic() + pause > give_up:
                raise
            time.sleep(pause)
            pause = min(pause * 2, 5.0)


def _apply(ctx: Any, job_id: str, job: Any, payload: Any) -> tuple[str, dict[str, Any]]:
    """Write the job's documents (or, for an embed job, the library's missing vectors); its
    final state and the fields to record."""
    if (payload or {}).get("embed"):
        return _embed(ctx, job_id, job)
    docs = list((payload or {}).get("documents", []))
    warnings: list[str] = []
    current: str | None = None
    written, done, reported = 0, 0, time.monotonic()
    try:
        library = ctx.store.library_by_id(job.library_id)
        if library is None:
            raise IngestError("the library was deleted")
        ctx.stack.preflight(library.library_id, mode=library.retrieval_mode, embedding=library.embedding)  # before any write
        index = ctx.index(library)
        groups = Groups(docs)
        while group := groups.take():
            started = time.monotonic()
            planned = []
            for doc in group:
                current = doc["doc_id"]
                planned.append((doc, plan(index.chunker, doc)))
            current = None
            rows = None
            if len(planned) > 1:
                try:
                    rows = _write_group(index, planned, warnings)
                except Exception:  # nothing written: document by document names the one that fails
                    rows = None
            if rows is not None:
                written, done = written + rows, done + len(planned)
                _count(ctx, "ingest_documents", "succeeded", len(planned))
                _count(ctx, "ingest_chunks", None, sum(len(chunks) for _, chunks in planned))
            else:  # one document, or the group could not be written at once: document by document
                for doc, chunks in planned:
                    current = doc["doc_id"]
                    written += _write_group(index, [(doc, chunks)], warnings)
                    done += 1
                    _count(ctx, "ingest_documents", "succeeded")
                    _count(ctx, "ingest_chunks", None, len(chunks))
            current = None
            groups.took(len(group), time.monotonic() - started)
            if time.monotonic() - reported >= PROGRESS_EVERY_S:
                ctx.store.progress(job_id, done, written)
                reported = time.monotonic()
    except Exception as exc:
        where = f"document {current!r} failed" if current is not None else "the job failed"
        error = f"{where}: {_reason(exc)}; it keeps its previous version"
        _count(ctx, "ingest_documents", "failed")
        _count(ctx, "jobs_finished", "failed")
        return "failed", {"error": error, "warning": "; ".join(warnings) or None, "done": done, "chunks": written}
    _count(ctx, "jobs_finished", "succeeded")
    return "succeeded", {"warning": "; ".join(warnings) or None, "done": done, "chunks": written}


def _write_group(index: Any, planned: Sequence[tuple[Mapping[str, Any], list[Chunk]]], warnings: list[str]) -> int:
    """Replace the documents of ``planned`` in one transaction, their vectors computed into
    the cache first (a failing model stops here, nothing written). Rows written; a failure of
    the vector write after the commit is a warning (the documents are searchable); when the
    replace itself failed — nothing changed — its error is raised."""
    from ragspine.retrieval.chunking.chunk_store import DocumentChunks

    index.retriever.warm_cache([c for _, chunks in planned for c in chunks])
    doc_ids = [doc["doc_id"] for doc, _ in planned]
    docs = [DocumentChunks(doc["doc_id"], chunks, doc["valid_as_of"], payload_acl(doc)) for doc, chunks in planned]
    before = active_versions(index, doc_ids)
    try:
        return int(index.replace_docs(docs))
    except Exception as exc:
        if active_versions(index, doc_ids) == before:
            raise  # the replace itself failed: the previous versions are still active
        warnings.extend(f"{d}: vectors not stored yet ({_reason(exc)}); run `ragspine embed` or POST .../embed" for d in doc_ids)
        return sum(len(chunks) for _, chunks in planned)


def _embed(ctx: Any, job_id: str, job: Any) -> tuple[str, dict[str, Any]]:
    """An embed job: every active chunk of the library without a current vector gets one;
    ``done``/``total`` count the chunks the model embeds (cached vectors are not counted)."""
    done, reported = 0, time.monotonic()
    try:
        library = ctx.store.library_by_id(job.library_id)
        if library is None:
            raise IngestError("the library was deleted")
        index = ctx.index(library, "hybrid" if library.embedding != "none" else None)
        if index.embedding_backend is None:
            raise IngestError(f"library {library.name!r} has no embedding model (embedding_model 'none'): nothing to embed")

        def expect(n: int) -> None:
            ctx.store.progress(job_id, 0, 0, total=n)

        def advance(n: int) -> None:
            nonlocal done, reported
            done += n
            if time.monotonic() - reported >= PROGRESS_EVERY_S:
                ctx.store.progress(job_id, done, done)
                reported = time.monotonic()

        embedded = index.sync_vectors(progress=advance, expect=expect)
    except Exception as exc:
        _count(ctx, "jobs_finished", "failed")
        return "failed", {"error": f"embedding failed: {_reason(exc)}; the vectors written so far stay", "done": done, "chunks": done}
    _count(ctx, "jobs_finished", "succeeded")
    return "succeeded", {"done": embedded, "chunks": embedded}


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _count(ctx: Any, name: str, label: str | None, amount: float = 1) -> None:
    if ctx.metrics is not None:
        ctx.metrics.count(name, label, amount)
