"""Exception → JSON response. Bad input is always a 4xx (never a 5xx, which a client such as
Dify retries and whose message it drops); only an unreachable store is a 503. Every 422 has
the documented shape — ``{"detail": [{"loc", "msg", "type"}], "message": "one line"}`` —
whether the schema refused the body or a later check did (an upload that is not UTF-8, bad
front matter, a value a store cannot hold); ``/retrieval`` answers in Dify's shape."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from ragspine.deadline import DeadlineExceeded
from ragspine.errors import (
    BackendError,
    ConfigError,
    FilterError,
    IngestError,
    MissingDependencyError,
    QuestionError,
)
from ragspine.readers.sniff import UnsupportedFormat
from ragspine.service.context import tenant_text
from ragspine.service.dify import INVALID_REQUEST, TIMED_OUT
from ragspine.service.ingest import FileTooLarge
from ragspine.service.jobs import JobQueueUnavailable
from ragspine.service.store import Conflict, Unstorable


class NotFound(Exception):
    """A resource the caller cannot see: missing or another tenant's (the same answer)."""


class UnsupportedMediaType(IngestError):
    """An upload that is not text (415)."""


class EchoJSONResponse(JSONResponse):
    """A response that echoes the request's input (validation errors): it may hold what
    Python's JSON parser accepts but a strict encoder refuses — a lone surrogate
    (``"\\ud800"``), ``NaN`` or ``Infinity`` — so non-ASCII is escaped and non-finite
    numbers become strings."""

    def render(self, content: Any) -> bytes:
        return json.dumps(_finite(content), ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode("ascii")


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def validation_message(errors: list[dict[str, Any]]) -> str:
    """``body.documents.0.text: Value error, the document is empty`` — the first error, one line."""
    if not errors:
        return "invalid request"
    first = errors[0]
    where = ".".join(str(part) for part in first.get("loc", ()))
    message = str(first.get("msg", "invalid value"))
    if first.get("type") == "json_invalid":
        message = f"malformed JSON ({first.get('ctx', {}).get('error', 'cannot parse')})"
    return f"{where}: {message}" if where else message


def invalid_body(message: str, loc: tuple[str | int, ...] = ("body",)) -> dict[str, Any]:
    """A 422 found after the schema check (an upload's content, a value a store cannot hold) in
    the shape the OpenAPI document promises for every 422 — ``detail``: a list of ``{loc, msg,
    type}`` — with the one-line ``message`` that a schema error's 422 carries too."""
    return {"detail": [{"loc": list(loc), "msg": message, "type": "value_error"}], "message": message}


#: A schema error's 422 lists at most this many problems (its ``message`` counts the rest) ...
MAX_ERRORS_LISTED = 20
#: ... and echoes at most this many characters of a string, items of a list or object, levels.
ECHO_CHARS, ECHO_ITEMS, ECHO_DEPTH = 200, 10, 3


def bounded(errors: Sequence[Any]) -> list[dict[str, Any]]:
    """A schema error's problems as a 422 echoes them: the first :data:`MAX_ERRORS_LISTED`,
    each ``input`` and ``ctx`` clipped (:func:`clipped`), so an error body stays small whatever
    was sent (before: 20,000 unknown keys echoed 2 MB, a 5 MB query echoed itself)."""
    out: list[dict[str, Any]] = []
    for error in list(errors[:MAX_ERRORS_LISTED]):
        item: dict[str, Any] = {"loc": [clipped(part) for part in error.get("loc", ())][:ECHO_ITEMS],
                                "msg": clipped(str(error.get("msg", "invalid value")), 4 * ECHO_CHARS),
                                "type": str(error.get("type", "value_error"))}
        for key in ("input", "ctx"):
            if key in error:
                item[key] = clipped(error[key])
        out.append(item)
    return out


def clipped(value: Any, chars: int = ECHO_CHARS, depth: int = 0) -> Any:
    """``value`` cut to :data:`ECHO_CHARS` characters a string, :data:`ECHO_ITEMS` items a list
    or object (the cut marked with ``…``), :data:`ECHO_DEPTH` levels."""
    if isinstance(value, str):
        return value if len(value) <= chars else value[:chars] + "…"
    if isinstance(value, bytes):
        return value if len(value) <= chars else value[:chars] + b"..."
    if isinstance(value, (list, tuple, dict)) and depth >= ECHO_DEPTH:
        return "…"
    if isinstance(value, (list, tuple)):
        items = [clipped(v, chars, depth + 1) for v in value[:ECHO_ITEMS]]
        return items + (["…"] if len(value) > ECHO_ITEMS else [])
    if isinstance(value, dict):
        kept = {clipped(str(k), chars): clipped(v, chars, depth + 1) for k, v in list(value.items())[:ECHO_ITEMS]}
        if len(value) > ECHO_ITEMS:
            kept["…"] = f"{len(value) - ECHO_ITEMS} more"
        return kept
    return value


def install(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = exc.errors()
        errors = jsonable_encoder(bounded(problems))
        message = validation_message(errors)
        if len(problems) > len(errors):
            message += f" (and {len(problems) - len(errors):,} more problems)"
        if request.url.path == "/retrieval":  # Dify's endpoint answers in Dify's error shape
            return JSONResponse(status_code=422, content={"error_code": INVALID_REQUEST, "error_msg": message})
        return EchoJSONResponse(status_code=422, content={"detail": errors, "message": message})

    for exc_type, status, template in STATUS_OF:
        app.add_exception_handler(exc_type, _replier(status, template))


#: exception → (HTTP status, message template); the most specific class registered wins.
STATUS_OF: tuple[tuple[type[Exception], int, str], ...] = (
    (DeadlineExceeded, 504, "{}"),
    (NotFound, 404, "{}"),
    (Conflict, 409, "{}"),
    (Unstorable, 422, "{}"),
    (FilterError, 400, "bad filter: {}"),
    (QuestionError, 400, "{}"),
    (UnsupportedMediaType, 415, "{}"),
    (UnsupportedFormat, 415, "{}"),
    (FileTooLarge, 413, "{}"),
    (IngestError, 422, "{}"),
    (MissingDependencyError, 503, "the server is missing a dependency: {}"),
    (ConfigError, 400, "{}"),
    (JobQueueUnavailable, 503, "{}"),
    (BackendError, 503, "a store is unavailable: {}"),
)


#: Dify's endpoint answers errors in Dify's shape: HTTP status → its ``error_code``.
DIFY_ERROR_CODES = {400: 3001, 404: 2001, 422: INVALID_REQUEST, 503: 5003, 504: TIMED_OUT}


def _replier(status: int, template: str) -> Any:
    async def handler(request: Request, exc: Exception) -> JSONResponse:
        message = template.format(exc)
        tenant = getattr(request.state, "tenant_id", None)
        if tenant:  # no catalog id (``<tenant>/<library>``) in what a tenant reads
            message = tenant_text(message, tenant)
        if request.url.path.rstrip("/") == "/retrieval":
            return JSONResponse(status_code=status, content={"error_code": DIFY_ERROR_CODES.get(status, 5000), "error_msg": message})
        if status == 422:  # the documented 422 (HTTPValidationError): detail is a list, as a schema error's
            return EchoJSONResponse(status_code=status, content=invalid_body(message))
        return JSONResponse(status_code=status, content={"detail": message})

    return handler
