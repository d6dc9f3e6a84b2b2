"""Pure translation of a :class:`MetadataFilter` into a Qdrant ``Filter`` (no I/O).

Payload layout of a point (see ``store.py``)::

    {"library_id": ..., "chunk_id": ..., "doc_id": ..., "version": ..., "sensitivity": ...,
     "m": {encode_field(name): value, ...}}

Metadata field names are encoded (``"f"`` + hex of their UTF-8 bytes) so that any name —
dots, brackets, quotes, unicode, 256 characters — is one literal key and never a Qdrant key
path; user metadata lives under ``"m"`` and cannot collide with ``library_id``.

Each condition becomes one ANDed sub-filter, by an operator → handler dispatch
(``docs/concepts.md`` "Metadata filters"):

* presence-and-non-null is ``must_not IsEmpty(key)`` (IsEmpty: missing, null or ``[]``);
  ``eq null`` is ``IsNull(key)`` (a missing key is not null, on the server and locally);
* string equality is ``MatchValue(str)``/``MatchAny([str])`` and boolean equality
  ``MatchValue(bool)``; both match only their own JSON type. Number equality is
  ``Range(gte=v, lte=v)``: ``MatchValue`` takes integers only and never matches a float
  payload (the server compares ``as_i64``), whereas a ``Range`` compares every JSON number
  as f64 and never matches a boolean or a string — exactly "int and float are one kind";
* ``ne``/``nin`` are ``must_not`` of the equalities plus presence; ``in []`` matches
  nothing (:attr:`QdrantFilter.never`, so no request is sent — an empty ``should`` would
  match everything on a server); ``in``/``nin`` ignore null elements (a null never equals a
  present non-null value);
* ordered operators on numbers are ``Range``. Qdrant has no range on strings, and a number
  operand of magnitude ≥ 2**53 is not exact once the server turns integers into f64: such
  conditions are returned in :attr:`QdrantFilter.python` and resolved by the store in a
  second phase (a payload-only scroll of the library's points that pass the native part,
  then ``HasIdCondition`` with the survivors — see ``QdrantVectorStore``).

Local mode evaluates the same conditions in Python (``qdrant_client/local/payload_filters.py``)
and agrees with the server on everything used here: ``MatchValue`` keeps bool, int and float
apart, ``Range`` skips booleans and strings, ``IsNull`` does not match a missing key. It
compares an int payload with a ``Range`` bound exactly where a server compares f64 — the
reason operands beyond 2**53 take the Python path on both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from ragspine.errors import MissingDependencyError
from ragspine.retrieval.filtering.filters import (
    OPERATORS,
    FilterCondition,
    MetadataFilter,
)

try:
    from qdrant_client.http import models
except ImportError:  # pragma: no cover - exercised without the extra installed
    raise MissingDependencyError("qdrant-client", "qdrant", "the Qdrant vector store") from None

__all__ = [
    "METADATA_KEY",
    "QdrantFilter",
    "decode_field",
    "decode_metadata",
    "encode_field",
    "encode_metadata",
    "field_key",
    "library_condition",
    "models",
    "translate",
]

METADATA_KEY = "m"
#: Numbers at or beyond this magnitude are not all exact as f64 (the server's Range type).
EXACT_FLOAT_LIMIT = 2**53


# -- field names --------------------------------------------------------------------------
def encode_field(name: str) -> str:
    """``"a.b"`` → ``"f612e62"``: a key made of ``[0-9a-f]`` that Qdrant never parses."""
    return "f" + name.encode("utf-8").hex()


def decode_field(key: str) -> str:
    if not key.startswith("f"):
        raise ValueError(f"not an encoded metadata key: {key!r}")
    return bytes.fromhex(key[1:]).decode("utf-8")


def field_key(name: str) -> str:
    """The full payload key path of a metadata field: ``m.<encoded>``."""
    return f"{METADATA_KEY}.{encode_field(name)}"


def encode_metadata(metadata: Mapping[str, Any]) -> dict[str, Any]:
    return {encode_field(name): value for name, value in metadata.items()}


def decode_metadata(encoded: Mapping[str, Any] | None) -> dict[str, Any]:
    return {decode_field(key): value for key, value in (encoded or {}).items()}


def library_condition(library_id: str) -> models.FieldCondition:
    """The tenant condition every request carries."""
    return models.FieldCondition(key="library_id", match=models.MatchValue(value=library_id))


# -- translation --------------------------------------------------------------------------
@dataclass(frozen=True)
class QdrantFilter:
    """A translated filter: ``native`` conditions (ANDed, for Qdrant), ``python`` conditions
    (resolved client-side in a second phase) and ``never`` (the filter matches nothing)."""

    native: tuple[models.Condition, ...] = ()
    python: tuple[FilterCondition, ...] = field(default=())
    never: bool = False

    def to_filter(self, *extra: models.Condition) -> models.Filter:
        """``Filter(must=[*extra, *native])``; for ``never``, a filter no point satisfies."""
        if self.never:
            empty = models.IsEmptyCondition(is_empty=models.PayloadField(key="library_id"))
            return models.Filter(must=[*extra, empty], must_not=[empty])
        return models.Filter(must=[*extra, *self.native])

    def matches_python(self, encoded_metadata: Mapping[str, Any] | None) -> bool:
        """The second phase: do a point's (encoded) metadata pass the ``python`` conditions?"""
        if not self.python:
            return True
        meta = encoded_metadata or {}
        for cond in self.python:
            key = encode_field(cond.field)
            if not cond.matches({cond.field: meta[key]} if key in meta else {}):
                return False
        return True


_NEVER = object()  # a handler's answer for a condition that no point satisfies


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _inexact_number(value: Any) -> bool:
    return _is_number(value) and abs(value) >= EXACT_FLOAT_LIMIT


def _needs_python(cond: FilterCondition) -> bool:
    values = cond.value if isinstance(cond.value, tuple) else (cond.value,)
    if cond.op in ("gt", "gte", "lt", "lte", "between") and isinstance(values[0], str):
        return True
    return any(_inexact_number(v) for v in values)


def _present(key: str) -> models.Condition:
    """Matches when the key is missing, null or ``[]``; used under ``must_not``."""
    return models.IsEmptyCondition(is_empty=models.PayloadField(key=key))


def _equals(key: str, value: Any) -> models.Condition:
    """Type-aware equality (``eq`` semantics) of one operand."""
    if value is None:
        return models.IsNullCondition(is_null=models.PayloadField(key=key))
    if isinstance(value, (bool, str)):
        return models.FieldCondition(key=key, match=models.MatchValue(value=value))
    return models.FieldCondition(key=key, range=models.Range(gte=value, lte=value))


def _any_of(key: str, values: Sequence[Any]) -> list[models.Condition]:
    """Equality with any of the non-null ``values`` as a list of alternatives."""
    strings = list(dict.fromkeys(v for v in values if isinstance(v, str)))
    others = list(dict.fromkeys((type(v) is bool, v) for v in values if v is not None and not isinstance(v, str)))
    out: list[models.Condition] = []
    if strings:
        out.append(models.FieldCondition(key=key, match=models.MatchAny(any=strings)))
    out.extend(_equals(key, v) for _, v in others)
    return out


def _eq(key: str, cond: FilterCondition) -> Any:
    return _equals(key, cond.value)


def _ne(key: str, cond: FilterCondition) -> Any:
    if cond.value is None:
        return models.Filter(must_not=[_present(key)])
    return models.Filter(must_not=[_present(key), _equals(key, cond.value)])


def _in(key: str, cond: FilterCondition) -> Any:
    alternatives = _any_of(key, cond.value)
    if not alternatives:
        return _NEVER
    return alternatives[0] if len(alternatives) == 1 else models.Filter(should=alternatives)


def _nin(key: str, cond: FilterCondition) -> Any:
    return models.Filter(must_not=[_present(key), *_any_of(key, cond.value)])


def _ordered(key: str, cond: FilterCondition) -> Any:
    return models.FieldCondition(key=key, range=models.Range(**{cond.op: cond.value}))


def _between(key: str, cond: FilterCondition) -> Any:
    lo, hi = cond.value
    if lo > hi:
        return _NEVER
    return models.FieldCondition(key=key, range=models.Range(gte=lo, lte=hi))


_HANDLERS: dict[str, Callable[[str, FilterCondition], Any]] = {
    "eq": _eq,
    "ne": _ne,
    "in": _in,
    "nin": _nin,
    "gt": _ordered,
    "gte": _ordered,
    "lt": _ordered,
    "lte": _ordered,
    "between": _between,
}
assert set(_HANDLERS) == set(OPERATORS), "every filter operator needs a Qdrant handler"


def _storable(name: str) -> bool:
    """Whether a field name can be a payload key (UTF-8: no lone surrogate)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def translate(where: MetadataFilter | None) -> QdrantFilter:
    """Translate ``where`` (already validated: a well-formed filter never raises here)."""
    if not where:
        return QdrantFilter()
    native: list[models.Condition] = []
    python: list[FilterCondition] = []
    for cond in where.conditions:
        if not _storable(cond.field):  # no payload can hold the key: the field is missing, so
            return QdrantFilter(never=True)  # the condition (and the AND) matches nothing
        if _needs_python(cond):
            python.append(cond)
            continue
        translated = _HANDLERS[cond.op](field_key(cond.field), cond)
        if translated is _NEVER:
            return QdrantFilter(never=True)
        native.append(translated)
    return QdrantFilter(tuple(native), tuple(python))
