"""The one RESTRICTED constant guarding both exits (rerank and link), and the one way a
sensitivity label is read from a document.

Reading fails closed: a label is a string, compared stripped and case-insensitively; any
spelling of ``RESTRICTED`` is stored as ``RESTRICTED``; a non-string value (a YAML list such as
``[RESTRICTED]``, a number, a mapping) is an error naming the fix — never stringified into a
label that would read as open. Keys that differ from a document field only in case
(``Sensitivity:``) are that field (:func:`reserved_key`), never ordinary metadata.
"""

from __future__ import annotations

RESTRICTED_SENSITIVITY = "RESTRICTED"
DEFAULT_SENSITIVITY = "INTERNAL"
#: The document fields (front matter keys, upload fields); anything else is metadata.
DOCUMENT_FIELDS = ("doc_id", "title", "sensitivity", "valid_as_of", "chunker")
MAX_SENSITIVITY_CHARS = 64


def is_restricted(sensitivity: object) -> bool:
    """True when ``sensitivity`` equals RESTRICTED, case-insensitively (whitespace ignored)."""
    return str(sensitivity).strip().upper() == RESTRICTED_SENSITIVITY


def parse_sensitivity(value: object, where: str = "document", *, default: str = DEFAULT_SENSITIVITY) -> str:
    """A document's sensitivity label, or ``IngestError`` (fails closed, see the module docstring).
    ``None`` means "not given": ``default``."""
    from ragspine.errors import IngestError

    if value is None:
        return default
    if not isinstance(value, str):
        raise IngestError(
            f"{where}: sensitivity must be one label such as RESTRICTED, got {type(value).__name__} {value!r}"
            " (write `sensitivity: RESTRICTED`, not a list)"
        )
    label = value.strip()
    if not label:
        raise IngestError(f"{where}: sensitivity is empty; give a label such as INTERNAL or RESTRICTED")
    if len(label) > MAX_SENSITIVITY_CHARS or any(ord(ch) < 32 for ch in label):
        raise IngestError(f"{where}: sensitivity {label[:80]!r} is not a label (at most {MAX_SENSITIVITY_CHARS} printable characters)")
    return RESTRICTED_SENSITIVITY if is_restricted(label) else label


def reserved_key(name: object) -> str | None:
    """The document field ``name`` names, ignoring case and surrounding spaces (``None``: metadata)."""
    if not isinstance(name, str):
        return None
    folded = name.strip().casefold()
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
