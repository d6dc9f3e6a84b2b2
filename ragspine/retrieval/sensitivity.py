"""The one RESTRICTED constant guarding both exits (rerank and link)."""

from __future__ import annotations

RESTRICTED_SENSITIVITY = "RESTRICTED"
DEFAULT_SENSITIVITY = "INTERNAL"


def is_restricted(sensitivity: object) -> bool:
    """True when ``sensitivity`` equals RESTRICTED, case-insensitively (whitespace ignored)."""
    return str(sensitivity).strip().upper() == RESTRICTED_SENSITIVITY
