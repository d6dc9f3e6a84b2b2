"""Documents and ingestion jobs: upload (JSON, batch, file) → a background job; retire.

A document may be uploaded with an ACL (``acl``: ``{"allow": [...], "deny": [...]}``, a list of
entries, or — in the upload form — one comma-separated string; :meth:`ACL.parse` reads it, a bad
one is a 422 naming it): the job's payload keeps it canonical (``acl.as_dict()``) and the ingest
gives the document that ACL. In JSON an empty ACL (``{}``, ``[]``, ``""``) opens the document to
every principal; in the form that is written ``open`` (an ACL naming nobody is refused, and an
empty field is one left out: nothing is sent).
Any key of the tenant may upload with an ACL (ACLs are set by the tenant's ingest keys and by
the admin, ``PUT /v1/admin/.../documents/{doc_id}/acl``). Listings, ``DELETE`` and the jobs show
a key only the documents its principal may read (``routes/visibility.py``): another principal's
document is answered exactly like a missing one.
"""

from __future__ import annotations

import uuid
from typing import Any

from fastapi import APIRouter, Depends, File, Form, Query, UploadFile

from ragspine.readers.base import ReaderLimits
from ragspine.security.principals import Viewer
from ragspine.service.context import ServiceContext
from ragspine.service.errors import NotFound
from ragspine.service.ingest import FormAclError, active_version, document_payload, file_payload
from ragspine.service.models import DocumentBatchIn, DocumentIn, JobOut
from ragspine.service.routes.common import (
    context,
    documented_bearer,
    external_name,
    job_out,
    library_or_404,
    tenant_id,
)
from ragspine.service.routes.visibility import hidden_docs, job_visible, read_only_principal, viewer_of, visible_jobs
from ragspine.service.store import Job, Library

router = APIRouter(prefix="/v1", tags=["documents"], dependencies=[Depends(documented_bearer)])

def enqueue(ctx: ServiceContext, library: Library, docs: list[dict[str, Any]], *, payload: dict[str, Any] | None = None) -> JobOut:
    """Record the job, hand it to the queue, then supersede the document's older queued jobs.
    A queue that refuses the job leaves nothing behind (the row is removed, older jobs stay
    queued): the client's retry is the only copy."""
    job_id = uuid.uuid4().hex
    doc_ids = [d["doc_id"] for d in docs]
    job = ctx.store.create_job(job_id, library.tenant_id, library.library_id, doc_ids, payload or {"documents": docs})
    try:
        ctx.queue.submit(job_id)
    except Exception:
        ctx.store.delete_job(job_id)
        raise
    if len(doc_ids) == 1:
        ctx.store.supersede(library.library_id, doc_ids[0], f"superseded by job {job_id} (a later upload of {doc_ids[0]!r})",
                            keep=job_id)
    return job_out(job, library.name)


@router.post("/libraries/{name}/documents",
             dependencies=[Depends(read_only_principal)], status_code=202, response_model=JobOut, summary="Add or replace one document (a job)")
def upload_document(name: str, body: DocumentIn, ctx: ServiceContext = Depends(context), tenant: str = Depends(tenant_id)) -> JobOut:
    return enqueue(ctx, library_or_404(ctx, tenant, name), [document_payload(body)])


@router.post("/libraries/{name}/documents/batch",
             dependencies=[Depends(read_only_principal)], status_code=202, response_model=JobOut, summary="Add or replace many documents (one job)")
def upload_batch(name: str, body: DocumentBatchIn, ctx: ServiceContext = Depends(context), tenant: str = Depends(tenant_id)) -> JobOut:
    return enqueue(ctx, library_or_404(ctx, tenant, name), [document_payload(d) for d in body.documents])


@router.post("/libraries/{name}/documents/upload",
             dependencies=[Depends(read_only_principal)], status_code=202, response_model=JobOut,
             summary="Upload a file: text, Markdown, PDF, Word, PowerPoint, Excel, CSV, HTML (a job)")
def upload_file(
    name: str,
    file: UploadFile = File(description="a .txt/.md (UTF-8, optional YAML front matter), .pdf, .docx, .pptx, .xlsx, .csv/.tsv or"
                            " .html/.htm file; its reader is picked by its content"),
    doc_id: str | None = Form(None, max_length=512, description="default: front matter doc_id, else the file name"),
    title: str | None = Form(None, max_length=1000, description="default: front matter title, else the file's own, else its first heading"),
    sensitivity: str | None = Form(None, max_length=64, description="default: front matter sensitivity, else the default (fails closed)"),
    valid_as_of: str | None = Form(None, max_length=64),
    metadata: str | None = Form(None, description="a JSON object of field -> scalar"),
    acl: str | None = Form(None, max_length=20_000, description="who may read it: comma-separated 'group:<name>' / 'user:<name>'"
                           " entries (allow), or JSON {\"allow\": [...], \"deny\": [...]}; open: no ACL, every principal"),
    ctx: ServiceContext = Depends(context),
    tenant: str = Depends(tenant_id),
) -> JobOut:
    library = library_or_404(ctx, tenant, name)
    filename = file.filename or "upload.txt"
    fields = {"doc_id": doc_id, "title": title, "sensitivity": sensitivity, "valid_as_of": valid_as_of, "metadata": metadata,
              "acl": acl}
    settings = ctx.settings
    raw = file.file.read(settings.max_file_bytes + 1)  # one byte over the limit is enough to refuse it
    try:
        payload = file_payload(filename, raw, fields, media_type=file.content_type or "", max_bytes=settings.max_file_bytes,
                               limits=ReaderLimits.from_settings(settings))
    except FormAclError as exc:  # the form's field: the documented validation 422 on ``acl``
        from fastapi.exceptions import RequestValidationError

        raise RequestValidationError([{"loc": ("body", "acl"), "msg": exc.reason, "type": "value_error", "input": acl}]) from None
    return enqueue(ctx, library, [payload])


@router.post("/libraries/{name}/embed",
             dependencies=[Depends(read_only_principal)], status_code=202, response_model=JobOut,
             summary="Compute the vectors the library lacks (a job; progress counts chunks)")
def embed_library(name: str, ctx: ServiceContext = Depends(context), tenant: str = Depends(tenant_id)) -> JobOut:
    return enqueue(ctx, library_or_404(ctx, tenant, name), [], payload={"embed": True})


@router.get("/libraries/{name}/documents", summary="List the active documents of a library")
def list_documents(name: str, ctx: ServiceContext = Depends(context), tenant: str = Depends(tenant_id),
                   viewer: Viewer = Depends(viewer_of)) -> dict[str, Any]:
    library = library_or_404(ctx, tenant, name)
    hidden = hidden_docs(ctx, library.library_id, viewer)
    return {"library": name, "doc_ids": [d for d in ctx.stack.db.chunk_store(library.library_id).doc_ids() if d not in hidden]}


@router.delete("/libraries/{name}/documents/{doc_id:path}",
             dependencies=[Depends(read_only_principal)], summary="Retire a document (its history stays)")
def retire_document(name: str, doc_id: str, ctx: ServiceContext = Depends(context), tenant: str = Depends(tenant_id)) -> dict[str, Any]:
    """Only a key that acts as no user gets here (``read_only_principal``): the tenant's own, which
    writes every document, with an ACL or not — as its uploads may replace any of them."""
    library = library_or_404(ctx, tenant, name)
    index = ctx.index(library)
    # PostgreSQL cannot even look up a NUL
    if "\x00" in doc_id or active_version(index.store, doc_id) == 0:
        raise NotFound(f"document {doc_id!r} not found in library {name!r}")
    ctx.store.supersede(library.library_id, doc_id, f"superseded: {doc_id!r} was deleted before this job ran")
    index.retire(doc_id)
    return {"library": name, "doc_id": doc_id, "retired": True}


@router.get("/jobs/{job_id}", response_model=JobOut, summary="An ingestion job: state, progress, error")
def get_job(job_id: str, ctx: ServiceContext = Depends(context), tenant: str = Depends(tenant_id),
            viewer: Viewer = Depends(viewer_of)) -> JobOut:
    job = ctx.store.get_job(job_id)
    if job is None or job.tenant_id != tenant or not job_visible(ctx, job, viewer):
        raise NotFound(f"job {job_id!r} not found")
    return job_out(job, external_name(job.library_id))


@router.get("/jobs", response_model=list[JobOut], summary="Recent jobs (newest first)")
def list_jobs(
    library: str | None = Query(None), limit: int = Query(50, ge=1, le=500),
    ctx: ServiceContext = Depends(context), tenant: str = Depends(tenant_id), viewer: Viewer = Depends(viewer_of),
) -> list[JobOut]:
    library_id = library_or_404(ctx, tenant, library).library_id if library is not None else None
    return [job_out(j, external_name(j.library_id)) for j in newest_visible_jobs(ctx, tenant, library_id, limit, viewer)]


def newest_visible_jobs(ctx: ServiceContext, tenant: str, library_id: str | None, limit: int, viewer: Viewer) -> list[Job]:
    """The ``limit`` newest jobs ``viewer`` may see: jobs it may not see are skipped, not counted
    (a shorter page would tell that they exist)."""
    window = limit
    while True:
        jobs = ctx.store.list_jobs(tenant, library_id=library_id, limit=window)
        visible = visible_jobs(ctx, jobs, viewer)
        if len(visible) >= limit or len(jobs) < window:
            return visible[:limit]
        window *= 4
