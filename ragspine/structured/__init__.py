"""The structured channel: numeric facts answered from a fact table, never invented.

``StructuredChannel(store, glossary).query_metric(metric, entity, period, channel, as_of=...)``
normalizes its inputs through the controlled :class:`Glossary` and the period grammar, looks the
fact up in a :class:`FactStore` and returns a :class:`MetricResult` that is exactly one of
``found`` (prose rebuilt from the stored fact, with its source and locator), ``not_found`` (a
fixed refusal without numerals) or ``unrecognized_param`` (which inputs did not read).

    layout: base.py (FactStore Protocol, Fact) · glossary.py · calendar.py + periods.py (period
    keys) · channel.py (query_metric) · result.py (the three statuses) · prose.py · ingest.py
    (CSV/JSON, all or nothing) · factory.py (make_fact_store) (`ragspine facts`/`metric`: ragspine/cli/structured.py); the adapters are
    ``ragspine.stores.sqlite.fact_store`` and ``ragspine.stores.postgres.fact_store``.
"""

from ragspine.structured.base import TOTAL_CHANNEL, Fact, FactClashError, FactKey, FactStore, SourceFacts, StoredFact
from ragspine.structured.channel import StructuredChannel
from ragspine.structured.factory import make_fact_store
from ragspine.structured.glossary import Glossary
from ragspine.structured.ingest import FactFileError, IngestReport, ingest_facts
from ragspine.structured.periods import read_period
from ragspine.structured.result import FOUND, NOT_FOUND, UNRECOGNIZED, MetricResult, has_numeral

__all__ = [
    "FOUND",
    "NOT_FOUND",
    "TOTAL_CHANNEL",
    "UNRECOGNIZED",
    "Fact",
    "FactClashError",
    "FactFileError",
    "FactKey",
    "FactStore",
    "Glossary",
    "IngestReport",
    "MetricResult",
    "SourceFacts",
    "StoredFact",
    "StructuredChannel",
    "has_numeral",
    "ingest_facts",
    "make_fact_store",
    "read_period",
]
