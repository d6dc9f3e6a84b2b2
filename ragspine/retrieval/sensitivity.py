"""The one RESTRICTED constant guarding both exits (rerank and link), and the one way a
sensitivity label is read from a document or a fact.

Reading fails closed: a label is a string; ``None`` given explicitly (``sensitivity: null``,
``"sensitivity": null``) is an error, never the default; a non-string value (a YAML list such as
``[RESTRICTED]``, a number, a mapping) is an error naming the fix — never stringified into a
label that would read as open. A label is RESTRICTED when it *looks like* RESTRICTED
(:func:`is_restricted`): compared through :func:`ragspine.security.fold.compact` (NFKC, format
characters such as zero-width spaces, joiners, soft hyphens and a BOM removed, case-folded,
Unicode confusables such as Cyrillic ``Е``/``І``, Greek ``Ι`` or mathematical bold letters
folded to their Latin skeleton, separators between letters removed) after combining accents
are dropped, and any character that is not a letter or a digit is ignored (``[RESTRICTED]``,
``"RESTRICTED"``, ``RESTRICTED!`` are RESTRICTED). Every ingest path stores such a label as exactly ``RESTRICTED``
(:func:`parse_sensitivity`), so the stores' SQL, which compares ``RESTRICTED``, agrees; and
every exit that reads a label (:func:`is_restricted`) folds it again, so a lookalike label
stored before this rule (``RESTRICTED`` + a zero-width space) is RESTRICTED too.

Keys that look like a document field (``Sensitivity:``, full-width ``ｓｅｎｓｉｔｉｖｉｔｙ:``) are that
field (:func:`reserved_key`), never ordinary metadata; two keys naming one field are an error.
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache

from ragspine.security.fold import compact, skeleton

RESTRICTED_SENSITIVITY = "RESTRICTED"
DEFAULT_SENSITIVITY = "INTERNAL"
#: The document fields (front matter keys, upload fields); anything else is metadata.
DOCUMENT_FIELDS = ("doc_id", "title", "sensitivity", "valid_as_of", "chunker")
MAX_SENSITIVITY_CHARS = 64


def is_restricted(sensitivity: object) -> bool:
    """True when ``sensitivity`` looks like RESTRICTED (see the module docstring): any case,
    surrounding or interleaved spaces and separators, invisible characters, full-width or
    confusable letters, accents."""
    label = sensitivity if isinstance(sensitivity, str) else str(sensitivity)
    if label == RESTRICTED_SENSITIVITY:
        return True
    return _cached_fold(label) if len(label) <= 4 * MAX_SENSITIVITY_CHARS else _fold(label)  # labels are few: cache them


def _fold(label: str) -> bool:
    bare = "".join(ch for ch in unicodedata.normalize("NFD", label) if unicodedata.category(ch) != "Mn")
    return "".join(ch for ch in compact(bare) if ch.isalnum()) == "restricted"  # punctuation anywhere: "[RESTRICTED]", "RESTRICTED!"


_cached_fold = lru_cache(maxsize=4096)(_fold)


def parse_sensitivity(value: object, where: str = "document", *, default: str | None = DEFAULT_SENSITIVITY) -> str:
    """A document's (or fact's) sensitivity label, or ``IngestError`` (fails closed, see the
    module docstring): a label that looks like RESTRICTED is ``RESTRICTED``. ``None`` means
    "not given": ``default`` — or, with ``default=None`` (a key given as null), an error."""
    from ragspine.errors import IngestError

    if value is None:
        if default is None:
            raise IngestError(f"{where}: sensitivity is null; give a label such as INTERNAL or RESTRICTED, or leave the key out")
        return default
    if not isinstance(value, str):
        raise IngestError(
            f"{where}: sensitivity must be one label such as RESTRICTED, got {type(value).__name__} {value!r}"
            " (write `sensitivity: RESTRICTED`, not a list)"
        )
    label = value.strip()
    if is_restricted(label):  # before the checks below: any lookalike, however long or odd, is RESTRICTED
        return RESTRICTED_SENSITIVITY
    if not label:
        raise IngestError(f"{where}: sensitivity is empty; give a label such as INTERNAL or RESTRICTED")
    if len(label) > MAX_SENSITIVITY_CHARS or any(ord(ch) < 32 for ch in label):
        raise IngestError(f"{where}: sensitivity {label[:80]!r} is not a label (at most {MAX_SENSITIVITY_CHARS} printable characters)")
    return label


def reserved_key(name: object) -> str | None:
    """The document field ``name`` names, ignoring case, surrounding spaces and lookalike
    letters (``Sensitivity``, ``ｓｅｎｓｉｔｉｖｉｔｙ``; ``None``: metadata)."""
    if not isinstance(name, str) or len(name) > 4 * MAX_SENSITIVITY_CHARS:
        return None
    folded = name.strip().casefold()
    if folded not in DOCUMENT_FIELDS:
        folded = skeleton(name).strip()
    return next((f for f in DOCUMENT_FIELDS if f == folded), None)


def split_document_fields(data: dict[str, object], where: str) -> tuple[dict[str, object], dict[str, object]]:
    """``(document fields, metadata)`` of a front matter or upload mapping: a key naming a
    document field in any case is that field; two keys naming one field is an error."""
    from ragspine.errors import IngestError

    fields: dict[str, object] = {}
    seen: dict[str, str] = {}
    metadata: dict[str, object] = {}
    for key, value in data.items():
        field = reserved_key(key)
        if field is None:
            metadata[key] = value
            continue
        if field in seen:
            raise IngestError(f"{where}: {seen[field]!r} and {key!r} both set {field}; keep one")
        seen[field] = key
        fields[field] = value
    return fields, metadata
