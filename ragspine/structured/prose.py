"""The numeric prose of a ``found`` answer, rebuilt by code from one stored fact (pure).

Nothing here reads a model's output: the sentence is a fixed template per language filled with
the fact's stored fields (its exact value text, unit, provenance) and the glossary's labels of
its keys. Every number in the sentence is therefore one the fact or the glossary holds.
"""

from __future__ import annotations

from ragspine.structured.base import TOTAL_CHANNEL, StoredFact
from ragspine.structured.calendar import parse_key
from ragspine.structured.converters import value_text
from ragspine.structured.glossary import Glossary

_ZH_QUARTERS = ("", "第一季度", "第二季度", "第三季度", "第四季度")
_EN_MONTHS = ("", "January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
              "November", "December")


def period_label(key: str, language: str = "en") -> str:
    """``2024Q3`` → ``Q3 2024`` / ``2024年第三季度`` / ``2024年第3四半期`` (a non-canonical key as is)."""
    parsed = parse_key(key)
    if parsed is None:
        return key
    kind, year, n = parsed
    if kind == "month":
        return f"{_EN_MONTHS[n]} {year}" if language not in ("zh", "ja") else f"{year}年{n}月"
    if kind == "year":
        return f"{year}年" if language in ("zh", "ja") else f"{year}"
    fiscal = kind.startswith("fy")
    if language == "zh":
        return (f"{year}财年" if fiscal else f"{year}年") + (_ZH_QUARTERS[n] if n else "")
    if language == "ja":
        return (f"{year}年度" if fiscal else f"{year}年") + (f"第{n}四半期" if n else "")
    quarter = f"Q{n} " if n else ""
    return f"{quarter}FY{year}" if fiscal else f"{quarter}{year}"


def found_prose(fact: StoredFact, glossary: Glossary, language: str = "en") -> str:
    """One sentence stating ``fact`` with its source, locator and as-of date, in ``language``."""
    entity = glossary.label("entities", fact.entity, language)
    metric = glossary.label("metrics", fact.metric, language)
    period = period_label(fact.period, language)
    unit = glossary.label("units", fact.unit, language) if fact.unit else ""
    value = value_text(fact.value)
    channel = "" if fact.channel == TOTAL_CHANNEL else glossary.label("channels", fact.channel, language)
    amount = f"{value} {unit}" if unit[:1].isascii() and unit[:1].isalpha() else f"{value}{unit}"
    if language == "zh":
        where = f"（{channel}）" if channel else ""
        return (f"{entity}{period}{where}的{metric}为{amount}"
                f"（来源：{fact.source_doc_id}，{fact.source_locator}；数据截至 {fact.valid_as_of}）。")
    if language == "ja":
        where = f"（{channel}）" if channel else ""
        return (f"{entity}の{period}{where}の{metric}は{amount}です"
                f"（出典：{fact.source_doc_id}、{fact.source_locator}、{fact.valid_as_of} 時点）。")
    where = f" ({channel})" if channel else ""
    return (f"{entity} {metric} for {period}{where}: {amount}"
            f" (source: {fact.source_doc_id}, {fact.source_locator}; valid as of {fact.valid_as_of}).")
