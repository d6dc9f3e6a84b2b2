"""``/v1/libraries/{name}/raptor``: a library's RAPTOR tree — build it (``POST``), see it (``GET``);
and the checks of a ``/v1/retrieve`` request that asks for RAPTOR.

A build runs in the request (bounded by its deadline, one at a time per process: a
:class:`~ragspine.service.limits.Lane`) through the library's own pipeline
(its embedding model), with the server's ``RAGSPINE_RAPTOR_*`` options; it answers what the
tree is, or that it was already current. It needs vectors: a library in economy mode is a
400 naming why, as is a retrieval asking for RAPTOR on one, or on a library without a tree.
Builds are counted and timed in ``/metrics`` (``ragspine_raptor_builds_total{outcome}``,
``ragspine_raptor_build_duration_seconds``). Synthesis texts are never served here: they
are probes, never evidence.

Under document ACLs (``routes/visibility.py``) a key is shown the tree its own searches use, as
if the documents it may not read did not exist: ``nodes`` and ``levels`` count the nodes all of
whose leaves it may read (a node with a hidden leaf contributes nothing to its searches, so it
is absent here too), ``chunks`` the open chunks of the documents it may read that the build
clustered, and ``state`` turns ``stale`` only when one of those documents changed. The tree was
built over every document, so these are not always the totals a library of only the readable
documents would show after its own build (hidden chunks may have joined a readable cluster):
they are what this key's retrieval runs on, computed from the same one ACL snapshot; with
nothing hidden, the tree's own totals. ``build_seconds`` is the build's, a timing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fastapi import APIRouter, Depends
from pydantic import BaseModel, ConfigDict, Field

from ragspine.errors import ConfigError
from ragspine.retrieval.chunking.chunk_store import ChangeLog
from ragspine.retrieval.raptor.base import RaptorOptions, RaptorStore, TreeInfo, open_members
from ragspine.security.principals import Viewer
from ragspine.service.context import ServiceContext
from ragspine.service.limits import Lane
from ragspine.service.routes.common import context, documented_bearer, library_or_404, tenant_id
from ragspine.service.routes.visibility import hidden_docs, read_only_principal, viewer_of
from ragspine.service.store import Library

router = APIRouter(prefix="/v1/libraries", tags=["raptor"], dependencies=[Depends(documented_bearer)])

#: POST /v1/libraries/{name}/raptor's turns (see :class:`~ragspine.service.limits.Lane`)
RAPTOR_LANE = Lane("a RAPTOR build")


class RaptorBuildIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    force: bool = Field(False, description="build even when the stored tree is current")


class RaptorTreeOut(BaseModel):
    library: str
    state: str = Field(description="none | current | stale (the library changed since: its changed nodes are ignored)")
    outcome: str | None = Field(None, description="POST only: built | unchanged")
    nodes: int = 0
    chunks: int = Field(0, description="open chunks the build clustered")
    levels: int = 0
    model: str | None = None
    summarizer: str | None = None
    built_at: str | None = None
    build_seconds: float | None = None


def _out(library: Library, info: TreeInfo | None, seq: int | None, outcome: str | None = None) -> RaptorTreeOut:
    if info is None:
        return RaptorTreeOut(library=library.name, state="none", outcome=outcome)
    state = "current" if seq is None or seq == info.change_seq else "stale"
    return RaptorTreeOut(
        library=library.name, state=state, outcome=outcome, nodes=info.nodes, chunks=info.chunks, levels=info.levels,
        model=info.model, summarizer=str(info.params.get("summarizer")), built_at=info.built_at, build_seconds=info.build_seconds,
    )


def _seq(ctx: ServiceContext, library: Library) -> int | None:
    store = ctx.stack.db.chunk_store(library.library_id)
    return store.change_seq() if isinstance(store, ChangeLog) else None


def _seen(ctx: ServiceContext, library: Library, trees: RaptorStore, info: TreeInfo | None, viewer: Viewer,
          outcome: str | None = None) -> RaptorTreeOut:
    """The tree as ``viewer`` may see it (the module docstring): its totals less what it may not read."""
    hidden = hidden_docs(ctx, library.library_id, viewer) if info is not None else set()
    if info is None or not hidden:
        return _out(library, info, _seq(ctx, library), outcome)
    tree = trees.load()
    if tree is None or tree.info != info:  # rebuilt or dropped in between: the newest, read whole
        return _seen(ctx, library, trees, tree.info if tree is not None else None, viewer, outcome)
    store = ctx.stack.db.chunk_store(library.library_id)
    changed = set(store.changes_since(info.change_seq)[1]) if isinstance(store, ChangeLog) else set()
    usable = [n for n in tree.nodes if not any(leaf.doc_id in hidden for leaf in n.leaves)]
    built_hidden = 0  # the hidden documents' open chunks the build clustered
    for doc_id in sorted(hidden):
        if doc_id in changed:  # changed since: the build read the version its leaves name (none: not counted)
            versions = {leaf.version for n in tree.nodes for leaf in n.leaves if leaf.doc_id == doc_id}
            built_hidden += len(open_members([c for c in store.iter_chunks(doc_id=doc_id, include_inactive=True) if c.version in versions]))
        else:
            built_hidden += len(open_members(store.iter_chunks(doc_id=doc_id)))
    out = _out(library, info, None, outcome)
    out.state = "stale" if changed - hidden else "current"  # a readable document changed, or the library was dropped ("")
    out.nodes, out.levels = len(usable), max((n.level for n in usable), default=0)
    out.chunks = max(info.chunks - built_hidden, 0)
    return out


def _needs_vectors(library: Library, pipeline: Any) -> None:
    if getattr(pipeline.retriever, "dense", None) is None:
        raise ConfigError(f"RAPTOR needs chunk vectors, and library {library.name!r} runs in economy mode (no embedding model)")


@router.post("/{name}/raptor",
             dependencies=[Depends(read_only_principal)], response_model=RaptorTreeOut, summary="Build the library's RAPTOR tree")
async def build_tree(name: str, body: RaptorBuildIn | None = None, ctx: ServiceContext = Depends(context),
                     tenant: str = Depends(tenant_id), viewer: Viewer = Depends(viewer_of)) -> RaptorTreeOut:
    # clustering up to RAGSPINE_RAPTOR_MAX_CHUNKS chunks: a CPU-bound step, one build at a time
    # per process (the others wait without a thread until their deadline), checking the deadline
    return await RAPTOR_LANE.run(_build_tree, name, body, ctx, tenant, viewer)


def _build_tree(name: str, body: RaptorBuildIn | None, ctx: ServiceContext, tenant: str, viewer: Viewer) -> RaptorTreeOut:
    from ragspine.retrieval.raptor.build import rebuild
    from ragspine.retrieval.raptor.summarize import make_summarizer

    library = library_or_404(ctx, tenant, name)
    pipeline = ctx.index(library)
    _needs_vectors(library, pipeline)
    options = RaptorOptions.from_settings(ctx.settings)
    summarizer = make_summarizer(options.summarizer, provider=ctx.stack.provider if options.summarizer == "llm" else None)
    trees = ctx.stack.raptor_store(library.library_id)
    tree, outcome = rebuild(pipeline, trees, options=options, summarizer=summarizer, force=bool(body and body.force),
                            observer=ctx.metrics)
    return _seen(ctx, library, trees, tree.info if tree is not None else trees.info(), viewer, outcome)


@router.get("/{name}/raptor", response_model=RaptorTreeOut, summary="The library's RAPTOR tree")
def show_tree(name: str, ctx: ServiceContext = Depends(context), tenant: str = Depends(tenant_id),
              viewer: Viewer = Depends(viewer_of)) -> RaptorTreeOut:
    library = library_or_404(ctx, tenant, name)
    trees = ctx.stack.raptor_store(library.library_id)
    return _seen(ctx, library, trees, trees.info(), viewer)


def check_raptor_request(ctx: ServiceContext, libraries: Sequence[Library], pipelines: Mapping[str, Any], raptor: bool | None) -> None:
    """A retrieval with RAPTOR on (the request's ``raptor``, else the library's, else
    ``RAGSPINE_RAPTOR``): each such library needs vectors and a tree (400 naming the library and the fix)."""
    for library in libraries:
        if not ctx.raptor(library, raptor):
            continue
        _needs_vectors(library, pipelines[library.library_id])
        if ctx.stack.raptor_store(library.library_id).info() is None:
            raise ConfigError(f"library {library.name!r} has no RAPTOR tree: POST /v1/libraries/{library.name}/raptor builds it")
