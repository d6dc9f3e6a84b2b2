"""The agent's fixed messages, per language (en, zh, ja): none holds a numeral.

Each is what an answer shows in place of something it will not state: a question the security
gate refused, generated prose whose citations did not resolve, no passage at all. They never
echo the question (which may hold a number or a refused name). ``tests`` check every one
against ``\\d``, full-width digits and every other Unicode numeral.
"""

from __future__ import annotations

GATE_REFUSAL = {
    "en": "Refused: the question names an entity this service does not answer about, so nothing was looked up.",
    "zh": "已拒绝：该问题涉及本服务不予回答的主体，因此未进行任何查询。",
    "ja": "お答えできません：この質問は本サービスが回答しない対象に言及しているため、検索していません。",
}
#: Generated prose whose citations did not resolve to this answer's snippets (or that stated a
#: number none of its cited snippets holds) is never shown.
CITATION_REFUSAL = {
    "en": "No answer is given: the generated text did not cite the retrieved passages it relied on.",
    "zh": "未给出回答：生成的文本没有正确引用其所依据的检索段落。",
    "ja": "回答を表示しません：生成された文章が根拠とした検索結果を正しく引用していません。",
}
NO_PASSAGE = {
    "en": "No passage in the searched libraries answers this question.",
    "zh": "所检索的资料库中没有回答该问题的段落。",
    "ja": "検索したライブラリにこの質問に答える記述はありません。",
}
#: The narrative half when the narrative search itself was refused (the retriever's own gate).
SEARCH_REFUSAL = {
    "en": "The passage search was refused, so no passage is cited.",
    "zh": "段落检索被拒绝，因此未引用任何段落。",
    "ja": "記述の検索が拒否されたため、引用はありません。",
}

#: Put before the passages of a *how much / how many* question that names no glossary metric:
#: the fact table was not asked, and the passages are what the documents say.
NO_FACT_MATCH = {
    "en": "No recorded fact matches this question (it names no metric of the glossary); the cited passages follow.",
    "zh": "没有与该问题相符的已登记数值（问题未提及词表中的指标）；以下是引用的段落。",
    "ja": "この質問に該当する登録済みの数値はありません（統制語彙の指標が含まれていません）。引用した記述を示します。",
}

ALL_MESSAGES = (GATE_REFUSAL, CITATION_REFUSAL, NO_PASSAGE, SEARCH_REFUSAL, NO_FACT_MATCH)


def message(table: dict[str, str], language: str) -> str:
    return table.get(language) or table["en"]
