"""``MetricResult``: exactly one of ``found``, ``not_found`` or ``unrecognized_param`` — and the
guarantee that a failed lookup carries no number.

A ``not_found`` result is one fixed refusal per language; an ``unrecognized_param`` result
names the parameters (metric, entity, period, channel, as_of) it could not read and may list
glossary suggestions. Neither echoes the caller's input. The guarantee is enforced where the
value is built, not by convention: constructing a non-``found`` result whose text, parameter
names or suggestions hold any numeral (:func:`has_numeral`: ASCII and full-width digits, any
other Unicode digit, CJK numerals such as 三 or 万, Roman numerals, fractions), or that carries
any fact field, raises ``ValueError``. Suggestions are filtered through :func:`has_numeral`
before they get there, so the error can only mean a bug.
"""

from __future__ import annotations

import unicodedata
from dataclasses import asdict, dataclass
from typing import Any, Mapping, Sequence

FOUND, NOT_FOUND, UNRECOGNIZED = "found", "not_found", "unrecognized_param"
STATUSES = (FOUND, NOT_FOUND, UNRECOGNIZED)
PARAMS = ("metric", "entity", "period", "channel", "as_of")
LANGUAGES = ("en", "zh", "ja")

#: The one refusal of a failed lookup, per language (no numeral, no echo of the input).
NOT_FOUND_TEXT = {
    "en": "No recorded value matches this metric, entity, period and channel. The structured channel does not estimate numbers.",
    "zh": "没有与该指标、主体、期间和渠道相符的已登记数值。结构化通道不会估算数字。",
    "ja": "この指標・対象・期間・チャネルに該当する登録済みの数値はありません。構造化チャネルは数値を推定しません。",
}
_PARAM_NAMES = {
    "en": {"metric": "metric", "entity": "entity", "period": "period", "channel": "channel", "as_of": "as-of date"},
    "zh": {"metric": "指标", "entity": "主体", "period": "期间", "channel": "渠道", "as_of": "基准日期"},
    "ja": {"metric": "指標", "entity": "対象", "period": "期間", "channel": "チャネル", "as_of": "基準日"},
}
_UNRECOGNIZED = {
    "en": ("Not recognized: the {names} given, so nothing was looked up.",
           " Use the controlled glossary's terms.",
           " Did you mean: {options}?",
           " A period is a calendar year, quarter or month, or a fiscal year or quarter;"
           " a relative period such as last quarter needs an as-of date.",
           " The as-of date is an ISO date (year, month, day)."),
    "zh": ("无法识别所给的{names}，因此未进行查询。",
           "请使用受控词表中的术语。",
           "您是否想查：{options}？",
           "期间应为日历年、季度或月份，或财年及财季；上季度之类的相对期间需要给出基准日期。",
           "基准日期须为标准日期（年、月、日）。"),
    "ja": ("指定された{names}を認識できないため、検索していません。",
           "統制語彙の用語を使ってください。",
           "候補：{options}。",
           "期間は暦年・クォーター・月、または会計年度で指定してください。前期のような相対期間には基準日が必要です。",
           "基準日はISO形式の日付（年・月・日）で指定してください。"),
}
_SEPARATOR = {"en": ", ", "zh": "、", "ja": "、"}
_NAMED = {"en": '{name} "{words}"', "zh": "{name}（{words}）", "ja": "{name}（{words}）"}
_AMBIGUOUS = {
    "en": " The question names more than one {names}; ask about one at a time.",
    "zh": "问题中提到了多个{names}，请分开提问。",
    "ja": "質問に複数の{names}が含まれています。別々に質問してください。",
}


def has_numeral(text: str) -> bool:
    """Whether ``text`` holds any character Unicode gives a numeric value (``0``, ``０``, ``三``,
    ``万``, ``Ⅲ``, ``½``, ...)."""
    return any(unicodedata.numeric(ch, None) is not None for ch in text)


@dataclass(frozen=True)
class MetricResult:
    """The outcome of :meth:`~ragspine.structured.channel.StructuredChannel.query_metric`.

    ``text`` is what to show: the rebuilt numeric prose (``found``) or the refusal. The fact
    fields are set only when ``found``: canonical keys, the stored ``value`` (exact decimal
    text) and ``unit``, and the provenance ``source_doc_id`` / ``source_locator`` /
    ``valid_as_of``.
    """

    status: str
    text: str
    language: str = "en"
    metric: str = ""
    entity: str = ""
    period: str = ""
    channel: str = ""
    value: str = ""
    unit: str = ""
    source_doc_id: str = ""
    source_locator: str = ""
    valid_as_of: str = ""
    params: tuple[str, ...] = ()
    suggestions: tuple[tuple[str, tuple[str, ...]], ...] = ()
    #: (param, the question's own words for it): a longer term a glossary form sat inside
    named: tuple[tuple[str, str], ...] = ()
    #: the params the question named more than one of (two metrics, entities, periods ...)
    ambiguous: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {', '.join(STATUSES)}, got {self.status!r}")
        if self.status == FOUND:
            if not (self.value and self.source_doc_id and self.source_locator and self.valid_as_of):
                raise ValueError("a found result carries its value, source_doc_id, source_locator and valid_as_of")
            return
        carried = [name for name in _FACT_FIELDS if getattr(self, name)]
        if carried:
            raise ValueError(f"a {self.status} result carries no fact field, got {carried[0]}")
        if any(p not in PARAMS for p in self.params) or (self.status == UNRECOGNIZED) != bool(self.params):
            raise ValueError(f"params must name the unrecognized inputs ({', '.join(PARAMS)}), got {self.params!r}")
        if any(p not in self.params for p in (*self.ambiguous, *(p for p, _ in self.named))):
            raise ValueError("named and ambiguous inputs are among the params")
        texts = [self.text, self.language, *self.params, *(s for _, options in self.suggestions for s in (_, *options)),
                 *(words for _, words in self.named)]
        if any(has_numeral(t) for t in texts):
            raise ValueError(f"a {self.status} result never carries a numeral")

    @property
    def found(self) -> bool:
        return self.status == FOUND

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["params"] = list(self.params)
        out["suggestions"] = {param: list(options) for param, options in self.suggestions}
        out["named"] = dict(self.named)
        out["ambiguous"] = list(self.ambiguous)
        return out


_FACT_FIELDS = ("metric", "entity", "period", "channel", "value", "unit", "source_doc_id", "source_locator", "valid_as_of")


def not_found(language: str = "en") -> MetricResult:
    """The fixed refusal: identical whatever failed (an absent key, a RESTRICTED fact, ...)."""
    language = language if language in LANGUAGES else "en"
    return MetricResult(NOT_FOUND, NOT_FOUND_TEXT[language], language)


def unrecognized(
    params: Sequence[str], language: str = "en", suggestions: Mapping[str, Sequence[str]] | None = None, *,
    named: Mapping[str, str] | None = None, ambiguous: Sequence[str] = (),
) -> MetricResult:
    """Names the inputs that are not recognized (never their values); suggestions holding a
    numeral are dropped. ``named``: for a param, the question's own words the agent read there
    (a longer term such as ``cost of sales``), shown unless they hold a numeral; ``ambiguous``:
    the params the question named more than one of."""
    if not params or any(p not in PARAMS for p in params):
        raise ValueError(f"params must name the unrecognized inputs ({', '.join(PARAMS)}), got {params!r}")
    language = language if language in LANGUAGES else "en"
    head, glossary_line, options_line, period_line, as_of_line = _UNRECOGNIZED[language]
    shown = {p: w for p, w in (named or {}).items() if p in params and w and len(w) <= 80 and not has_numeral(w)}
    names = _SEPARATOR[language].join(
        _NAMED[language].format(name=_PARAM_NAMES[language][p], words=shown[p]) if p in shown else _PARAM_NAMES[language][p]
        for p in params
    )
    kept = tuple((p, opts) for p in params if (opts := tuple(o for o in (suggestions or {}).get(p, ()) if not has_numeral(o))))
    twice = tuple(p for p in params if p in ambiguous)
    text = head.format(names=names)
    if twice:
        text += _AMBIGUOUS[language].format(names=_SEPARATOR[language].join(_PARAM_NAMES[language][p] for p in twice))
    if {"metric", "entity", "channel"} & set(params):
        text += glossary_line
    if kept:
        text += options_line.format(options=_SEPARATOR[language].join(o for _, opts in kept for o in opts))
    if "period" in params and "period" not in twice:
        text += period_line
    if "as_of" in params:
        text += as_of_line
    return MetricResult(UNRECOGNIZED, text, language, params=tuple(params), suggestions=kept,
                        named=tuple(shown.items()), ambiguous=twice)
