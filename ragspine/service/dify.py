"""Dify's external knowledge API, the pure parts: ``metadata_condition`` → our filter, and the
record shape with a score in [0, 1].

**Score.** A record's ``score`` is its fused RRF score divided by the best fused score the
query could reach — ``n / (k + 1)`` for ``n`` rankings (each leg — BM25, dense — of each query
variant) — see :meth:`NarrativeIndex.max_fused_score`. 1.0 means "ranked first by every
ranker", 0.5 "first by half of them, or lower in all"; it does not depend on the other
results, so a threshold means the same for every query (unlike min-max, which always gives
the top record 1.0, however poor).

**Conditions.** Dify's operators map onto the nine-operator grammar; anything that does not
map is refused (:class:`UnsupportedCondition`, error_code 3001) rather than dropped, since
dropping a condition would widen the result. Values keep their JSON type: an ``in`` / ``not in``
list is taken item by item as sent; only a comma-separated string (``"ops, sales"``) is split,
each item trimmed.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ragspine.service.models import DifyMetadataCondition

UNSUPPORTED_CONDITION = 3001
INVALID_REQUEST = 3002
KNOWLEDGE_MISSING = 2001
TIMED_OUT = 5004  # ours: the request ran past its deadline (RAGSPINE_REQUEST_TIMEOUT)
DEFAULT_TOP_K = 4

#: Dify operator → ours. ``before``/``after`` take Unix seconds and compare numbers.
OPERATORS = {
    "is": "eq", "=": "eq", "is not": "ne", "≠": "ne", "!=": "ne",
    ">": "gt", "<": "lt", "≥": "gte", "≤": "lte", ">=": "gte", "<=": "lte",
    "before": "lt", "after": "gt", "in": "in", "not in": "nin",
}
NUMERIC = {"=", "≠", "!=", ">", "<", "≥", "≤", ">=", "<="}
TIMES = {"before", "after"}
#: Snippet keys of a parent/window expansion, carried in a record's metadata.
EXPANSION_KEYS = ("heading", "parent_id", "parent_locator", "prompt_text", "prompt_text_in", "expansion_withheld")
#: Record metadata keys Dify overwrites with its own values.
RESERVED_METADATA = ("score", "title", "dataset_id", "dataset_name")


class UnsupportedCondition(ValueError):
    """A condition our grammar cannot express exactly (answered 400, error_code 3001)."""


def _number(value: Any) -> Any:
    """A numeric string as a number; anything else unchanged."""
    if isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return value
        return int(number) if number.is_integer() and "." not in value and "e" not in value.lower() else number
    return value


def map_condition(condition: DifyMetadataCondition | None) -> list[dict[str, Any]] | None:
    """Dify's ``metadata_condition`` as our list-form filter (``None``: no filter)."""
    if condition is None or not condition.conditions:
        return None
    logical = (condition.logical_operator or "and").strip().lower()
    if logical not in ("and", "or"):
        raise UnsupportedCondition(f"logical_operator {condition.logical_operator!r} is not supported; use 'and'")
    if logical == "or" and len(condition.conditions) > 1:
        raise UnsupportedCondition("logical_operator 'or' across several conditions is not supported; use 'and'")
    out = []
    for cond in condition.conditions:
        names = [cond.name] if isinstance(cond.name, str) else list(cond.name)
        if len(names) != 1 or not names[0]:
            raise UnsupportedCondition(f"a condition names one metadata field, got {cond.name!r}")
        operator = cond.comparison_operator.strip()
        ours = OPERATORS.get(operator.lower())
        if ours is None:
            raise UnsupportedCondition(f"comparison_operator {operator!r} (on {names[0]!r}) is not supported; supported: {', '.join(OPERATORS)}")
        value = cond.value
        if ours in ("in", "nin"):
            if isinstance(value, str):  # Dify's typed form "a, b": the items are the text between commas, trimmed
                value = [item.strip() for item in value.split(",")]
            elif not isinstance(value, list):
                raise UnsupportedCondition(f"comparison_operator {operator!r} needs a list or a comma-separated string")
            # a JSON list is taken as sent: " alpha " stays " alpha ", as `is` keeps it
        elif value is None or isinstance(value, (list, dict)):
            raise UnsupportedCondition(f"comparison_operator {operator!r} on {names[0]!r} needs one value, got {value!r}")
        elif operator.lower() in TIMES:
            value = _number(value)
            if isinstance(value, (str, bool)):
                raise UnsupportedCondition(f"comparison_operator {operator!r} takes Unix seconds, got {cond.value!r}")
        elif operator in NUMERIC or ours in ("gt", "lt", "gte", "lte"):
            value = _number(value)
            if isinstance(value, (str, bool)):  # Dify's number operators; text has 'is' / 'is not'
                raise UnsupportedCondition(
                    f"comparison_operator {operator!r} on {names[0]!r} compares numbers, got {cond.value!r};"
                    " use 'is' / 'is not' for text"
                )
        out.append({"field": names[0], "op": ours, "value": value})
    return out


def record(snippet: Mapping[str, Any], score: float, library_name: str) -> dict[str, Any]:
    """One Dify record: non-empty content and title, metadata an object with ``document_id``."""
    metadata = {k: v for k, v in (snippet.get("metadata") or {}).items() if k not in RESERVED_METADATA}
    metadata.update(
        document_id=snippet["doc_id"], chunk_id=snippet["chunk_id"], source_locator=snippet["source_locator"],
        library=library_name, version=snippet.get("version"),
    )
    for key in EXPANSION_KEYS:  # the child stays the content; its parent/window goes along for the prompt
        if key in snippet:
            metadata[key] = snippet[key]
    return {"content": snippet["text"], "score": score, "title": snippet.get("title") or snippet["doc_id"], "metadata": metadata}


def records(snippets: Sequence[Mapping[str, Any]], best: float, *, top_k: int, threshold: float, library_name: str) -> list[dict[str, Any]]:
    out = []
    for snippet in snippets:
        if not str(snippet.get("text", "")).strip():
            continue
        fused = float(snippet.get("scores", {}).get("fused", 0.0))
        score = round(min(1.0, max(0.0, fused / best)), 6) if best > 0 else 0.0
        if score >= threshold:
            out.append(record(snippet, score, library_name))
    out.sort(key=lambda r: -r["score"])  # stable: equal scores keep the retrieval order
    return out[:top_k]
