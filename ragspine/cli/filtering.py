"""``ragspine query --filter FIELD OP VALUE``: the command line's filter, read as ``/v1/retrieve``
reads its ``filters``.

VALUE is JSON and keeps its JSON type: ``2024`` is a number, ``'"2024"'`` a string, ``true`` a
boolean, ``null`` null, ``'["en", "zh"]'`` a list (``in`` / ``nin``), ``'[2020, 2024]'`` the two
ends of ``between``. A VALUE that is not JSON is the string it spells, exactly as typed
(``--filter lang eq en``): never split at commas, trimmed, or made a number. A VALUE that opens
like JSON (``[``, ``{`` or ``"``) but does not parse is refused — a list or a quoted string gone
wrong, which read as text would match nothing.

The conditions then go through :func:`parse_filter`, the validator of ``/v1/retrieve``: a
malformed filter is refused with the message the service answers (``bad filter: ...``).
"""

from __future__ import annotations

import argparse
import json
from typing import Any, Sequence

from ragspine.errors import FilterError
from ragspine.retrieval.filtering.filters import OPERATORS, FilterLimits, MetadataFilter, parse_filter

__all__ = ["add_filter_flag", "describe_filter", "filter_from_args", "read_value"]

#: How a JSON object, list or string opens: a VALUE that starts so must be valid JSON.
JSON_OPENERS = ("[", "{", '"')
#: The prefix the service puts before a :class:`FilterError` (``service/errors.py``).
BAD_FILTER = "bad filter: {}"


def add_filter_flag(query: argparse.ArgumentParser) -> None:
    query.add_argument(
        "--filter", action="append", nargs=3, default=[], metavar=("FIELD", "OP", "VALUE"),
        help=f"metadata filter (repeatable, AND-ed), OP one of {', '.join(OPERATORS)}. VALUE is JSON and keeps its"
        " type: 2024 a number, '\"2024\"' a string, true, null, '[\"en\", \"zh\"]' a list for in/nin, '[lo, hi]'"
        " for between; a VALUE that is not JSON is the text as typed (lang eq en)",
    )


def read_value(field: str, op: str, raw: str) -> Any:
    """One ``--filter`` VALUE: its JSON value, else the text itself; broken JSON is refused."""
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        if raw.lstrip().startswith(JSON_OPENERS):
            raise FilterError(
                f"--filter {field} {op} {raw}: the value is not valid JSON ({exc.msg} at column {exc.colno});"
                " quote each string of a list, e.g. '[\"en\", \"zh\"]'"
            ) from None
        return raw


def filter_from_args(triples: Sequence[Sequence[str]], limits: FilterLimits | None) -> MetadataFilter | None:
    """The ``--filter`` triples as one filter, validated by :func:`parse_filter` within ``limits``."""
    try:
        return parse_filter([{"field": f, "op": op, "value": read_value(f, op, v)} for f, op, v in triples], limits=limits)
    except FilterError as exc:
        raise type(exc)(BAD_FILTER.format(exc)) from None


def describe_filter(metadata_filter: MetadataFilter) -> str:
    """``year eq "2024" and lang in ["en"]``: each value as JSON, so its type shows."""
    return " and ".join(
        f"{c['field']} {c['op']} {json.dumps(c['value'], ensure_ascii=False)}" for c in metadata_filter.to_list()
    )
