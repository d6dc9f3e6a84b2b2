"""Request and response bodies of ``/v1/facts``, ``/v1/metric`` and ``/v1/answer`` (pydantic).

Like every ``/v1`` body they forbid unknown fields; text fields are bounded, so a hostile body is
a 422 before any lookup.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ragspine.service.models import MAX_LIBRARIES, NAME_PATTERN

MAX_FACT_ROWS = 10_000
MAX_HISTORY_TURNS = 50
ISO_DATE = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FactsIn(_In):
    library: str = Field(pattern=NAME_PATTERN, description="the library whose facts these are (it must exist)")
    facts: list[dict[str, Any]] | None = Field(
        None, min_length=1, max_length=MAX_FACT_ROWS,
        description="rows of metric, entity, period, value, source_doc_id, source_locator, valid_as_of (required) and channel,"
        " unit, sensitivity; every row is checked before anything is written, and each source document named is replaced",
    )
    csv: str | None = Field(
        None, min_length=1,
        description=f"instead of facts: the same rows as CSV text with a header line (a facts file's), at most {MAX_FACT_ROWS:,} rows;"
        " the request body's size limit (RAGSPINE_MAX_BODY_BYTES) bounds it",
    )

    @model_validator(mode="after")
    def _one(self) -> FactsIn:
        if (self.facts is None) == (self.csv is None):
            raise ValueError("give the rows either as facts (JSON objects) or as csv (CSV text with a header line), not both")
        return self


class RowErrorOut(BaseModel):
    row: int = Field(description="1 = the first row; 0 = the request as a whole")
    field: str
    message: str
    line: int | None = Field(None, description="csv only: the row's line in the CSV text (the header is line 1)")


class FactsOut(BaseModel):
    library: str
    facts: int = Field(description="facts written")
    sources: list[str] = Field(description="the source documents replaced")
    restricted: int = Field(description="RESTRICTED facts among them (stored, never answered)")


class MetricIn(_In):
    metric: str = Field(min_length=1, max_length=200, description="a glossary metric in any of its forms (revenue, 营收, 売上高)")
    entity: str = Field(min_length=1, max_length=200, description="a glossary entity (Kestrel, 红隼机器人, KSTR)")
    period: str = Field(min_length=1, max_length=100, description="2024Q3, FY2024, 2024-07, 2024年第三季度, last quarter (with as_of), ...")
    channel: str | None = Field(None, max_length=200, description="a glossary channel (default: the total of all channels)")
    as_of: str | None = Field(None, pattern=ISO_DATE, description="the date a relative period counts from (YYYY-MM-DD)")
    language: str | None = Field(None, pattern=r"^(en|zh|ja)$", description="en | zh | ja (default: that of the inputs)")
    libraries: list[str] | None = Field(None, max_length=MAX_LIBRARIES, description="library names (default: every library of the tenant)")


class MetricOut(BaseModel):
    status: str = Field(description="found | not_found | unrecognized_param | refused (the security gate: nothing was looked up)")
    text: str = Field(description="found: the numeric prose rebuilt from the stored fact; else a fixed text without digits")
    language: str
    library: str | None = Field(None, description="the library holding the found fact")
    metric: str = ""
    entity: str = ""
    period: str = ""
    channel: str = ""
    value: str = ""
    unit: str = ""
    source_doc_id: str = ""
    source_locator: str = ""
    valid_as_of: str = ""
    params: list[str] = Field(default_factory=list, description="unrecognized_param: the inputs not recognized")
    suggestions: dict[str, list[str]] = Field(default_factory=dict, description="glossary labels that may have been meant (never substituted)")
    refused: list[dict[str, Any]] = Field(default_factory=list, description="refused: what the security gate refused ({kind, entity})")


class TurnIn(_In):
    role: str = Field("user", pattern=r"^(user|assistant|system)$")
    content: str = Field(max_length=4000)


class AnswerIn(_In):
    question: str = Field(min_length=1, max_length=4000)
    history: list[TurnIn] = Field(default_factory=list, max_length=MAX_HISTORY_TURNS,
                                  description="earlier turns: context for generated prose only, never a source")
    libraries: list[str] | None = Field(None, max_length=MAX_LIBRARIES, description="library names (default: every library of the tenant)")
    as_of: str | None = Field(None, pattern=ISO_DATE, description="the date a relative period or a bare quarter (Q3) counts from")
    top_k: int = Field(3, ge=1, le=50, description="snippets a narrative answer cites at most")


class AnswerOut(BaseModel):
    question: str
    route: str = Field(description="structured | narrative | composite | refused (the security gate)")
    text: str
    language: str
    libraries: list[str]
    structured: dict[str, Any] | None = Field(None, description="the structured channel's result (and the library of a found fact)")
    narrative: dict[str, Any] | None = Field(None, description="mode (extractive | generated | refused | empty | gate_refused), text, citations")
    sources: list[dict[str, Any]] = Field(description="the found fact (kind fact), then every cited snippet (kind chunk)")
    refusal: str | None = None
    refused: list[dict[str, Any]] = Field(default_factory=list)
    routing: dict[str, Any] = Field(default_factory=dict)
    visual_hints: list[dict[str, Any]] | None = Field(
        None, description="only with the visual seam on (RAGSPINE_VISUAL_EMBEDDER) and a hint found: pages to look at"
        " ({kind: visual_hint, is_visual: true, doc_id, title, library_id, page, source_locator <file>#page=N, score});"
        " never a source, never cited, no page text; absent otherwise",
    )
