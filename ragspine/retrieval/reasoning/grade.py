"""The corrective loop's grade: deterministic, from the answer's own snippets.

Two signals of the top :data:`GRADE_DEPTH` snippets (what a prompt would lead with):

* **coverage** — the share of the question's content terms (the BM25 tokenizer's tokens: words,
  CJK unigrams and bigrams; stopwords of English, Chinese and Japanese left out) that occur in
  their titles and texts. An answer that shares few of the question's terms did not find its
  subject.
* **similarity** — the best dense-leg cosine among them (``scores["vector"]``), when the dense
  leg ran (hybrid/vector modes); BM25 scores are not comparable across queries and corpora, so
  economy mode has coverage alone.

The verdict is ``empty`` (no snippet), ``relevant`` (coverage at least the mode's
threshold — or, where the dense leg ran, similarity at least its threshold) or ``weak``.
The thresholds were calibrated on the dev sets (``scripts/bench.py --llm-calibrate``, README
"Corrective retrieval"): for each mode, the coverage (similarity) that 95 % of the answerable
queries whose gold passage is in the top 3 reach, rounded down to a multiple of 0.05 — not
tuned to any set's figures — and checked against the same queries asked of another set's
corpus (questions it cannot answer).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from ragspine.retrieval.lexical.tokenizer import tokenize
from ragspine.retrieval.query.decompose import STOPWORDS

__all__ = ["COVERAGE_THRESHOLD", "GRADE_DEPTH", "SIMILARITY_THRESHOLD", "Grade", "grade", "query_terms"]

#: Snippets the grade reads (the head of the answer).
GRADE_DEPTH = 3
#: Coverage at or above which an answer is relevant, per mode (``economy``: no dense leg ran).
COVERAGE_THRESHOLD = {"economy": 0.5, "hybrid": 0.5}
#: Dense-leg cosine at or above which an answer is relevant (hybrid/vector modes).
SIMILARITY_THRESHOLD = 0.5

#: CJK characters and pairs that carry no subject (particles, question words).
CJK_STOP = frozenset(
    "的 了 是 在 和 与 與 及 或 吗 嗎 呢 吧 啊 么 麼 什 哪 谁 誰 何 为 為 于 於 也 都 这 這 那 个 個 有 被 把 从 從 到 "
    "什么 什麼 为什 為什 哪个 哪個 哪些 如何 怎么 怎麼 怎样 怎樣 多少 是否 哪里 哪裡 哪一 "
    "の は が を に で と も か な へ や よ ね です ます でし した ですか 何 どの どこ いつ 誰 なぜ どう から まで より".split()
)


def query_terms(question: str) -> list[str]:
    """The question's distinct content terms, in order."""
    return [t for t in dict.fromkeys(tokenize(question)) if t not in STOPWORDS and t not in CJK_STOP]


@dataclass(frozen=True)
class Grade:
    verdict: str  # relevant | weak | empty
    coverage: float = 0.0
    similarity: float | None = None  # None: the dense leg did not run
    mode: str = "economy"

    @property
    def relevant(self) -> bool:
        return self.verdict == "relevant"

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"grade": self.verdict, "coverage": round(self.coverage, 3), "mode": self.mode}
        if self.similarity is not None:
            out["similarity"] = round(self.similarity, 3)
        return out


def grade(question: str, snippets: Sequence[dict[str, Any]]) -> Grade:
    """The grade of ``snippets`` as an answer to ``question`` (see the module docstring)."""
    head = list(snippets[:GRADE_DEPTH])
    if not head:
        return Grade("empty")
    terms = query_terms(question)
    seen: set[str] = set()
    for s in head:
        seen.update(tokenize(f"{s.get('title', '')}\n{s.get('text', '')}"))
    coverage = sum(t in seen for t in terms) / len(terms) if terms else 1.0
    vectors = [float(s.get("scores", {}).get("vector", 0.0)) for s in head]
    similarity = max(vectors) if any(v != 0.0 for v in vectors) else None
    mode = "economy" if similarity is None else "hybrid"
    ok = coverage >= COVERAGE_THRESHOLD[mode] or (similarity is not None and similarity >= SIMILARITY_THRESHOLD)
    return Grade("relevant" if ok else "weak", coverage, similarity, mode)
