"""What the graph utilities answer: :class:`RollUp`, :class:`PeerComparison`, :class:`Derivation`.

Every number in them is a stored fact's value, cited by its source document and locator; the
one computed number — a roll-up's ``total`` — exists only when every member has a found fact
in one unit, and the type enforces it: constructing a :class:`RollUp` whose total is not the
exact sum of its members' values, or that has a total while a member is missing, raises
``ValueError``. A failed roll-up names the missing members and carries no total.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from ragspine.graph.base import Edge

__all__ = ["Derivation", "DerivationStep", "MemberValue", "PeerComparison", "RollUp"]

ROLLED_UP, INCOMPLETE, NOT_ROLLABLE, UNRECOGNIZED = "rolled_up", "incomplete", "not_rollable", "unrecognized_param"
COMPARED, NO_PEERS = "compared", "no_peers"


@dataclass(frozen=True)
class MemberValue:
    """One entity's stored fact for the question (``found``), or its absence (``not_found``)."""

    entity: str
    label: str
    status: str
    value: str = ""
    unit: str = ""
    period: str = ""
    source_doc_id: str = ""
    source_locator: str = ""
    valid_as_of: str = ""

    def __post_init__(self) -> None:
        if self.status not in ("found", "not_found"):
            raise ValueError(f"a member is found or not_found, got {self.status!r}")
        if self.status == "found" and not (self.value and self.source_doc_id and self.source_locator):
            raise ValueError("a found member carries its value, source_doc_id and source_locator")
        if self.status == "not_found" and (self.value or self.unit or self.source_doc_id):
            raise ValueError("a not_found member carries no value and no source")

    @property
    def found(self) -> bool:
        return self.status == "found"

    def to_dict(self) -> dict[str, Any]:
        return dict(vars(self))


def _edges(edges: tuple[Edge, ...]) -> list[dict[str, object]]:
    return [e.to_dict() for e in edges]


@dataclass(frozen=True)
class RollUp:
    """A metric summed over an entity's subsidiaries (see the module docstring). ``status``:
    ``rolled_up`` (``total`` set), ``incomplete`` (``missing`` names who has no fact),
    ``not_rollable`` (``reason``: no subsidiaries, units differ, a non-additive unit, or the
    members' periods are different spans) or ``unrecognized_param``."""

    status: str
    text: str
    metric: str = ""
    entity: str = ""
    channel: str = ""
    total: str = ""
    unit: str = ""
    members: tuple[MemberValue, ...] = ()
    missing: tuple[str, ...] = ()
    reason: str = ""
    relations: tuple[Edge, ...] = ()

    def __post_init__(self) -> None:
        if self.status not in (ROLLED_UP, INCOMPLETE, NOT_ROLLABLE, UNRECOGNIZED):
            raise ValueError(f"unknown roll-up status {self.status!r}")
        if any(not e.citable for e in self.relations):
            raise ValueError("a roll-up cites only citable edges (never a model-derived one)")
        if self.status != ROLLED_UP:
            if self.total or self.unit:
                raise ValueError(f"a {self.status} roll-up carries no total")
            if self.status == INCOMPLETE and (not self.missing or any(m.found for m in self.members if m.entity in self.missing)):
                raise ValueError("an incomplete roll-up names its missing members")
            return
        if not self.members or self.missing or not all(m.found for m in self.members):
            raise ValueError("a total needs a found fact for every member")
        if any(m.unit != self.unit for m in self.members):
            raise ValueError("a total sums members of one unit")
        try:
            exact = sum((Decimal(m.value) for m in self.members), Decimal(0)) == Decimal(self.total)
        except InvalidOperation:
            exact = False
        if not exact:
            raise ValueError("a total is the exact sum of its members' stored values")

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status, "text": self.text, "metric": self.metric, "entity": self.entity, "channel": self.channel,
            "total": self.total, "unit": self.unit, "members": [m.to_dict() for m in self.members],
            "missing": list(self.missing), "reason": self.reason, "relations": _edges(self.relations),
        }


@dataclass(frozen=True)
class PeerComparison:
    """A metric for an entity and its peers (the subsidiaries of the same parent), each row a
    stored fact or its absence. ``ranking`` (highest first) is given only when the found rows
    are ``comparable``: one unit and one period span."""

    status: str
    text: str
    metric: str = ""
    entity: str = ""
    parent: str = ""
    rows: tuple[MemberValue, ...] = ()
    comparable: bool = False
    ranking: tuple[str, ...] = ()
    relations: tuple[Edge, ...] = ()

    def __post_init__(self) -> None:
        if self.status not in (COMPARED, NO_PEERS, UNRECOGNIZED):
            raise ValueError(f"unknown comparison status {self.status!r}")
        if any(not e.citable for e in self.relations):
            raise ValueError("a comparison cites only citable edges")
        found = {m.entity for m in self.rows if m.found}
        if self.ranking and (not self.comparable or set(self.ranking) != found):
            raise ValueError("a ranking orders exactly the found rows, and only when they are comparable")

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status, "text": self.text, "metric": self.metric, "entity": self.entity, "parent": self.parent,
            "rows": [m.to_dict() for m in self.rows], "comparable": self.comparable, "ranking": list(self.ranking),
            "relations": _edges(self.relations),
        }


@dataclass(frozen=True)
class DerivationStep:
    """One metric of a derivation tree: the edge it was reached by (``None`` at the root), its
    inputs, and — when an entity and period were asked — its stored fact or absence."""

    metric: str
    label: str
    via: Edge | None = None
    inputs: tuple[DerivationStep, ...] = ()
    fact: MemberValue | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric, "label": self.label, "via": self.via.to_dict() if self.via else None,
            "inputs": [step.to_dict() for step in self.inputs], "fact": self.fact.to_dict() if self.fact else None,
        }


@dataclass(frozen=True)
class Derivation:
    """What a metric is derived from (``derived_from`` edges, recursively), never its computed value."""

    status: str
    text: str
    root: DerivationStep | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "text": self.text, "root": self.root.to_dict() if self.root else None}
