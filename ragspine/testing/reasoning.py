"""A deterministic stand-in model for the query-time seams (tests, ``scripts/bench.py --llm``).

:func:`seam_of` tells which seam a prompt of :mod:`ragspine.retrieval.query.prompts` comes
from; :func:`scripted_answer` answers it from the question alone, without any model:

* ``hyde``: a "passage" made of the question's content words and, when given, a ``marker``
  (tests plant a unique token there to prove a passage never comes back as evidence);
* ``rag_fusion``: the content words, then the same words in reverse order, then the question
  lowercased (three variants);
* ``step_back``: "background of" and the first two content words;
* ``decompose``: the question split at " and ", "和", "与", "と" or ";" (or repeated alone);
* ``adaptive``: COMPLEX when the question compares (``compare``, ``vs``, 比较, 比較), else SIMPLE;
* ``rewrite``: the content words.

``scripted_provider()`` wraps it in a :class:`~ragspine.testing.llm.ScriptedLLMProvider`,
which records every prompt. It measures plumbing and cost, not a model's quality.
"""

from __future__ import annotations

import re

from ragspine.retrieval.query.decompose import keyword_query
from ragspine.testing.llm import ScriptedLLMProvider

__all__ = ["SEAM_OPENINGS", "question_of", "scripted_answer", "scripted_provider", "seam_of"]

#: The first words of each seam's prompt.
SEAM_OPENINGS = {
    "hyde": "Write a short passage",
    "rag_fusion": "Write ",
    "step_back": "Rewrite the question as one more general",
    "decompose": "Split the question",
    "adaptive": "Does answering the question",
    "rewrite": "A search for the question found nothing",
}


def seam_of(prompt: str) -> str:
    """The seam a prompt comes from (``other`` when none)."""
    for seam in ("hyde", "step_back", "decompose", "adaptive", "rewrite"):
        if prompt.startswith(SEAM_OPENINGS[seam]):
            return seam
    if prompt.startswith("Write ") and "search queries" in prompt.split("\n", 1)[0]:
        return "rag_fusion"
    return "other"


def question_of(prompt: str) -> str:
    """The text after the prompt's ``Question:`` label."""
    match = re.search(r"Question: (.*?)(?:\nPassage:)?$", prompt, re.S)
    return match.group(1).strip() if match else prompt


def scripted_answer(prompt: str, marker: str = "") -> str:
    """The deterministic answer to a seam's prompt (see the module docstring)."""
    seam, question = seam_of(prompt), question_of(prompt)
    words = keyword_query(question) or question
    if seam == "hyde":
        return f"{words}. {marker} This passage describes {words}.".replace("  ", " ")
    if seam == "rag_fusion":
        return "\n".join([words, " ".join(reversed(words.split())), question.lower()])
    if seam == "step_back":
        return "background of " + " ".join(words.split()[:2])
    if seam == "decompose":
        parts = [p.strip(" ,?？。") for p in re.split(r"\band\b|和|与|と|;", question) if p.strip(" ,?？。")]
        return "\n".join(parts if len(parts) > 1 else [question])
    if seam == "adaptive":
        return "COMPLEX" if re.search(r"compar|\bvs\b|比较|比較", question, re.I) else "SIMPLE"
    if seam == "rewrite":
        return words
    return ""


def scripted_provider(marker: str = "") -> ScriptedLLMProvider:
    """A recording provider answering every seam with :func:`scripted_answer`."""
    return ScriptedLLMProvider(lambda prompt: scripted_answer(prompt, marker))
