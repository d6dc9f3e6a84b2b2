"""A service library's recipe as stored: the :class:`~ragspine.profile.Profile` choices it made,
one JSON value (``ragspine_service_library.profile``).

The JSON is :meth:`Profile.to_json`'s form, sparse: it always holds what a library fixes at its
creation — ``mode``, ``embedding``, ``chunker``, ``contextual`` and the whole ``ranking`` (a
``fusion_weights`` of ``null`` is the seed's RRF, not the server's) — and holds a ``reasoning``
choice or ``raptor`` only where the library chose one; what it leaves out is the server's at each
search (``Profile.from_json(json, base=server_profile)``).

:func:`from_columns` reads the fourteen columns that held a library's recipe before revision
``0013_library_profile`` (the migration and an older SQLite file's conversion use it), with the
meaning they had: NULL in a column older than its row meant the fixed default (``default``,
``none``, depth 50, no weights), NULL in a reasoning column or ``raptor`` meant the server's.
:func:`to_columns` is its inverse (the migration's downgrade).
"""

from __future__ import annotations

import json
from typing import Any, Mapping

#: The columns revision 0013 folded into ``profile``: column -> (where in the JSON, key, default when NULL; None: left out).
OLD_COLUMNS: dict[str, tuple[str, str, Any]] = {
    "embedding": ("", "embedding", "none"),
    "retrieval_mode": ("", "mode", "auto"),
    "chunker": ("", "chunker", "default"),
    "contextual": ("", "contextual", "none"),
    "reranker": ("ranking", "reranker", "none"),
    "rerank_depth": ("ranking", "rerank_depth", 50),
    "postprocessor": ("ranking", "postprocessor", "none"),
    "fusion_weights": ("ranking", "fusion_weights", None),
    "query_transform": ("reasoning", "transform", None),
    "decompose": ("reasoning", "decompose", None),
    "adaptive": ("reasoning", "adaptive", None),
    "corrective": ("reasoning", "corrective", None),
    "query_fanout": ("reasoning", "fanout", None),
    "raptor": ("", "raptor", None),
}
_ALWAYS = {"embedding", "retrieval_mode", "chunker", "contextual", "reranker", "rerank_depth", "postprocessor", "fusion_weights"}


def recipe_json(choices: Mapping[str, Any]) -> str:
    """The stored JSON of ``choices`` (``{"mode": ..., "ranking": {...}, "reasoning": {...}}``), keys sorted."""
    return json.dumps(dict(choices), sort_keys=True, separators=(",", ":"))


def from_columns(row: Mapping[str, Any]) -> dict[str, Any]:
    """The recipe (sparse Profile JSON) the old columns of ``row`` held."""
    out: dict[str, Any] = {}
    for column, (where, key, default) in OLD_COLUMNS.items():
        value = row.get(column)
        if value is None and column not in _ALWAYS:
            continue  # the server's at each search
        value = default if value is None else value
        if column in ("corrective", "raptor"):
            value = bool(value)
        (out.setdefault(where, {}) if where else out)[key] = value
    return out


def to_columns(data: Mapping[str, Any] | str | None) -> dict[str, Any]:
    """The old columns of a stored recipe (NULL where it made no choice)."""
    parsed: Mapping[str, Any] = json.loads(data) if isinstance(data, str) else (data or {})
    out: dict[str, Any] = {}
    for column, (where, key, _) in OLD_COLUMNS.items():
        holder = parsed.get(where, {}) if where else parsed
        out[column] = holder.get(key) if isinstance(holder, Mapping) else None
    return out
