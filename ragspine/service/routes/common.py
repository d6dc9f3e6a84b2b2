"""What the routers share: the context, the caller's tenant, library lookup, output shapes."""

from __future__ import annotations

import datetime as dt

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from ragspine.profile import Profile
from ragspine.retrieval.chunking.chunk_store import LibraryInfo
from ragspine.service.context import ServiceContext, tenant_text
from ragspine.service.errors import NotFound
from ragspine.service.models import JobOut, KeyOut, LibraryOut
from ragspine.service.profile_models import recipe_out
from ragspine.service.store import REASONING_FIELDS, ApiKey, Job, Library

_bearer = HTTPBearer(auto_error=False, description="a tenant API key (rsk_...) or, for /v1/admin, RAGSPINE_ADMIN_TOKEN")


def documented_bearer(credentials: HTTPAuthorizationCredentials | None = Depends(_bearer)) -> None:
    """Declares the bearer scheme in OpenAPI; the AuthMiddleware has already checked it."""


def context(request: Request) -> ServiceContext:
    ctx: ServiceContext = request.app.state.service
    return ctx


def tenant_id(request: Request) -> str:
    tenant: str = request.state.tenant_id
    return tenant


def iso(ts: float | None) -> str | None:
    return None if ts is None else dt.datetime.fromtimestamp(ts, dt.timezone.utc).isoformat(timespec="seconds")


def library_or_404(ctx: ServiceContext, tenant: str, name: str) -> Library:
    """The tenant's library ``name``; another tenant's library is answered exactly like a missing one."""
    library = ctx.store.get_library(tenant, name)
    if library is None:
        raise NotFound(f"library {name!r} not found")
    return library


def library_out(library: Library, server: Profile, counts: LibraryInfo | None = None) -> LibraryOut:
    """``library`` as the API shows it; ``recipe`` is what its searches run over the server's recipe ``server``."""
    ranking = library.ranking
    return LibraryOut(
        name=library.name, description=library.description, embedding_model=library.embedding,
        retrieval_mode=library.retrieval_mode, chunker=library.chunker, contextual=library.contextual,
        reranker=ranking.reranker, rerank_depth=ranking.rerank_depth, postprocessor=ranking.postprocessor,
        fusion_weights=ranking.fusion_weights, raptor=library.raptor,
        **{field: library.reasoning[option] for field, option in REASONING_FIELDS.items()},
        recipe=recipe_out(library.recipe(server)), created_at=iso(library.created_at) or "",
        documents=counts.documents if counts is not None else 0, chunks=counts.chunks if counts is not None else 0,
    )


def job_out(job: Job, library_name: str) -> JobOut:
    return JobOut(
        job_id=job.job_id, library=library_name, state=job.state, progress=f"{job.done}/{job.total}",
        done=job.done, total=job.total, doc_ids=list(job.doc_ids), chunks=job.chunks,
        error=tenant_text(job.error, job.tenant_id) if job.error else job.error,
        warning=tenant_text(job.warning, job.tenant_id) if job.warning else job.warning, created_at=iso(job.created_at) or "", started_at=iso(job.started_at),
        finished_at=iso(job.finished_at),
    )


def key_out(key: ApiKey, now: float) -> KeyOut:
    return KeyOut(
        key_id=key.key_id, prefix=key.prefix, label=key.label, created_at=iso(key.created_at) or "",
        expires_at=iso(key.expires_at), revoked_at=iso(key.revoked_at), active=key.active(now),
    )


def external_name(library_id: str) -> str:
    """``<tenant>/<name>`` → ``<name>`` (responses never show the tenant prefix)."""
    return library_id.split("/", 1)[1] if "/" in library_id else library_id
