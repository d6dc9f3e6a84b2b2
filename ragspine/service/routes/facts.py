"""The structured channel over HTTP: ``POST /v1/facts`` (ingest) and ``GET``/``POST /v1/metric``.

Both are tenant-scoped like every ``/v1`` route: a library is named by the tenant's name for
it, and another tenant's library is answered exactly like a missing one (404).

* ``POST /v1/facts`` checks every row (glossary keys, periods, values, dates) before anything
  is written, then replaces the source documents the rows name in one transaction. A bad row
  is a 422 whose ``errors`` list each ``{row, field, message}`` (rows count from 1) — and
  nothing was written.
* ``/v1/metric`` answers ``found`` (prose rebuilt from the stored fact, with its source),
  ``not_found`` (a fixed refusal without digits) or ``unrecognized_param`` (naming the inputs)
  — always 200: the status is the answer. Over several libraries, see
  :class:`~ragspine.agent.structured.StructuredPath` (never a choice between two stored numbers).
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

from fastapi import APIRouter, Depends, Query

from ragspine.agent.spotting import load_fact_glossary
from ragspine.agent.structured import StructuredPath
from ragspine.service.agent_models import FactsIn, FactsOut, MetricIn, MetricOut, RowErrorOut
from ragspine.service.context import ServiceContext
from ragspine.service.errors import EchoJSONResponse
from ragspine.service.models import MAX_LIBRARIES
from ragspine.service.routes.common import context, documented_bearer, external_name, library_or_404, tenant_id
from ragspine.service.store import Library
from ragspine.structured.channel import StructuredChannel
from ragspine.structured.factory import make_fact_store
from ragspine.structured.ingest import FactFileError, RowError, ingest_facts, parse_rows

router = APIRouter(prefix="/v1", tags=["structured"], dependencies=[Depends(documented_bearer)])


def tenant_libraries(ctx: ServiceContext, tenant: str, names: list[str] | None) -> list[Library]:
    """The libraries ``names`` (each the tenant's, else 404), or every library of the tenant."""
    if names:
        return [library_or_404(ctx, tenant, name) for name in dict.fromkeys(names)]
    return ctx.store.list_libraries(tenant)


@router.post("/facts", response_model=FactsOut, summary="Ingest numeric facts (all rows checked before any write)",
             responses={422: {"description": "a bad row: errors name each row and field; nothing was written"}})
def ingest(body: FactsIn, ctx: ServiceContext = Depends(context), tenant: str = Depends(tenant_id)) -> Any:
    library = library_or_404(ctx, tenant, body.library)
    rows, problems = [], []
    for number, row in enumerate(body.facts, 1):
        plain, bad = _plain_row(row)
        rows.append(plain)
        problems += [RowError(number, name, why) for name, why in bad]
    glossary = load_fact_glossary(ctx.settings.fact_glossary)
    try:
        if problems:  # with every other problem of every row, as a file's
            problems += parse_rows([(None, row) for row in rows], glossary)[1]
            raise FactFileError("facts", sorted(problems, key=lambda e: e.row))
        store = make_fact_store(library.library_id, database=ctx.stack.db)
        report = ingest_facts(store, rows, glossary=glossary)
    except FactFileError as exc:
        errors = [RowErrorOut(row=e.row, field=e.field, message=e.message).model_dump() for e in exc.errors]
        return EchoJSONResponse(status_code=422, content={"detail": str(exc), "errors": errors})
    return FactsOut(library=library.name, facts=report.facts, sources=list(report.sources), restricted=report.restricted)


def _plain_row(row: dict[str, Any]) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """A JSON row as the ingest reads a file's: a JSON number as an exact decimal (its shortest
    text), and text a store can hold (no lone surrogate)."""
    out: dict[str, Any] = {}
    bad: list[tuple[str, str]] = []
    for name, value in row.items():
        if isinstance(value, float):
            value = Decimal(repr(value)) if math.isfinite(value) else repr(value)
        if any(isinstance(text, str) and any("\ud800" <= ch <= "\udfff" for ch in text) for text in (name, value)):
            bad.append((ascii(name)[1:-1][:64], "holds a lone surrogate; send valid UTF-8 text"))
        out[name] = value
    return out, bad


@router.get("/metric", response_model=MetricOut, summary="One number from the fact table (found / not_found / unrecognized_param)")
def metric_get(
    metric: str = Query(min_length=1, max_length=200), entity: str = Query(min_length=1, max_length=200),
    period: str = Query(min_length=1, max_length=100), channel: str | None = Query(None, max_length=200),
    as_of: str | None = Query(None, pattern=r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"), language: str | None = Query(None, pattern=r"^(en|zh|ja)$"),
    library: list[str] | None = Query(None, max_length=MAX_LIBRARIES, description="library names (repeatable; default: all of the tenant's)"),
    ctx: ServiceContext = Depends(context), tenant: str = Depends(tenant_id),
) -> MetricOut:
    body = MetricIn(metric=metric, entity=entity, period=period, channel=channel, as_of=as_of, language=language, libraries=library)
    return metric_post(body, ctx, tenant)


@router.post("/metric", response_model=MetricOut, summary="One number from the fact table (found / not_found / unrecognized_param)")
def metric_post(body: MetricIn, ctx: ServiceContext = Depends(context), tenant: str = Depends(tenant_id)) -> MetricOut:
    libraries = tenant_libraries(ctx, tenant, body.libraries)
    glossary = load_fact_glossary(ctx.settings.fact_glossary)
    path = StructuredPath({lib.library_id: StructuredChannel(make_fact_store(lib.library_id, database=ctx.stack.db), glossary)
                           for lib in libraries})
    part = path.query(body.metric, body.entity, body.period, body.channel, as_of=body.as_of, language=body.language)
    return MetricOut(**part.result.to_dict(), library=external_name(part.library_id) if part.library_id else None)
