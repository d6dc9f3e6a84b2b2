"""The agent's structured path: one ``query_metric`` over the fact stores of several libraries.

The slots come from the question (:class:`~ragspine.agent.reading.Reading`), never from a
model or the history: canonical keys where the glossary read them, else what the question said
(a relative period or a bare quarter without an as-of date, an unknown metric's words) so the
channel names the input it could not read. Each library's
:class:`~ragspine.structured.channel.StructuredChannel` is asked the same question:

* every library reads the inputs with the same glossary, so an ``unrecognized_param`` is the
  same everywhere and is the answer;
* exactly one library holding the fact → that ``found`` answer, with its library;
* several libraries holding it with the same value and unit → the first library's (in the
  order given); with different numbers → ``not_found``: the agent never chooses between two
  stored numbers (ask with one library);
* none → ``not_found`` (the fixed refusal, no digits).
"""

from __future__ import annotations

from datetime import date
from typing import Mapping, Sequence

from ragspine.agent.base import StructuredPart
from ragspine.agent.reading import Reading
from ragspine.security.principals import Viewer
from ragspine.structured.channel import StructuredChannel
from ragspine.structured.result import PARAMS, UNRECOGNIZED, not_found, unrecognized


class StructuredPath:
    """``channels``: library id → that library's :class:`StructuredChannel` (in search order)."""

    def __init__(self, channels: Mapping[str, StructuredChannel]) -> None:
        self.channels = dict(channels)

    def slots(self, reading: Reading) -> tuple[str, str, str, str | None]:
        """``(metric, entity, period, channel)`` as passed to ``query_metric``."""
        metric = reading.metric.key if reading.metric else reading.residue
        entity = reading.entity.key if reading.entity else ""
        period = "" if reading.period is None else (reading.period.key or reading.period.text)
        channel = reading.channel.key if reading.channel else None
        return metric, entity, period, channel

    def query_text(self, reading: Reading) -> str:
        """The sub-query as text (what the security gate checks): the question's own words for
        each slot."""
        parts = [h.form for h in (reading.metric, reading.entity, reading.channel) if h is not None]
        if reading.period is not None:
            parts.append(reading.period.text)
        return " ".join(parts) or reading.residue

    def answer(self, reading: Reading, *, as_of: date | str | None = None, viewer: Viewer | None = None) -> StructuredPart:
        """The structured answer to a read question (its slots, in its language). A question
        whose slots do not each read as one thing (a glossary form inside a longer term, two
        metrics, entities, channels or periods) is ``unrecognized_param`` naming that, and
        nothing is looked up."""
        if not reading.clear:
            params = sorted({p for p, _ in (*reading.unread, *reading.ambiguous)}, key=PARAMS.index)
            suggestions: dict[str, Sequence[str]] = dict(reading.ambiguous)
            if reading.unread and self.channels:
                glossary = next(iter(self.channels.values())).glossary
                for param, term in reading.unread:
                    suggestions.setdefault(param, glossary.suggest("metrics", term, reading.language))
            return StructuredPart(unrecognized(params, reading.language, suggestions, named=dict(reading.unread),
                                               ambiguous=[p for p, _ in reading.ambiguous]))
        return self.query(*self.slots(reading), as_of=as_of, language=reading.language, viewer=viewer)

    def query(self, metric: str, entity: str, period: str, channel: str | None = None, *,
              as_of: date | str | None = None, language: str | None = None, viewer: Viewer | None = None) -> StructuredPart:
        """``query_metric`` over every library (see the module docstring), for ``viewer`` (a fact
        whose source document it may not read is, to it, one that is not stored; ``None``: no ACL applies)."""
        found: list[StructuredPart] = []
        result = None
        for library_id, structured in self.channels.items():
            result = structured.query_metric(metric, entity, period, channel, as_of=as_of, language=language, viewer=viewer)
            if result.status == UNRECOGNIZED:
                return StructuredPart(result)
            if result.found:
                found.append(StructuredPart(result, library_id))
        if not found or len({(p.result.value, p.result.unit) for p in found}) > 1:
            return StructuredPart(not_found(result.language if result is not None else language or "en"))
        return found[0]
