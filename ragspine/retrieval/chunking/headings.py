"""Heading-line patterns of the layout-aware chunkers (pure regular expressions).

A heading pattern is one compiled ``re.MULTILINE`` expression ``^(?:alternative|...)``: each
match starts at the start of a heading line (before its indentation), and its first group
that took part in the match is the heading's text (:func:`heading_text`). Alternatives use
non-capturing groups except for that one. Lines end in ``\\n`` or ``\\r\\n`` alike (``\\r`` is
never part of a heading). The building blocks:

* :data:`MARKDOWN` — ``#`` .. ``######``, up to 3 spaces of indentation, a space, a title;
  the text is the title without the marks (nor a closing run of ``#``);
* :data:`NUMBERED` — ``1.``, ``1.2``, ``2.3.1`` (at least one dot), a space, a title that
  does not start with a digit, on a short line (:func:`short_line`); a single-level ``1.``
  line next to another list item is a list item, not a heading (:func:`in_a_list`);
* :data:`CHINESE` — ``一、标题``, ``（一）标题``, ``(一)`` on a short line;
* :func:`short_line` — a line whose title (after the prefix) has at most
  :data:`MAX_HEADING_CHARS` characters and does not end in a sentence terminator, a comma or a
  colon (a heading, not a sentence or a list item that goes on).
"""

from __future__ import annotations

import re

from ragspine.retrieval.chunking.chunking import SENTENCE_TERMINATORS

MAX_HEADING_CHARS = 80
SP = r"[ \t\u3000]"  # inline whitespace (the full-width space included)
CHINESE_NUMERALS = "〇零一二三四五六七八九十百千万两"
NUMERALS = "0-9０-９" + CHINESE_NUMERALS  # a character-class body
_NOT_END = "[^\\s" + re.escape(SENTENCE_TERMINATORS + ",，、:：") + "]"


def short_line(prefix: str, *, bare: bool = False) -> str:
    """A whole short line: indentation, ``prefix`` (a regex), a title; the group is the line
    without its indentation. ``bare``: the prefix alone is a heading too (``第一章``)."""
    title = SP + "*" + _NOT_END + "(?:[^\\n]{0," + str(MAX_HEADING_CHARS - 2) + "}" + _NOT_END + ")?"
    if bare:
        title = "(?:" + title + ")?"
    return SP + "*(" + prefix + title + ")" + SP + "*\\r?$"


MARKDOWN = " {0,3}#{1,6}" + SP + "+([^\\s#][^\\n]*?|#[^\\n]*?)(?:" + SP + "+#+)?" + SP + "*\\r?$"
NUMBERED = short_line("\\d{1,3}(?:(?:\\.\\d{1,3})+\\.?|\\.)(?=" + SP + "+[^\\s\\d])")
CHINESE = "|".join([
    short_line("[" + CHINESE_NUMERALS + "]+、"),
    short_line("[（(][" + CHINESE_NUMERALS + "]+[）)]", bare=True),
])


def heading_pattern(*alternatives: str) -> re.Pattern[str]:
    """The one pattern matching any of ``alternatives`` at a line start."""
    return re.compile("^(?:" + "|".join(alternatives) + ")", re.MULTILINE)


def heading_text(match: re.Match[str]) -> str:
    """The heading's text: the first group that matched (else the whole match), stripped."""
    return next((group for group in match.groups() if group is not None), match.group(0)).strip()


_LIST_ITEM = re.compile(SP + "*(?:\\d{1,3}[.)]|[-*+•])" + SP + "+\\S")
_SINGLE_LEVEL = re.compile(SP + "*\\d{1,3}\\." + SP)


def in_a_list(text: str, line_start: int) -> bool:
    """Whether the single-level numbered line at ``line_start`` (``1. Install``) is an item of
    a list — the line just before or just after it (no blank line between) is a list item
    too — rather than a heading. Multi-level numbers (``1.2``) are never list items here."""
    if not _SINGLE_LEVEL.match(text, line_start):
        return False
    prev_end = line_start - 1  # the "\n" ending the previous line
    if prev_end > 0:
        prev_start = text.rfind("\n", 0, prev_end) + 1
        if _LIST_ITEM.match(text, prev_start, prev_end):
            return True
    next_start = text.find("\n", line_start)
    return next_start >= 0 and bool(_LIST_ITEM.match(text, next_start + 1))


_FENCE_LINE = re.compile(r"^ {0,3}(`{3,}|~{3,})([^\n]*)$", re.MULTILINE)


def fenced_ranges(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of the closed Markdown code fences (``` or ~~~, closed by a bare run
    of the same character at least as long): a ``#`` line inside one is code, not a heading.
    An unclosed fence is ignored. Linear: one scan of the fence lines."""
    if "```" not in text and "~~~" not in text:
        return []
    ranges: list[tuple[int, int]] = []
    opener: re.Match[str] | None = None
    for line in _FENCE_LINE.finditer(text):
        if opener is None:
            opener = line
        elif line[1][0] == opener[1][0] and len(line[1]) >= len(opener[1]) and not line[2].strip():
            ranges.append((opener.start(), line.end()))
            opener = None
    return ranges
