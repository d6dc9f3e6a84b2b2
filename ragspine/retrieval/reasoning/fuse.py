"""Deterministic fusion of several searches' answers (sub-questions, the question first).

Each answer is already RESTRICTED-free (it left through the link exit), so fusing only ever
passes on a subset of what the searches returned. Snippets are keyed by ``(library_id,
chunk_id)``; rankings are fused with :func:`~ragspine.retrieval.fusion.rrf_fuse` and ordered by
``(-fused, key)`` (:func:`~ragspine.retrieval.fusion.sort_fused`), so the same answers always
fuse the same way. A fused snippet is the first answer's dict for its key with
``scores["fused"]`` the fused value; parent/window expansions are re-shared after fusing (each
block once, on the first snippet under it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from ragspine.retrieval.fusion import DEFAULT_RRF_K, rrf_fuse, sort_fused
from ragspine.retrieval.link.expansion import share_expansions
from ragspine.retrieval.request import Answer
from ragspine.retrieval.snippet import Snippet, with_fused

if TYPE_CHECKING:
    from ragspine.retrieval.vector.dense import DenseCoverage

__all__ = ["fuse_answers", "unshare_expansions"]


def unshare_expansions(snippets: list[Snippet]) -> list[Snippet]:
    """Copies of ``snippets`` where a snippet pointing at another's expansion
    (``prompt_text_in``) carries that ``prompt_text`` itself again."""
    by_chunk = {s["chunk_id"]: s for s in snippets if "prompt_text" in s}
    out = []
    for snippet in snippets:
        copy = snippet.copy()
        carrier = by_chunk.get(copy.pop("prompt_text_in", ""))
        if carrier is not None:
            copy["prompt_text"] = carrier["prompt_text"]
        elif "prompt_text_in" in snippet:
            copy["prompt_text_in"] = snippet["prompt_text_in"]
        out.append(copy)
    return out


def fuse_answers(answers: Sequence[Answer], *, top_k: int, rrf_k: int = DEFAULT_RRF_K) -> Answer:
    """One answer from ``answers`` (the first is the question's own, when searched)."""
    if len(answers) == 1:
        return answers[0]
    rankings: list[list[tuple[str, str]]] = []
    by_key: dict[tuple[str, str], Snippet] = {}
    incomplete: dict[str, DenseCoverage] = {}
    for answer in answers:
        ranking = []
        for snippet in unshare_expansions(answer.snippets):
            key = (str(snippet.get("library_id", "")), str(snippet["chunk_id"]))
            by_key.setdefault(key, snippet)
            ranking.append(key)
        rankings.append(ranking)
        incomplete.update(answer.dense_incomplete)
    out = []
    for key, fused in sort_fused(rrf_fuse(rankings, k=rrf_k))[:top_k]:
        snippet = by_key[key].copy()
        snippet["scores"] = with_fused(snippet, fused)
        out.append(snippet)
    return Answer(share_expansions(out), any(a.filters_dropped for a in answers), incomplete)
