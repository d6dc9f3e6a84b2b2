"""``StructuredChannel.query_metric``: glossary-normalized lookup of one stored fact.

The four inputs go through the controlled glossary (metric, entity, channel) and the period
grammar (with the entity's fiscal calendar, and ``as_of`` for a relative period). Any input
that does not read is reported — all of them at once — as ``unrecognized_param``, and nothing
is looked up. Otherwise the store is asked for the one active fact with those keys: a
RESTRICTED fact is never returned (the store leaves it out, and this layer drops one again), so
a key held only by a RESTRICTED fact is the same ``not_found`` as an absent key; more than one
fact (a store breaking the one-fact-per-key rule) is ``not_found`` too, never a choice between
two numbers. A ``found`` answer's prose is rebuilt from the stored fact (:mod:`.prose`).

Nothing here calls a model. The agent (which may) receives a :class:`MetricResult` and may only
show its ``text``: it cannot supply a number for a failed lookup.
"""

from __future__ import annotations

import re
from datetime import date
from typing import TYPE_CHECKING

from ragspine.retrieval.sensitivity import is_restricted
from ragspine.security.principals import OPEN, Viewer
from ragspine.structured.base import TOTAL_CHANNEL, FactStore
from ragspine.structured.converters import value_text
from ragspine.structured.glossary import Glossary, Match
from ragspine.structured.periods import parse_as_of, read_period
from ragspine.structured.prose import found_prose
from ragspine.structured.result import FOUND, LANGUAGES, MetricResult, not_found, unrecognized

if TYPE_CHECKING:
    from ragspine.retrieval.chunking.chunk_store import DocumentAcls

_KANA = re.compile(r"[\u3040-\u30ff]")
_HAN = re.compile(r"[\u4e00-\u9fff]")


class StructuredChannel:
    """The structured channel over one library's :class:`FactStore` and a glossary (default:
    the shipped demo glossary)."""

    def __init__(self, store: FactStore, glossary: Glossary | None = None, *, acls: DocumentAcls | None = None) -> None:
        self.store = store
        self.glossary = glossary if glossary is not None else Glossary.default()
        #: the library's document ACLs (its chunk store): a fact read from a document a viewer
        #: may not read is, to that viewer, a fact that does not exist
        self.acls = acls

    def __repr__(self) -> str:
        return f"StructuredChannel({self.store!r})"

    def query_metric(
        self,
        metric: str,
        entity: str,
        period: str,
        channel: str | None = None,
        *,
        as_of: date | str | None = None,
        language: str | None = None,
        viewer: Viewer | None = None,
    ) -> MetricResult:
        """Exactly one of ``found`` / ``not_found`` / ``unrecognized_param`` (see the module
        docstring). ``channel=None`` asks for the total over all channels; ``as_of`` (a date or
        ``YYYY-MM-DD``) is what a relative period (去年三季度, last quarter, 前年度) resolves
        against; ``language`` (en, zh, ja) defaults to the language of the inputs; ``viewer``:
        whom it is asked for (``None``: no ACL applies) — a fact whose source document the viewer
        may not read answers ``not_found``, exactly as a missing one."""
        g = self.glossary
        m, e = g.metric(metric), g.entity(entity)
        c = g.channel(channel) if channel is not None else Match(TOTAL_CHANNEL)
        lang = language if language in LANGUAGES else _language([m, e, c], [metric, entity, period, channel])
        day: date | None = None
        bad: list[str] = []
        if as_of is not None:
            try:
                day = parse_as_of(as_of)
            except ValueError:
                bad.append("as_of")
        reading = read_period(period, g.calendar(e.key) if e else g.calendar(""), as_of=day, aliases=g.period_aliases)
        period_ok = reading.key is not None or (reading.relative and bool(bad))  # a bad as_of is the one to name
        for name, ok in (("metric", m), ("entity", e), ("period", period_ok), ("channel", c)):
            if not ok:
                bad.append(name)
        if bad:
            order = ("metric", "entity", "period", "channel", "as_of")
            params = sorted(bad, key=order.index)
            inputs = {"metric": metric, "entity": entity, "channel": channel}
            sections = {"metric": "metrics", "entity": "entities", "channel": "channels"}
            suggestions = {p: g.suggest(sections[p], inputs[p], lang) for p in params if p in sections}
            return unrecognized(params, lang, suggestions)
        assert m and e and c and reading.key
        facts = [f for f in self.store.lookup(m.key, e.key, reading.key, c.key) if not is_restricted(f.sensitivity)]
        if len(facts) != 1 or self._hidden(viewer, facts[0].source_doc_id):
            return not_found(lang)
        fact = facts[0]
        return MetricResult(
            FOUND, found_prose(fact, g, lang), lang, metric=fact.metric, entity=fact.entity, period=fact.period,
            channel=fact.channel, value=value_text(fact.value), unit=fact.unit, source_doc_id=fact.source_doc_id,
            source_locator=fact.source_locator, valid_as_of=fact.valid_as_of,
        )


    def _hidden(self, viewer: Viewer | None, doc_id: str) -> bool:
        """Whether ``viewer`` may not read document ``doc_id`` (its ACL: the last recorded change)."""
        if viewer is None or viewer.everything or self.acls is None:
            return False
        last = self.acls.acl_history(doc_id, limit=1)
        return not viewer.sees(last[0].after if last else OPEN)


def _language(matches: list[Match | None], inputs: list[object]) -> str:
    """The language of the first input a glossary form of a known language matched; else the
    script of the inputs (kana: ja, Han: zh); else English."""
    for match in matches:
        if match is not None and match.language in LANGUAGES:
            return match.language
    text = " ".join(i for i in inputs if isinstance(i, str))
    if _KANA.search(text) or "四半期" in text:
        return "ja"
    if _HAN.search(text):
        return "zh"
    return "en"
