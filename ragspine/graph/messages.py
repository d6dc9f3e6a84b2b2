"""The graph utilities' sentences in English, Chinese and Japanese (:func:`say`).

One template table per language, the same keys in each (a test checks it), filled with
``str.format``: labels, amounts and citations come in already written in that language, so a
template only adds the sentence around them. The English sentences are the ones the utilities
have always answered with.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MESSAGES", "say"]

MESSAGES: dict[str, dict[str, str]] = {
    "en": {
        "cite": "({doc}, {locator})",
        "join": "; ",
        "list": ", ",
        "and": " and ",
        "lines": " ",
        "where": " ({channel})",
        "no_subsidiaries": "{name} has no subsidiaries in the relation graph: there is nothing to roll up.",
        "period_spans_differ": ("Not rolled up: for {name}'s subsidiaries this period is not one span of time (their fiscal calendars"
                                " differ); ask for a calendar period."),
        "incomplete": "Not rolled up: no recorded {what} for {names}. The graph utilities never estimate a missing member.",
        "units_differ": "Not rolled up: {name}'s subsidiaries report {what} in different units ({units}), and nothing here converts them.",
        "not_additive": "Not rolled up: {what} is a share ({unit}), which does not add up across entities.",
        "member": "{label} {amount} {cite}",
        "rolled_up": "{name} {what} for {period}{where}: {total}, the sum of its {n} subsidiaries' stored values: {parts}.",
        "no_peers": "{name} has no peers in the relation graph (no parent with other subsidiaries).",
        "row": "{label}: {amount} {cite}",
        "row_missing": "{label}: no recorded value",
        "comparable": "comparable (one unit, one span)",
        "not_comparable": "not comparable (fewer than two found, different units or spans)",
        "peers": "{what} of {parent}'s subsidiaries: {rows} — {verdict}.",
        "not_derived": "{label} is not derived from other metrics in the relation graph.",
        "derived_from": "{label} is derived from {inputs}{cite}.",
        "derived_cite": " ({doc}, {locator})",
        "step": "{label}: {amount} {cite}.",
        "step_missing": "{label}: no recorded value.",
    },
    "zh": {
        "cite": "（{doc}，{locator}）",
        "join": "；",
        "list": "、",
        "and": "和",
        "lines": "",
        "where": "（{channel}）",
        "no_subsidiaries": "{name}在关系图中没有子公司：没有可汇总的内容。",
        "period_spans_differ": "未汇总：对{name}的各子公司而言，该期间不是同一段时间（它们的财年不同）；请改问自然期间。",
        "incomplete": "未汇总：{names}没有已记录的{what}。图工具从不估算缺失的成员。",
        "units_differ": "未汇总：{name}的各子公司以不同单位（{units}）报告{what}，此处不做换算。",
        "not_additive": "未汇总：{what}是比率（{unit}），不能跨主体相加。",
        "member": "{label}{amount}{cite}",
        "rolled_up": "{name}{period}{where}的{what}为{total}，即其{n}家子公司已存储数值之和：{parts}。",
        "no_peers": "{name}在关系图中没有同级公司（没有拥有其他子公司的母公司）。",
        "row": "{label}：{amount}{cite}",
        "row_missing": "{label}：无记录值",
        "comparable": "可比（同一单位、同一段时间）",
        "not_comparable": "不可比（找到的不足两个，或单位、时间段不同）",
        "peers": "{parent}各子公司的{what}：{rows}——{verdict}。",
        "not_derived": "在关系图中，{label}不由其他指标推导。",
        "derived_from": "{label}由{inputs}推导{cite}。",
        "derived_cite": "（{doc}，{locator}）",
        "step": "{label}：{amount}{cite}。",
        "step_missing": "{label}：无记录值。",
    },
    "ja": {
        "cite": "（{doc}、{locator}）",
        "join": "；",
        "list": "、",
        "and": "と",
        "lines": "",
        "where": "（{channel}）",
        "no_subsidiaries": "{name}には関係グラフ上の子会社がありません：合算するものはありません。",
        "period_spans_differ": "合算していません：{name}の子会社にとって、この期間は同じ期間ではありません"
                           "（会計年度が異なります）。暦年の期間で尋ねてください。",
        "incomplete": "合算していません：{names}の{what}の記録がありません。グラフ機能は欠けているメンバーを推定しません。",
        "units_differ": "合算していません：{name}の子会社は{what}を異なる単位（{units}）で報告しており、ここでは換算しません。",
        "not_additive": "合算していません：{what}は比率（{unit}）であり、事業体をまたいで合算できません。",
        "member": "{label} {amount}{cite}",
        "rolled_up": "{name}の{period}{where}の{what}は{total}で、子会社{n}社の保存された値の合計です：{parts}。",
        "no_peers": "{name}には関係グラフ上の兄弟会社がありません（他の子会社を持つ親会社がありません）。",
        "row": "{label}：{amount}{cite}",
        "row_missing": "{label}：記録なし",
        "comparable": "比較可能（同じ単位、同じ期間）",
        "not_comparable": "比較不可（見つかった値が二つ未満、または単位や期間が異なる）",
        "peers": "{parent}の子会社の{what}：{rows}――{verdict}。",
        "not_derived": "関係グラフ上、{label}は他の指標から導出されません。",
        "derived_from": "{label}は{inputs}から導出されます{cite}。",
        "derived_cite": "（{doc}、{locator}）",
        "step": "{label}：{amount}{cite}。",
        "step_missing": "{label}：記録なし。",
    },
}


def say(language: str, key: str, **fields: Any) -> str:
    """The ``key`` sentence in ``language`` (English for any other), filled with ``fields``."""
    return MESSAGES.get(language, MESSAGES["en"])[key].format(**fields)
