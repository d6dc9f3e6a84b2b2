"""What a request's principal may see of a library: the documents, their counts, the jobs that
name them, the facts read from them.

A request runs for ``Viewer(principal_of(request))`` (:func:`viewer_of`): a key bound to a user
(or a trusted application naming one) sees the documents whose ACL lets it in and every
document without one; a key that is no principal sees only the documents without an ACL.
What it may not see is answered **exactly like what does not exist**: a hidden document is
left out of listings and counts, its ``DELETE`` is the 404 of an unknown ``doc_id``; a job that
names a hidden document is the 404 of an unknown job — for a key that acts as a principal; a
key that is no principal (the tenant's ingest keys) sees every job of the tenant, so it can
follow the documents it uploads with an ACL (a job holds no text: its doc ids, counts, state);
a fact read from a hidden document is ``not_found``. A job's document is hidden by the ACL the
store gives it and by the one it was uploaded with: the payload keeps that one while the job
waits or runs, and after a job that did not succeed (its document may never have reached the
store). An embed job names no document but counts the chunks of every one, so a principal is
never shown one (the unknown-job 404, whatever the library holds: it cannot start one either).
One ACL snapshot (``document_acls()``, one statement) is read per library and request; a
library without any ACL costs that one read and changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from fastapi import HTTPException, Request

from ragspine.retrieval.chunking.chunk_store import DocumentAcls, LibraryInfo
from ragspine.security.principals import ACL, OPEN, Viewer
from ragspine.service.auth import principal_of
from ragspine.service.context import ServiceContext
from ragspine.service.store import Job

#: jobs whose payload still holds the documents (and the ACL they are uploaded with)
PENDING_STATES = ("queued", "running")
#: jobs whose payload keeps, once ended, the ACLs their documents were uploaded with (``store.acl_residue``)
KEPT_STATES = (*PENDING_STATES, "failed")


def viewer_of(request: Request) -> Viewer:
    """Whom the request's searches and listings run for (a FastAPI dependency)."""
    return Viewer(principal_of(request))


def read_only_principal(request: Request) -> None:
    """A dependency of every route that writes (documents, facts, libraries, RAPTOR trees): a key
    acting as a user only reads. It is refused whatever it names — a document it may not see
    cannot be overwritten, nor its existence learnt from the answer."""
    if principal_of(request) is not None:
        raise HTTPException(403, detail="this key acts as a user and may only read: write with one of the tenant's keys"
                                        " that act as no user, or through the admin API")


def document_acls(ctx: ServiceContext, library_id: str) -> dict[str, ACL]:
    """``{doc_id: ACL}`` of the library's documents with an ACL (``{}``: a store without ACLs)."""
    store = ctx.stack.db.chunk_store(library_id)
    return dict(store.document_acls()[1]) if isinstance(store, DocumentAcls) else {}


def hidden_from(viewer: Viewer, acls: Mapping[str, ACL]) -> set[str]:
    """The doc ids of ``acls`` that ``viewer`` may not read."""
    return {doc_id for doc_id, acl in acls.items() if not viewer.sees(acl)}


def hidden_docs(ctx: ServiceContext, library_id: str, viewer: Viewer) -> set[str]:
    return hidden_from(viewer, document_acls(ctx, library_id))


def visible_counts(ctx: ServiceContext, info: LibraryInfo | None, viewer: Viewer) -> LibraryInfo | None:
    """``info`` with the documents and chunks ``viewer`` may see (``info`` itself when it sees all)."""
    if info is None:
        return None
    hidden = hidden_docs(ctx, info.library_id, viewer)
    if not hidden:
        return info
    store = ctx.stack.db.chunk_store(info.library_id)
    active = set(store.doc_ids())
    gone = hidden & active
    chunks = sum(len(store.iter_chunks(doc_id=doc_id)) for doc_id in sorted(gone))
    return LibraryInfo(info.library_id, info.description, info.created_at, info.documents - len(gone), info.chunks - chunks)


def pending_acls(ctx: ServiceContext, job: Job) -> dict[str, ACL]:
    """The ACLs a queued, running or failed job's documents are uploaded with (``{}`` for a job
    that succeeded: its documents' ACLs are the store's by then)."""
    if job.state not in KEPT_STATES or not job.doc_ids:
        return {}
    import sqlalchemy as sa

    from ragspine.service.schema import job_payload

    rows = ctx.store._read(sa.select(job_payload.c.payload).where(job_payload.c.job_id == job.job_id))  # ServiceStore has no public read of it
    payload = rows[0][0] if rows else None
    return {doc["doc_id"]: ACL.parse(doc["acl"]) for doc in _documents(payload) if doc.get("acl") is not None}


def _documents(payload: Any) -> Iterable[dict[str, Any]]:
    if isinstance(payload, str):
        import json

        payload = json.loads(payload)
    documents = payload.get("documents") if isinstance(payload, dict) else None
    return [d for d in documents or [] if isinstance(d, dict) and isinstance(d.get("doc_id"), str)]


def job_visible(ctx: ServiceContext, job: Job, viewer: Viewer, acls: Mapping[str, ACL] | None = None) -> bool:
    """Whether ``viewer`` may see ``job``: a key that is no principal sees every job (see the
    module docstring); a principal, a job whose every document is one it may read, by the
    library's ACLs (``acls``: that snapshot, read when not given) and by the ACL the job
    uploads it with (kept after a failure). A job naming no document (an embed job: its counts
    span every document) is shown to no principal."""
    if viewer.everything or viewer.principal is None:
        return True
    if not job.doc_ids:
        return False
    stored = document_acls(ctx, job.library_id) if acls is None else acls
    pending = pending_acls(ctx, job)
    return all(viewer.sees(stored.get(d, OPEN)) and viewer.sees(pending.get(d, OPEN)) for d in job.doc_ids)


def visible_jobs(ctx: ServiceContext, jobs: list[Job], viewer: Viewer) -> list[Job]:
    """``jobs`` less those ``viewer`` may not see (one ACL snapshot per library)."""
    snapshots: dict[str, dict[str, ACL]] = {}
    out = []
    if viewer.principal is None or viewer.everything:
        return list(jobs)
    for job in jobs:
        if job.doc_ids and job.library_id not in snapshots:
            snapshots[job.library_id] = document_acls(ctx, job.library_id)
        if job_visible(ctx, job, viewer, snapshots.get(job.library_id, {})):
            out.append(job)
    return out
