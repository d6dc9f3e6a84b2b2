"""The prompts of the query-time seams and the pure readers of their answers.

Each prompt carries the user's question and nothing else — no snippet, no document text — so
no retrieved (let alone RESTRICTED) text can reach the model through them. Each reader
returns ``None`` for an answer it cannot use (the seam then degrades to the plain question
and reports the answer as malformed); what it returns is a probe, never evidence.
"""

from __future__ import annotations

import re

__all__ = [
    "MAX_PROBE_CHARS",
    "MAX_PASSAGE_CHARS",
    "adaptive_prompt",
    "decompose_prompt",
    "hyde_prompt",
    "read_adaptive",
    "read_lines",
    "read_passage",
    "read_question",
    "rewrite_prompt",
    "same_text",
    "step_back_prompt",
    "variants_prompt",
]

#: The longest generated query kept (a longer line is not a query).
MAX_PROBE_CHARS = 300
#: HyDE's passage is cut here (a probe needs a few sentences, not a page).
MAX_PASSAGE_CHARS = 1200

_BULLET = re.compile(r"^\s*(?:[-*\u2022\u30fb]+|\(?\d{1,2}[.)\u3001:\uff0e]|[a-zA-Z][.)]|(?:query|question|q)\s*\d*\s*[:\uff1a])\s*", re.I)
_LABEL = re.compile(r"^\s*(?:step[- ]back question|rewritten query|query|question|search query|passage|answer)\s*[:\uff1a]\s*", re.I)
_QUOTES = "\"'`\u201c\u201d\u2018\u2019\u300c\u300d\u300e\u300f"


def hyde_prompt(question: str) -> str:
    return (
        "Write a short passage of two or three sentences that would answer the question, in the question's language. "
        "It is only used to search a document collection.\n\n"
        f"Question: {question}\nPassage:"
    )


def variants_prompt(question: str, n: int) -> str:
    return (
        f"Write {n} different search queries for the question below, one per line, "
        "in the question's language, with no numbering and no explanation.\n\n"
        f"Question: {question}"
    )


def step_back_prompt(question: str) -> str:
    return (
        "Rewrite the question as one more general question about the background it depends on "
        "(a step-back question), in the question's language. Reply with that question only.\n\n"
        f"Question: {question}"
    )


def decompose_prompt(question: str, n: int) -> str:
    return (
        f"Split the question into at most {n} simpler, self-contained questions that together answer it, "
        "one per line, in the question's language, with no numbering. If it is already simple, repeat it alone.\n\n"
        f"Question: {question}"
    )


def adaptive_prompt(question: str) -> str:
    return (
        "Does answering the question need several separate searches (a comparison, several companies, "
        "several periods or several questions)? Reply with one word: SIMPLE or COMPLEX.\n\n"
        f"Question: {question}"
    )


def rewrite_prompt(question: str) -> str:
    return (
        "A search for the question found nothing relevant. Rewrite it as one search query with its key terms, "
        "in the question's language. Reply with the query only.\n\n"
        f"Question: {question}"
    )


def same_text(a: str, b: str) -> bool:
    """Equal up to case, spacing and final punctuation."""
    return _key(a) == _key(b)


def _key(text: str) -> str:
    return " ".join(text.casefold().split()).rstrip("?？.。!！")


def _clean(line: str) -> str:
    line = _LABEL.sub("", _BULLET.sub("", line)).strip()
    return line.strip(_QUOTES).strip()


def read_lines(answer: object, question: str, limit: int) -> list[str] | None:
    """Up to ``limit`` distinct queries, one per line, other than the question itself
    (bullets, numbering and quotes removed); ``None`` when there is none."""
    if not isinstance(answer, str):
        return None
    out: list[str] = []
    seen = {_key(question)}
    for raw in answer.splitlines():
        line = _clean(raw)
        if not line or len(line) > MAX_PROBE_CHARS or _key(line) in seen:
            continue
        seen.add(_key(line))
        out.append(line)
        if len(out) >= limit:
            break
    return out or None


def read_question(answer: object, question: str) -> str | None:
    """The answer's first line as one query; ``None`` when empty, too long or the question itself."""
    if not isinstance(answer, str):
        return None
    for raw in answer.splitlines():
        line = _clean(raw)
        if line:
            return None if len(line) > MAX_PROBE_CHARS or same_text(line, question) else line
    return None


def read_passage(answer: object) -> str | None:
    """HyDE's passage: the answer's text, spaces collapsed, cut at :data:`MAX_PASSAGE_CHARS`;
    ``None`` when it has fewer than three words or CJK characters."""
    if not isinstance(answer, str):
        return None
    text = " ".join(_LABEL.sub("", answer.strip()).split())[:MAX_PASSAGE_CHARS]
    words = re.findall(r"[^\W_]+", text)
    return text if len(words) >= 3 or len(re.findall(r"[\u3040-\u30ff\u4e00-\u9fff]", text)) >= 3 else None


def read_adaptive(answer: object) -> bool | None:
    """``True`` for COMPLEX, ``False`` for SIMPLE (the first of the two words), else ``None``."""
    if not isinstance(answer, str):
        return None
    match = re.search(r"\b(simple|complex)\b", answer, re.I)
    return None if match is None else match.group(1).lower() == "complex"
