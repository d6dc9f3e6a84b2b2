"""``/v1/libraries``: a tenant's libraries (create, list, show, delete).

A library keeps what it was created with: its embedding model, retrieval mode, chunker and
contextual header, its ranking (the server's where not given, fixed then), and the query-time
reasoning and RAPTOR switch it chose (where it chose none: the server's at each search).
Its ``documents`` and ``chunks`` count what the key's principal may read (``routes/visibility.py``).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Depends

from ragspine.errors import ConfigError
from ragspine.profile import OPTIONS, canonical_choice
from ragspine.registries import RAPTOR_STORES
from ragspine.retrieval.mode import RETRIEVAL_MODES, make_retrieval_mode
from ragspine.retrieval.ranking import Ranking
from ragspine.retrieval.raptor.retriever import raptor_store_kind
from ragspine.retrieval.reasoning.options import ReasoningOptions
from ragspine.security.principals import Viewer
from ragspine.service.context import ServiceContext, catalog_id
from ragspine.service.models import LibraryIn, LibraryOut
from ragspine.service.routes.common import (
    context,
    documented_bearer,
    library_or_404,
    library_out,
    tenant_id,
)
from ragspine.service.routes.visibility import read_only_principal, viewer_of, visible_counts
from ragspine.service.store import REASONING_FIELDS, Conflict, Library

if TYPE_CHECKING:
    from collections.abc import Mapping

router = APIRouter(prefix="/v1/libraries", tags=["libraries"], dependencies=[Depends(documented_bearer)])


def embedding_choices(ctx: ServiceContext) -> list[str]:
    """The embedding backends a library may use: the server's, the extra ones, and none."""
    if not ctx.stack.mode.uses_embeddings:
        return ["none"]
    extra = [e.strip().lower() for e in (ctx.settings.embedding_models or "").split(",") if e.strip()]
    return list(dict.fromkeys([ctx.settings.embedding, *extra, "none"]))


def resolve_library_settings(ctx: ServiceContext, embedding: str | None, mode: str | None) -> tuple[str, str]:
    choices = embedding_choices(ctx)
    if embedding is None:
        embedding = choices[0] if ctx.stack.embedding_backend_for(choices[0]) is not None else "none"
    embedding = embedding.strip().lower()
    if embedding not in choices:
        raise ConfigError(f"embedding_model {embedding!r} is not offered by this server; choose one of {', '.join(choices)}")
    try:
        resolved = make_retrieval_mode(mode if mode is not None else ctx.stack.mode.name)
    except ConfigError:
        raise ConfigError(f"unknown retrieval_mode {mode!r}; choose one of {', '.join(RETRIEVAL_MODES)}") from None
    if embedding == "none" or ctx.stack.embedding_backend_for(embedding) is None:
        if resolved.requires_embeddings:
            raise ConfigError(f"retrieval_mode {resolved.name!r} needs an embedding model, and this library has none")
        return "none", "economy"
    return embedding, resolved.name


def resolve_chunking(ctx: ServiceContext, chunker: str | None, contextual: str | None, embedding: str,
                     mode: str = "auto", library: str = "") -> tuple[str, str]:
    """The library's chunker and contextual header (the server's defaults when not given);
    ``semantic`` cuts by embedding similarity, so a library that computes no embeddings (no
    model, or economy mode) is refused it — a 422 on ``chunker`` naming the fix, where it
    was created and then every ingest job failed."""
    from ragspine.registries import CHUNKERS
    from ragspine.retrieval.contextual import parse_contextual

    name = CHUNKERS.canonical(chunker) if chunker is not None else ctx.settings.chunker
    header = parse_contextual(contextual) if contextual is not None else ctx.settings.contextual
    if name == "semantic":
        backend = ctx.stack.embedding_backend_for(embedding) if embedding != "none" else None
        if backend is None or not make_retrieval_mode(mode).uses_embeddings:
            _refuse_semantic(library, chunker is None, "has no embedding model" if backend is None else "runs in economy mode",
                             [n for n in CHUNKERS.names() if n != "semantic"])
        ctx.stack.chunker(name, backend)  # a chunker this server cannot build (e.g. RAGSPINE_CHUNK_PACKING): 400
    return name, header


def _refuse_semantic(library: str, by_default: bool, why: str, others: list[str]) -> None:
    from fastapi.exceptions import RequestValidationError

    chosen = "this server's default chunker (RAGSPINE_CHUNKER) is semantic" if by_default else "chunker 'semantic'"
    message = (f"{chosen}, which cuts where embedding similarity drops, and library {library!r} {why}, so it computes no"
               f" embeddings and every ingest would fail: give it an embedding_model and retrieval_mode auto, hybrid or vector,"
               f" or choose another chunker ({', '.join(others)})")
    raise RequestValidationError([{"loc": ("body", "chunker"), "msg": message, "type": "value_error", "input": "semantic"}])


def resolve_ranking(
    ctx: ServiceContext, reranker: str | None, postprocessor: str | None, fusion_weights: str | Mapping[str, object] | None,
    rerank_depth: int | None,
) -> Ranking:
    """A library's or a request's ranking (the server's where not given), its stages built now:
    a reranker that cannot run here (``cross_encoder`` without a model) is a 400 before anything
    is stored or searched."""
    ranking = ctx.stack.ranking(reranker, postprocessor, fusion_weights, rerank_depth)
    ctx.stack.stages(ranking)
    return ranking


def resolve_reasoning(ctx: ServiceContext, body: LibraryIn, mode: str) -> dict[str, Any]:
    """The library's own query-time reasoning and RAPTOR switch (``None`` where it chose none:
    the server's at each search), canonical and checked now — an unknown name, a fan-out over
    the server's, a step that needs a model on a server without one (naming ``RAGSPINE_LLM``),
    RAPTOR without vectors or tree tables: each a 400 before anything is stored."""
    own = {option: getattr(body, column) for column, option in REASONING_FIELDS.items() if getattr(body, column) is not None}
    resolved = ctx.stack.reasoning_options(**own)
    base = ReasoningOptions(fanout=resolved.fanout)
    for column, option in REASONING_FIELDS.items():
        if option in own and option != "fanout":
            try:
                ctx.stack.check_reasoning(base.override(**{option: own[option]}))
            except ConfigError as exc:
                raise ConfigError(f"{column}={getattr(body, column)!r} cannot run on this server: {exc}") from None
    if body.raptor:
        if mode == "economy":
            raise ConfigError(f"raptor needs chunk vectors, and library {body.name!r} runs in economy mode (no embedding model)")
        if raptor_store_kind(ctx.stack.db) is None:
            raise ConfigError(f"raptor: this server's chunk store keeps no RAPTOR trees (they are kept by {RAPTOR_STORES.choices()})")
    chosen: dict[str, Any] = {column: getattr(resolved, option) if option in own else None for column, option in REASONING_FIELDS.items()}
    return {**chosen, "raptor": body.raptor}


#: LibraryIn field -> the Profile choice it keeps
PROFILE_FIELDS = {
    "retrieval_mode": "mode", "embedding_model": "embedding", "chunker": "chunker", "contextual": "contextual",
    "reranker": "reranker", "rerank_depth": "rerank_depth", "postprocessor": "postprocessor", "fusion_weights": "fusion_weights",
    **REASONING_FIELDS, "raptor": "raptor",
}


def with_recipe(ctx: ServiceContext, body: LibraryIn) -> tuple[LibraryIn, dict[str, Any]]:
    """``body`` with its nested ``recipe``'s choices in the flat fields, and the registered
    profile options it sets. A choice made both ways with different values, or a chunk budget or
    packing other than the server's (a library keeps the server's), is refused: a 400 naming it."""
    if body.recipe is None:
        return body, {}
    choices = body.recipe.choices()
    options = {name: choices.pop(name) for name in list(choices) if name in OPTIONS}
    for choice in ("chunk_chars", "chunk_packing"):
        if choice in choices and canonical_choice(choice, choices.pop(choice)) != getattr(ctx.settings, choice):
            raise ConfigError(f"recipe {choice}: a library keeps this server's ({getattr(ctx.settings, choice)!r}); leave it out,"
                              f" or run the server with RAGSPINE_{choice.upper()}")
    update: dict[str, Any] = {}
    for field, choice in PROFILE_FIELDS.items():
        if choice not in choices:
            continue
        value = choices[choice]
        if field in body.model_fields_set and getattr(body, field) is not None and \
                canonical_choice(choice, getattr(body, field)) != canonical_choice(choice, value):
            raise ConfigError(f"{field}={getattr(body, field)!r} and recipe {choice}={value!r} differ: send the choice once")
        update[field] = value
    return body.model_copy(update=update), options


def with_profile(ctx: ServiceContext, body: LibraryIn) -> LibraryIn:
    """``body`` with its named ``profile``'s choices in every field it leaves out. A profile whose
    chunk budget or packing differs from the server's is refused (a library keeps the server's):
    a 400 naming the server setting that would make it fit."""
    if body.profile is None:
        return body
    from ragspine.profile import named_profile

    named = named_profile(body.profile)
    recipe = named.profile
    for choice, setting in (("chunk_chars", "chunk_chars"), ("chunk_packing", "chunk_packing")):
        if recipe.choice(choice) != getattr(ctx.settings, setting):
            raise ConfigError(
                f"profile {named.name!r} cuts documents with {choice}={recipe.choice(choice)!r}, and this server with"
                f" {getattr(ctx.settings, setting)!r}: a library keeps the server's; run the server with"
                f" RAGSPINE_PROFILE={named.name} (or RAGSPINE_{setting.upper()}={recipe.choice(choice)}), or choose the fields one by one"
            )
    given = body.model_fields_set
    chosen = {field: recipe.choice(choice) for field, choice in PROFILE_FIELDS.items() if field not in given}
    if chosen.get("embedding_model") == "onnx" and "onnx" not in embedding_choices(ctx) and ctx.settings.embedding == "auto":
        chosen["embedding_model"] = "auto"  # the server's auto is the packaged ONNX model
    return body.model_copy(update=chosen)


@router.post("",
             dependencies=[Depends(read_only_principal)], status_code=201, response_model=LibraryOut, summary="Create a library")
def create_library(body: LibraryIn, ctx: ServiceContext = Depends(context), tenant: str = Depends(tenant_id)) -> LibraryOut:
    body, options = with_recipe(ctx, body)
    body = with_profile(ctx, body)
    embedding, mode = resolve_library_settings(ctx, body.embedding_model, body.retrieval_mode)
    chunker, contextual = resolve_chunking(ctx, body.chunker, body.contextual, embedding, mode, body.name)
    ranking = resolve_ranking(ctx, body.reranker, body.postprocessor, body.fusion_weights, body.rerank_depth)
    reasoning = resolve_reasoning(ctx, body, mode)
    raptor = reasoning.pop("raptor")
    library = Library.create(
        catalog_id(tenant, body.name), tenant, body.name, body.description, time.time(), embedding=embedding, retrieval_mode=mode,
        chunker=chunker, contextual=contextual, ranking=ranking, reasoning=reasoning, raptor=raptor, options=options,
    )
    ctx.stack.preflight(library.library_id, mode=mode, embedding=embedding)  # a stack that cannot store it: 503, nothing made
    try:
        ctx.store.add_library(library)
    except Conflict:
        raise Conflict(f"library {body.name!r} exists already") from None
    try:
        if ctx.stack.library(library.library_id) is not None:  # leftovers of an interrupted delete
            ctx.stack.delete_library(library.library_id, embeddings=[embedding])
        info = ctx.stack.ensure_library(library.library_id, body.description, tenant_id=tenant)
    except Exception:
        ctx.store.delete_library(library.library_id)
        raise
    return library_out(library, ctx.stack.profile, info)


@router.get("", response_model=list[LibraryOut], summary="List the tenant's libraries")
def list_libraries(ctx: ServiceContext = Depends(context), tenant: str = Depends(tenant_id),
                   viewer: Viewer = Depends(viewer_of)) -> list[LibraryOut]:
    libraries = ctx.store.list_libraries(tenant)
    counts = {info.library_id: info for info in ctx.stack.libraries([lib.library_id for lib in libraries])} if libraries else {}
    return [library_out(lib, ctx.stack.profile, visible_counts(ctx, counts.get(lib.library_id), viewer)) for lib in libraries]


@router.get("/{name}", response_model=LibraryOut, summary="Show a library")
def get_library(name: str, ctx: ServiceContext = Depends(context), tenant: str = Depends(tenant_id),
                viewer: Viewer = Depends(viewer_of)) -> LibraryOut:
    library = library_or_404(ctx, tenant, name)
    return library_out(library, ctx.stack.profile, visible_counts(ctx, ctx.stack.library(library.library_id), viewer))


@router.delete("/{name}",
             dependencies=[Depends(read_only_principal)], summary="Delete a library: its chunks, vectors and cache entries in every store")
def delete_library(name: str, ctx: ServiceContext = Depends(context), tenant: str = Depends(tenant_id)) -> dict[str, Any]:
    library = library_or_404(ctx, tenant, name)
    ctx.stack.delete_library(library.library_id, embeddings=[library.embedding])  # stores first: a failure can be retried
    ctx.store.delete_library(library.library_id)
    return {"name": name, "deleted": True}
