"""The corrective loop's grade: deterministic, from the answer's own snippets and the user's question.

Two signals of the top :data:`GRADE_DEPTH` snippets (what a prompt would lead with):

* **coverage** — the share of the question's content terms (the BM25 tokenizer's tokens: words,
  CJK unigrams and bigrams; stopwords of English, Chinese and Japanese left out) that occur in
  their titles and texts. An answer that shares few of the question's terms did not find its
  subject.
* **similarity** — the best dense-leg cosine among them (``scores["vector"]``), when the dense
  leg ran. Reported in the trace, not used for the verdict: on the dev sets its 5th percentile
  over well-answered questions was 0.35 on xquad-en and 0.54 on nq-open, while the median of
  questions nq-open cannot answer was 0.35 — no one threshold is both safe and useful.

The verdict is ``empty`` (no snippet), ``relevant`` (coverage at least the mode's threshold:
``economy`` when no snippet has a dense score, else ``hybrid``) or ``weak``.

Calibration (``scripts/bench.py --llm-calibrate``, 300 seeded queries per set): for each set and
mode, the coverage that 95 % of the answerable queries whose gold passage is in the top 3
reach; the threshold is the largest multiple of 0.05 at or below every set's — a round figure,
not tuned to any set. Economy (xquad-en 0.50, nq-open 0.50, xquad-zh 0.53, drcd 0.66) → 0.5:
1–3 % of those queries graded weak, 26–98 % of another set's queries asked of the corpus.
Hybrid (xquad-en 0.43, nq-open 0.44) → 0.4: 2–3 % weak, 31–40 % of the foreign ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from ragspine.retrieval.lexical.tokenizer import tokenize
from ragspine.retrieval.query.decompose import STOPWORDS
from ragspine.retrieval.snippet import Snippet

__all__ = ["COVERAGE_THRESHOLD", "GRADE_DEPTH", "Grade", "grade", "query_terms"]

#: Snippets the grade reads (the head of the answer).
GRADE_DEPTH = 3
#: Coverage at or above which an answer is relevant, per mode (``economy``: no dense leg ran).
COVERAGE_THRESHOLD = {"economy": 0.5, "hybrid": 0.4}

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


def grade(question: str, snippets: Sequence[Snippet]) -> Grade:
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
    return Grade("relevant" if coverage >= COVERAGE_THRESHOLD[mode] else "weak", coverage, similarity, mode)
