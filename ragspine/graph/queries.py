"""The graph utilities: subsidiary roll-up, peer comparison, derivation tracing.

A support surface next to the agent's two channels, not a branch of its router: each utility
walks the **citable** edges of a relation graph (:mod:`ragspine.graph.build`; model-derived
edges are never read) and asks the structured channel (:class:`StructuredChannel.query_metric`)
for every number, so a value is always a stored, non-RESTRICTED fact with its source — and a
member without one is named as missing, never estimated.

* :func:`roll_up` — a metric of an entity as the sum over its direct subsidiaries. Only when
  every subsidiary has a found fact, all in one additive unit, for one span of time (a fiscal
  period of entities with different fiscal calendars is not one span); otherwise no total.
* :func:`compare_peers` — a metric for an entity and its siblings (the same parent).
* :func:`trace_derivation` — what a derived metric is computed from, recursively, and (given an
  entity and period) which of those inputs have a stored fact. It never computes the metric.

The texts and labels are in ``language`` (en, zh, ja; :mod:`ragspine.graph.messages`). Each
takes a ``viewer`` (``None``: no ACL applies): a fact read from a document the viewer may not
read is, to it, a fact that does not exist (:meth:`StructuredChannel.query_metric`), so a member
is named as missing exactly as in a library without that document.
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from ragspine.graph.base import DERIVED_FROM, SUBSIDIARY_OF, Edge, GraphStore, node_id
from ragspine.graph.messages import say
from ragspine.graph.results import (
    COMPARED,
    INCOMPLETE,
    NO_PEERS,
    NOT_ROLLABLE,
    ROLLED_UP,
    UNRECOGNIZED,
    Derivation,
    DerivationStep,
    MemberValue,
    PeerComparison,
    RollUp,
)
from ragspine.structured.base import TOTAL_CHANNEL
from ragspine.structured.calendar import parse_key
from ragspine.structured.channel import StructuredChannel
from ragspine.structured.converters import value_text
from ragspine.structured.glossary import Glossary
from ragspine.structured.periods import parse_as_of, read_period
from ragspine.structured.prose import period_label
from ragspine.structured.result import unrecognized

if TYPE_CHECKING:
    from ragspine.security.principals import Viewer

__all__ = ["NON_ADDITIVE_UNITS", "compare_peers", "parent_of", "roll_up", "subsidiaries", "trace_derivation"]

#: Units whose values do not add up across entities (a share is not summed).
NON_ADDITIVE_UNITS = frozenset({"percent"})


def subsidiaries(graph: GraphStore, entity: str) -> list[tuple[str, Edge]]:
    """``(key, subsidiary_of edge)`` of ``entity``'s direct subsidiaries, by key."""
    edges = graph.edges(target=node_id("entity", entity), relation=SUBSIDIARY_OF, citable=True)
    return sorted(((e.source.split(":", 1)[1], e) for e in edges), key=lambda pair: pair[0])


def parent_of(graph: GraphStore, entity: str) -> tuple[str, Edge] | None:
    """``(key, edge)`` of ``entity``'s parent, else ``None``."""
    edges = graph.edges(source=node_id("entity", entity), relation=SUBSIDIARY_OF, citable=True)
    return (edges[0].target.split(":", 1)[1], edges[0]) if edges else None


def roll_up(
    graph: GraphStore, channel: StructuredChannel, metric: str, entity: str, period: str, channel_name: str | None = None,
    *, as_of: date | str | None = None, language: str = "en", viewer: Viewer | None = None,
) -> RollUp:
    """``metric`` of ``entity`` for ``period`` summed over its subsidiaries (module docstring);
    ``viewer``: whom the facts are read for (a fact of a document it may not read is absent)."""
    asked = _read(channel, metric, entity, period, channel_name, as_of, language, viewer)
    if isinstance(asked, str):
        return RollUp(UNRECOGNIZED, asked)
    m, e, c = asked
    g = channel.glossary
    subs = subsidiaries(graph, e)
    relations = tuple(edge for _, edge in subs)
    name, what = g.label("entities", e, language), g.label("metrics", m, language)

    def made(status: str, text: str, **fields: Any) -> RollUp:
        return RollUp(status, text, metric=m, entity=e, channel=c, **fields)

    if not subs:
        return made(NOT_ROLLABLE, say(language, "no_subsidiaries", name=name), reason="no_subsidiaries")
    if not _one_span(channel, [k for k, _ in subs], period, as_of):
        return made(NOT_ROLLABLE, say(language, "period_spans_differ", name=name), reason="period_spans_differ", relations=relations)
    members = tuple(_member(channel, k, m, period, c, as_of, language, viewer) for k, _ in subs)
    missing = tuple(mv.entity for mv in members if not mv.found)
    if missing:
        names = say(language, "list").join(g.label("entities", k, language) for k in missing)
        return made(INCOMPLETE, say(language, "incomplete", what=what, names=names), members=members, missing=missing, relations=relations)
    units = sorted({mv.unit for mv in members})
    if len(units) != 1:
        return made(NOT_ROLLABLE, say(language, "units_differ", name=name, what=what, units=say(language, "list").join(units)), members=members,
                    reason="units_differ", relations=relations)
    if units[0] in NON_ADDITIVE_UNITS:
        return made(NOT_ROLLABLE, say(language, "not_additive", what=what, unit=units[0]), members=members, reason="not_additive",
                    relations=relations)
    total = value_text(sum((Decimal(mv.value) for mv in members), Decimal(0)))
    parts = say(language, "join").join(
        say(language, "member", label=mv.label, amount=_amount(g, mv.value, mv.unit, language), cite=_cite(language, mv)) for mv in members
    )
    where = "" if c == TOTAL_CHANNEL else say(language, "where", channel=g.label("channels", c, language))
    text = say(language, "rolled_up", name=name, what=what, period=period_label(members[0].period, language), where=where,
               total=_amount(g, total, units[0], language), n=len(members), parts=parts)
    return made(ROLLED_UP, text, total=total, unit=units[0], members=members, relations=relations)


def compare_peers(
    graph: GraphStore, channel: StructuredChannel, metric: str, entity: str, period: str, channel_name: str | None = None,
    *, as_of: date | str | None = None, language: str = "en", viewer: Viewer | None = None,
) -> PeerComparison:
    """``metric`` for ``entity`` and its peers, each a stored fact or named as absent (for ``viewer``, as :func:`roll_up`)."""
    asked = _read(channel, metric, entity, period, channel_name, as_of, language, viewer)
    if isinstance(asked, str):
        return PeerComparison(UNRECOGNIZED, asked)
    m, e, c = asked
    g = channel.glossary
    name = g.label("entities", e, language)
    parent = parent_of(graph, e)
    peers = subsidiaries(graph, parent[0]) if parent else []
    if parent is None or len(peers) < 2:
        return PeerComparison(NO_PEERS, say(language, "no_peers", name=name), metric=m, entity=e, parent=parent[0] if parent else "")
    rows = tuple(_member(channel, k, m, period, c, as_of, language, viewer) for k, _ in peers)
    found = [r for r in rows if r.found]
    comparable = len(found) >= 2 and len({r.unit for r in found}) == 1 and _one_span(channel, [r.entity for r in found], period, as_of)
    ranking = tuple(r.entity for r in sorted(found, key=lambda r: (-Decimal(r.value), r.entity))) if comparable else ()
    lines = [say(language, "row", label=r.label, amount=_amount(g, r.value, r.unit, language), cite=_cite(language, r)) if r.found
             else say(language, "row_missing", label=r.label) for r in rows]
    text = say(language, "peers", what=g.label("metrics", m, language), parent=g.label("entities", parent[0], language),
               rows=say(language, "join").join(lines), verdict=say(language, "comparable" if comparable else "not_comparable"))
    return PeerComparison(COMPARED, text, metric=m, entity=e, parent=parent[0], rows=rows, comparable=comparable, ranking=ranking,
                          relations=tuple(edge for _, edge in peers))


def trace_derivation(
    graph: GraphStore, channel: StructuredChannel, metric: str, *, entity: str | None = None, period: str | None = None,
    channel_name: str | None = None, as_of: date | str | None = None, language: str = "en", viewer: Viewer | None = None,
) -> Derivation:
    """What ``metric`` is derived from (recursively); with ``entity`` and ``period``, each
    metric's stored fact or its absence (for ``viewer``, as :func:`roll_up`). The derived value
    itself is never computed."""
    g = channel.glossary
    match = g.metric(metric)
    if match is None:
        return Derivation(UNRECOGNIZED, unrecognized(["metric"], language, {"metric": g.suggest("metrics", metric, language)}).text)
    with_facts = entity is not None and period is not None
    entity_key = ""
    if with_facts:
        asked = _read(channel, metric, str(entity), str(period), channel_name, as_of, language, viewer)
        if isinstance(asked, str):
            return Derivation(UNRECOGNIZED, asked)
        entity_key = asked[1]

    def step(key: str, via: Edge | None, path: tuple[str, ...]) -> DerivationStep:
        edges = [e for e in graph.edges(source=node_id("metric", key), relation=DERIVED_FROM, citable=True)
                 if e.target.split(":", 1)[1] not in path]
        inputs = tuple(step(e.target.split(":", 1)[1], e, (*path, key)) for e in edges)
        fact = _member(channel, entity_key, key, str(period), channel_name, as_of, language, viewer) if with_facts else None
        return DerivationStep(key, g.label("metrics", key, language), via, inputs, fact)

    root = step(match.key, None, ())
    if not root.inputs:
        return Derivation("not_derived", say(language, "not_derived", label=root.label), root)
    lines: list[str] = []
    _describe(root, lines, g, language)
    return Derivation("derived", say(language, "lines").join(lines), root)


def _describe(node: DerivationStep, lines: list[str], glossary: Glossary, language: str) -> None:
    if node.inputs:
        via = node.inputs[0].via
        cite = say(language, "derived_cite", doc=via.source_doc_id, locator=via.source_locator) if via else ""
        inputs = say(language, "and").join(s.label for s in node.inputs)
        lines.append(say(language, "derived_from", label=node.label, inputs=inputs, cite=cite))
    if node.fact is not None:
        f = node.fact
        lines.append(say(language, "step", label=node.label, amount=_amount(glossary, f.value, f.unit, language), cite=_cite(language, f))
                     if f.found else say(language, "step_missing", label=node.label))
    for child in node.inputs:
        _describe(child, lines, glossary, language)


# -- helpers ------------------------------------------------------------------------------------
def _read(
    channel: StructuredChannel, metric: str, entity: str, period: str, channel_name: str | None, as_of: date | str | None,
    language: str, viewer: Viewer | None,
) -> tuple[str, str, str] | str:
    """The canonical ``(metric, entity, channel)`` of the question, or the structured channel's
    ``unrecognized_param`` text (digit-free) when an input does not read."""
    result = channel.query_metric(metric, entity, period, channel_name, as_of=as_of, language=language, viewer=viewer)
    if result.status == UNRECOGNIZED:
        return result.text
    g = channel.glossary
    m, e = g.metric(metric), g.entity(entity)
    c = g.channel(channel_name) if channel_name is not None else None
    assert m is not None and e is not None
    return m.key, e.key, c.key if c is not None else TOTAL_CHANNEL


def _member(
    channel: StructuredChannel, entity: str, metric: str, period: str, channel_name: str | None, as_of: date | str | None,
    language: str, viewer: Viewer | None,
) -> MemberValue:
    label = channel.glossary.label("entities", entity, language)
    r = channel.query_metric(metric, entity, period, channel_name, as_of=as_of, language=language, viewer=viewer)
    if not r.found:
        return MemberValue(entity, label, "not_found")
    return MemberValue(entity, label, "found", r.value, r.unit, r.period, r.source_doc_id, r.source_locator, r.valid_as_of)


def _one_span(channel: StructuredChannel, entities: list[str], period: str, as_of: date | str | None) -> bool:
    """Whether ``period`` is one span of time for every entity: one canonical key, and (for a
    fiscal key) one fiscal calendar."""
    g = channel.glossary
    try:
        day = parse_as_of(as_of) if as_of is not None else None
    except ValueError:
        return False
    keys = {read_period(period, g.calendar(k), as_of=day, aliases=g.period_aliases).key for k in entities}
    if len(keys) != 1 or None in keys:
        return False
    parsed = parse_key(next(iter(keys)) or "")
    return parsed is not None and (parsed[0] not in ("fy", "fyq") or len({g.calendar(k) for k in entities}) == 1)


def _cite(language: str, member: MemberValue) -> str:
    return say(language, "cite", doc=member.source_doc_id, locator=member.source_locator)


def _amount(glossary: Glossary, value: str, unit: str, language: str) -> str:
    label = glossary.label("units", unit, language) if unit else ""
    return f"{value} {label}".rstrip() if label[:1].isascii() else f"{value}{label}"
