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

A failed job reports the document and the reason; that document and the ones after it keep
their previous version (documents before it in the same batch were applied).
"""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Mapping
from typing import Any

from ragspine.documents import decode_document, first_heading
from ragspine.errors import IngestError
from ragspine.retrieval.chunking.base import Chunker
from ragspine.retrieval.chunking.chunking import Chunk
from ragspine.retrieval.metadata import validate_metadata
from ragspine.retrieval.sensitivity import parse_sensitivity, reserved_key, split_document_fields

PROGRESS_EVERY_S = 0.5  # progress is written at most this often (and when the job ends)


def document_payload(doc: Any) -> dict[str, Any]:
    """A validated :class:`~ragspine.service.models.DocumentIn` as the job stores it."""
    return storable({
        "doc_id": doc.doc_id, "title": doc.title, "text": doc.text, "metadata": dict(doc.metadata),
        "sensitivity": parse_sensitivity(doc.sensitivity, f"document {doc.doc_id!r}"),
        "valid_as_of": doc.valid_as_of, "source": doc.doc_id, "source_offset": 0,
    })


def storable(payload: dict[str, Any]) -> dict[str, Any]:
    """Refuse at upload what no job could store on every backend: a NUL character (PostgreSQL
    text cannot hold it) or a lone surrogate (not UTF-8) in a field or a metadata key/value —
    so the embedded default and PostgreSQL refuse the same documents, and say so at once."""
    fields = [(name, payload[name]) for name in ("doc_id", "title", "sensitivity", "valid_as_of", "source")]
    fields += [(f"metadata key {key!r}", key) for key in payload["metadata"]]
    fields += [(f"metadata[{key!r}]", value) for key, value in payload["metadata"].items() if isinstance(value, str)]
    for what, value in fields:
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise IngestError(f"document {payload['doc_id']!r}: {what} contains a lone surrogate (not valid Unicode)") from None
        if "\x00" in value:
            raise IngestError(f"document {payload['doc_id']!r}: {what} contains a NUL character")
    return payload


def file_payload(filename: str, raw: bytes, fields: Mapping[str, str | None]) -> dict[str, Any]:
    """A ``.txt``/``.md`` upload: UTF-8, optional YAML front matter (``doc_id, title,
    sensitivity, valid_as_of`` + metadata), form fields override it. Locators point into the
    uploaded file. Raises :class:`IngestError` naming the problem."""
    name = filename or "upload.txt"
    front_matter, body, offset = decode_document(raw, name)
    front, extra_front = split_document_fields(front_matter, name)
    meta: dict[str, Any] = {k: _plain(v) for k, v in extra_front.items()}
    if fields.get("metadata"):
        try:
            extra = json.loads(fields["metadata"] or "")
        except ValueError:
            raise IngestError("metadata: not valid JSON (send a JSON object)") from None
        if not isinstance(extra, dict):
            raise IngestError("metadata: send a JSON object of field -> scalar")
        reserved = sorted(k for k in extra if reserved_key(k))
        if reserved:
            raise IngestError(f"metadata: {reserved[0]!r} is a document field; send it as a form field")
        meta.update(extra)
    try:
        metadata = validate_metadata(meta)
    except IngestError as exc:
        raise IngestError(f"{name}: {exc}") from None
    stem = name.rsplit("/", 1)[-1]
    doc_id = fields.get("doc_id") or str(front.get("doc_id") or stem)
    title = fields.get("title") or str(front.get("title") or first_heading(body, stem) or stem.rsplit(".", 1)[0])
    return storable({
        "doc_id": doc_id, "title": title, "text": body, "metadata": metadata,
        "sensitivity": parse_sensitivity(fields.get("sensitivity") or front.get("sensitivity"), name),
        "valid_as_of": fields.get("valid_as_of") or str(_plain(front.get("valid_as_of")) or ""),
        "source": stem, "source_offset": offset,
    })


def _plain(value: Any) -> Any:
    return value.isoformat() if isinstance(value, (dt.date, dt.datetime)) else value


def plan(chunker: Chunker, doc: Mapping[str, Any]) -> list[Chunk]:
    """The chunks of one uploaded document (the library's chunker)."""
    return chunker.chunk(
        doc["text"], doc["doc_id"], title=doc["title"], metadata=doc["metadata"], sensitivity=doc["sensitivity"],
        source=doc["source"], source_offset=doc["source_offset"],
    )


def active_version(store: Any, doc_id: str) -> int:
    return max((c.version for c in store.iter_chunks(doc_id=doc_id)), default=0)


def run_job(ctx: Any, job_id: str) -> None:
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
    written, warnings, current, done, reported = 0, [], None, 0, time.monotonic()
    try:
        library = ctx.store.library_by_id(job.library_id)
        if library is None:
            raise IngestError("the library was deleted")
        ctx.stack.preflight(library.library_id, mode=library.retrieval_mode, embedding=library.embedding)  # before any write
        index = ctx.index(library)
        for position, doc in enumerate(docs, 1):
            current = doc["doc_id"]
            chunks = plan(index.chunker, doc)
            index.retriever.warm_cache(chunks)  # a failing model stops here, nothing written
            before = active_version(index.store, current)
            try:
                written += index.replace_doc_chunks(current, chunks, valid_as_of=doc["valid_as_of"])
            except Exception as exc:
                if active_version(index.store, current) == before:
                    raise  # the replace itself failed: the previous version is still active
                written += len(chunks)
                warnings.append(f"{current}: vectors not stored yet ({_reason(exc)}); run `ragspine embed` or POST .../embed")
            done = position
            if time.monotonic() - reported >= PROGRESS_EVERY_S:
                ctx.store.progress(job_id, done, written)
                reported = time.monotonic()
            _count(ctx, "ingest_documents", "succeeded")
            _count(ctx, "ingest_chunks", None, len(chunks))
    except Exception as exc:
        where = f"document {current!r} failed" if current is not None else "the job failed"
        error = f"{where}: {_reason(exc)}; it keeps its previous version"
        _count(ctx, "ingest_documents", "failed")
        _count(ctx, "jobs_finished", "failed")
        return "failed", {"error": error, "warning": "; ".join(warnings) or None, "done": done, "chunks": written}
    _count(ctx, "jobs_finished", "succeeded")
    return "succeeded", {"warning": "; ".join(warnings) or None, "done": done, "chunks": written}


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
