"""The ``FactStore`` role: versioned, library-scoped numeric facts — and ``Fact``, the row.

A fact is one number with its dimensions and its provenance::

    metric, entity, period, channel   canonical glossary keys (``revenue``, ``KESTREL``,
                                      ``2024Q3``, ``total``)
    value, unit                       an exact decimal and its unit (``182``, ``EUR_M``)
    source_doc_id, source_locator     where the number was read (``kestrel/q3-2024-results``,
                                      ``p. 1, table 2``)
    valid_as_of                       the ISO date the number is valid as of
    sensitivity                       ``RESTRICTED`` (any case) facts are never answered

A store instance is scoped to one library (``library_id``), like a ``ChunkStore``: every read
and write it makes is confined to that library, which is how tenants' facts stay apart in a
shared database (a library belongs to one tenant).

**Versioning** is per source document, like chunks per document: :meth:`FactStore.replace_facts`
gives each source it names ``version = previous version + 1``, retires the source's active rows
and writes the new ones, for every source of the batch in *one* transaction. A reader (every
read is one statement) sees the previous facts of a source or the new ones, never a mix and
never neither; a batch that raises leaves every source as it was. An empty fact list retires
the source (its version still advances).

**One fact per key**: within a library at most one *active* fact has a given
``(metric, entity, period, channel)`` — across all sources and sensitivities — so a lookup
never has to choose between two numbers. A replace that would make a second one active
raises :class:`FactClashError` (naming the key and the source holding it) and writes nothing.

Every backend passes ``ragspine.testing.FactStoreConformance``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Iterable, NamedTuple, Protocol, Sequence, runtime_checkable

from ragspine.errors import IngestError
from ragspine.retrieval.sensitivity import RESTRICTED_SENSITIVITY, is_restricted

#: The channel key of a fact given without one (and of a query without ``channel``).
TOTAL_CHANNEL = "total"


@dataclass(frozen=True)
class Fact:
    """One numeric fact, its dimensions as canonical keys (see the module docstring)."""

    metric: str
    entity: str
    period: str
    value: Decimal
    source_doc_id: str
    source_locator: str
    valid_as_of: str
    unit: str = ""
    channel: str = TOTAL_CHANNEL
    sensitivity: str = "INTERNAL"

    @property
    def key(self) -> "FactKey":
        return FactKey(self.metric, self.entity, self.period, self.channel)


@dataclass(frozen=True)
class StoredFact(Fact):
    """A :class:`Fact` as stored: its library, its source's version and whether it is active."""

    library_id: str = ""
    version: int = 1
    ordinal: int = 0
    active: bool = True


class FactKey(NamedTuple):
    """What identifies a fact within a library: at most one active fact per key."""

    metric: str
    entity: str
    period: str
    channel: str


class SourceFacts(NamedTuple):
    """One source document's new facts for :meth:`FactStore.replace_facts`."""

    source_doc_id: str
    facts: Sequence[Fact]


class FactClashError(IngestError):
    """A replace would make a second fact active for ``key`` (held by ``other_source``)."""

    def __init__(self, key: FactKey, other_source: str) -> None:
        super().__init__(
            f"{key.metric} / {key.entity} / {key.period} / {key.channel} already has an active fact from source"
            f" {other_source!r}; re-ingest that source without it, or ingest both sources in one file"
        )
        self.key = key
        self.other_source = other_source


@runtime_checkable
class FactStore(Protocol):
    """A versioned, library-scoped fact store (see the module docstring)."""

    library_id: str

    def init_schema(self) -> None:
        """Make the store ready to use (SQLite: create its tables; PostgreSQL: check the
        schema revision, raising ``SchemaError`` naming ``ragspine migrate``); idempotent."""
        ...

    def replace_facts(self, sources: Sequence[SourceFacts]) -> int:
        """Versioned replace of every source in ``sources``, as one transaction: all of it
        becomes visible at commit or none of it. Returns the facts written. Raises
        ``IngestError`` for invalid input (before any write), :class:`FactClashError` when a key
        would be active twice; a source may appear once per batch. Sources not named are
        untouched."""
        ...

    def lookup(self, metric: str, entity: str, period: str, channel: str = TOTAL_CHANNEL) -> list[StoredFact]:
        """The active, **non-RESTRICTED** facts with exactly these canonical keys (one
        statement; at most one fact, by the one-fact-per-key rule). A RESTRICTED fact is
        never returned, so a key held only by a RESTRICTED fact looks exactly like an absent one."""
        ...

    def iter_facts(
        self, *, source_doc_id: str | None = None, include_restricted: bool = False, include_inactive: bool = False
    ) -> list[StoredFact]:
        """The library's facts ordered by ``(source_doc_id, version, ordinal)``: active and
        non-RESTRICTED by default."""
        ...

    def source_ids(self) -> list[str]:
        """The sources with active facts, sorted by code point."""
        ...

    def count(self, *, include_inactive: bool = False) -> int:
        """Active facts (every stored version with ``include_inactive``), RESTRICTED included."""
        ...

    def close(self) -> None: ...


def check_sources(sources: Sequence[SourceFacts]) -> list[SourceFacts]:
    """The checks every backend runs before any I/O (raises ``IngestError``): a source named
    once per batch, non-empty text keys, no NUL character (PostgreSQL text cannot hold one),
    a finite value, and no key twice within the batch. Returns the batch with every spelling
    of RESTRICTED stored as ``RESTRICTED`` (so SQL and :func:`is_restricted` always agree)."""
    seen: set[str] = set()
    keys: dict[FactKey, str] = {}
    out: list[SourceFacts] = []
    for source_doc_id, facts in sources:
        if not isinstance(source_doc_id, str) or not source_doc_id.strip() or "\x00" in source_doc_id:
            raise IngestError(f"source_doc_id must be a non-empty string without NUL, got {source_doc_id!r}")
        if source_doc_id in seen:
            raise IngestError(f"source {source_doc_id!r} appears twice in one batch")
        seen.add(source_doc_id)
        checked: list[Fact] = []
        for fact in facts:
            _check_fact(fact, source_doc_id)
            if fact.key in keys:
                raise FactClashError(fact.key, keys[fact.key])
            keys[fact.key] = source_doc_id
            if is_restricted(fact.sensitivity) and fact.sensitivity != RESTRICTED_SENSITIVITY:
                fact = replace(fact, sensitivity=RESTRICTED_SENSITIVITY)
            checked.append(fact)
        out.append(SourceFacts(source_doc_id, checked))
    return out


def open_facts(facts: Iterable[StoredFact]) -> list[StoredFact]:
    """``facts`` without the RESTRICTED ones, by :func:`is_restricted` (which folds lookalike
    labels): the stores' SQL leaves out what ingest stores as ``RESTRICTED``, this drops a
    lookalike label stored before ingest folded them (``RESTRICTED`` + a zero-width space)."""
    return [f for f in facts if not is_restricted(f.sensitivity)]


_TEXT_FIELDS = ("metric", "entity", "period", "channel", "source_doc_id", "source_locator", "valid_as_of", "unit", "sensitivity")
_REQUIRED = ("metric", "entity", "period", "channel", "source_locator", "valid_as_of", "sensitivity")


def _check_fact(fact: Fact, source_doc_id: str) -> None:
    where = f"a fact of source {source_doc_id!r}"
    if not isinstance(fact, Fact):
        raise IngestError(f"{where} is a {type(fact).__name__}, not a Fact")
    if fact.source_doc_id != source_doc_id:
        raise IngestError(f"{where} names source {fact.source_doc_id!r}")
    for name in _TEXT_FIELDS:
        value = getattr(fact, name)
        if not isinstance(value, str) or "\x00" in value:
            raise IngestError(f"{where}: {name} must be a string without NUL, got {value!r}")
    for name in _REQUIRED:
        if not getattr(fact, name).strip():
            raise IngestError(f"{where}: {name} is empty")
    if not isinstance(fact.value, Decimal) or not fact.value.is_finite():
        raise IngestError(f"{where}: value must be a finite Decimal, got {fact.value!r}")
