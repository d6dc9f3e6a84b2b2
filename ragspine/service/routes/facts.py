"""The structured channel over HTTP: ``POST /v1/facts`` (ingest) and ``GET``/``POST /v1/metric``.

Both are tenant-scoped like every ``/v1`` route: a library is named by the tenant's name for
it, and another tenant's library is answered exactly like a missing one (404).

* ``POST /v1/facts`` takes the rows as JSON objects (``facts``) or as CSV text with a header
  line (``csv``: a facts file's columns, read by the file ingest's own reader), checks every
  row (glossary keys, periods, values, dates) before anything is written, then replaces the
  source documents the rows name in one transaction. A bad row is a 422 whose ``errors`` list
  each ``{row, field, message}`` (rows count from 1; a CSV row also names its ``line``; the
  first :data:`MAX_ERRORS_LISTED`, the ``detail`` counting all) — and nothing was written. The
  body's size limit (413) bounds either form; a row or header over ``MAX_FACT_COLUMNS`` keys or
  columns is one 422 naming the limit. A key another source holds is one generic conflict that
  names no source, whether that fact is RESTRICTED or not (``CLASH_MESSAGE``).
* ``/v1/metric`` answers ``found`` (prose rebuilt from the stored fact, with its source),
  ``not_found`` (a fixed refusal without digits) or ``unrecognized_param`` (naming the inputs)
  — always 200: the status is the answer. With a deny list, an input naming a denied entity
  (any alias, lookalike or spelled-out form; :meth:`~ragspine.security.SecurityGate.check_lookup`)
  is ``refused`` with the agent's fixed refusal before anything is looked up. Over several libraries, see
  :class:`~ragspine.agent.structured.StructuredPath` (never a choice between two stored numbers).
  A fact read from a document the key's principal may not read (its ``source_doc_id``'s ACL
  in the library's chunk store) is ``not_found``, exactly as if it were not stored.
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

from fastapi import APIRouter, Depends, Query

from ragspine.agent.factory import fact_channel
from ragspine.agent.reading import question_language
from ragspine.agent.spotting import load_fact_glossary
from ragspine.agent.structured import StructuredPath
from ragspine.deadline import check as check_deadline
from ragspine.security.gate import SecurityGate, refusal
from ragspine.security.principals import Viewer
from ragspine.service.agent_models import MAX_FACT_ROWS, FactsIn, FactsOut, MetricIn, MetricOut, RowErrorOut
from ragspine.service.context import ServiceContext
from ragspine.service.errors import EchoJSONResponse
from ragspine.service.limits import Lane
from ragspine.service.models import MAX_LIBRARIES
from ragspine.service.routes.common import context, documented_bearer, external_name, library_or_404, tenant_id
from ragspine.service.routes.visibility import read_only_principal, viewer_of
from ragspine.service.security import security_gate
from ragspine.service.store import Library
from ragspine.structured.factory import make_fact_store
from ragspine.structured.ingest import MAX_FACT_COLUMNS, FactFileError, RowError, csv_rows, parse_rows, write_facts

#: Row errors a 422 lists at most (its ``detail`` says how many there are); each names at most
#: ``MAX_KEYS_NAMED`` unknown keys of its row, so an error body stays small whatever was sent.
MAX_ERRORS_LISTED = 100

router = APIRouter(prefix="/v1", tags=["structured"], dependencies=[Depends(documented_bearer)])

#: POST /v1/facts's turns (see :class:`~ragspine.service.limits.Lane`)
FACTS_LANE = Lane("POST /v1/facts")


def tenant_libraries(ctx: ServiceContext, tenant: str, names: list[str] | None) -> list[Library]:
    """The libraries ``names`` (each the tenant's, else 404), or every library of the tenant."""
    if names:
        return [library_or_404(ctx, tenant, name) for name in dict.fromkeys(names)]
    return ctx.store.list_libraries(tenant)


@router.post("/facts",
             dependencies=[Depends(read_only_principal)], response_model=FactsOut,
             summary="Ingest numeric facts, as JSON rows or CSV (all rows checked before any write)",
             responses={422: {"description": "a bad row: errors name each row and field (and, for csv, its line); nothing was written"}})
async def ingest(body: FactsIn, ctx: ServiceContext = Depends(context), tenant: str = Depends(tenant_id)) -> Any:
    # up to 10,000 rows parsed and checked: a CPU-bound step, run in the bulk lane (a few at
    # once; the others wait without a thread until their deadline) and checking the deadline
    return await FACTS_LANE.run(_ingest, body, ctx, tenant)


def _ingest(body: FactsIn, ctx: ServiceContext, tenant: str) -> Any:
    library = library_or_404(ctx, tenant, body.library)
    glossary = load_fact_glossary(ctx.settings.fact_glossary)
    name = "csv" if body.csv is not None else "facts"
    try:
        read = csv_rows(name, body.csv) if body.csv is not None else [(None, row) for row in body.facts or []]
        if len(read) > MAX_FACT_ROWS:
            raise FactFileError(name, [RowError(0, name, f"has {len(read):,} rows; send at most {MAX_FACT_ROWS:,} per request")])
        rows: list[tuple[int | None, Any]] = []
        problems: list[RowError] = []
        for number, (line, row) in enumerate(read, 1):
            check_deadline("reading the fact rows")
            if isinstance(row, dict) and len(row) <= MAX_FACT_COLUMNS:  # a longer row: one error, from parse_rows
                row, bad = _plain_row(row)
                problems += [RowError(number, field, why, line) for field, why in bad]
            rows.append((line, row))
        if problems:  # with every other problem of every row, as a file's
            problems += parse_rows(rows, glossary)[1]
            raise FactFileError(name, sorted(problems, key=lambda e: e.row))
        store = make_fact_store(library.library_id, database=ctx.stack.db)
        report = write_facts(store, name, rows, glossary=glossary)
    except FactFileError as exc:
        errors = [RowErrorOut(row=e.row, field=e.field, message=e.message, line=e.line).model_dump(exclude_none=True)
                  for e in exc.errors[:MAX_ERRORS_LISTED]]  # the detail counts them all
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
    ctx: ServiceContext = Depends(context), tenant: str = Depends(tenant_id), gate: SecurityGate | None = Depends(security_gate),
    viewer: Viewer = Depends(viewer_of),
) -> MetricOut:
    body = MetricIn(metric=metric, entity=entity, period=period, channel=channel, as_of=as_of, language=language, libraries=library)
    return metric_post(body, ctx, tenant, gate, viewer)


@router.post("/metric", response_model=MetricOut, summary="One number from the fact table (found / not_found / unrecognized_param)")
def metric_post(body: MetricIn, ctx: ServiceContext = Depends(context), tenant: str = Depends(tenant_id),
                gate: SecurityGate | None = Depends(security_gate), viewer: Viewer = Depends(viewer_of)) -> MetricOut:
    glossary = load_fact_glossary(ctx.settings.fact_glossary)
    inputs = [body.metric, body.entity, body.period, body.channel]
    decision = gate.check_lookup(glossary, inputs) if gate is not None else None
    if decision is not None and not decision.allowed:  # the agent's refusal: nothing is looked up
        language = body.language or question_language(" ".join(text for text in inputs if text))
        return MetricOut(**refusal(decision, "metric", language))
    libraries = tenant_libraries(ctx, tenant, body.libraries)
    path = StructuredPath({lib.library_id: fact_channel(ctx.stack.db, lib.library_id, glossary) for lib in libraries})
    part = path.query(body.metric, body.entity, body.period, body.channel, as_of=body.as_of, language=body.language, viewer=viewer)
    return MetricOut(**part.result.to_dict(), library=external_name(part.library_id) if part.library_id else None)
