"""Finding the forms of a set of terms in a text (pure): what the security gate, Adaptive-RAG's
entity count and the graph's mention finder compare with.

**The normal form** (:func:`normalize`): NFKC (full-width ``ＡＣＭＥ`` is ``acme``, half-width kana
are kana), case-folded, invisible format characters (zero-width spaces, soft hyphens) removed,
runs of spaces, ``- _ . · ・`` one space, and no space next to a CJK character (``红隼 机器人`` is
``红隼机器人``, ``ケストレル・ロボティクス`` is ``ケストレルロボティクス``). A form whose end is a
letter or digit of an alphabetic script must end a word there: ``Acme`` matches ``Acme's``,
``ACME-led`` and ``Acme的营收`` but not ``Acmeville`` or ``Acme2``. CJK forms match anywhere
(Chinese and Japanese have no word boundaries): ``艾克米`` matches ``艾克米公司``.

**Lookalikes** (``TermMatcher(..., lookalikes=True)``, the gate's): both the text and the forms
are first folded to their :func:`~ragspine.security.fold.skeleton` (Cyrillic ``О`` in ``Оsprey``
is ``o``, mathematical and full-width letters are plain, zero-width characters go), and a form
is also found **spelled out** — in the text's :func:`~ragspine.security.fold.compact` form,
separators between its letters dropped (``O-s-p-r-e-y``, ``O.s.p.r.e.y``, ``O s p r e y``,
``Osp_rey``, ``KestrelJapan``, ``红*隼*日*本``) — under three rules that keep short forms and
ordinary phrases apart:

1. only a form of at least :data:`MIN_SPELLED` letters or digits (:data:`MIN_SPELLED_CJK` when
   it is all CJK) is looked for spelled out: ``US`` is never found in ``u-s-e-r``;
2. the spelled-out span starts and ends at a word boundary, as a form does: ``Acme`` is not
   found in ``pac-me``, and a word spelled letter by letter is one word (``a-c-m-e-s`` is not
   ``Acme``, ``u-s-e-r`` not ``US``), while ``O-s-p-r-e-y-led`` is ``Osprey`` as ``Osprey-led``
   is;
3. a gap of spaces alone inside the span joins two single letters (letter spacing:
   ``O s p r e y``) or falls where the form itself has a break (``Kestrel Japan`` in
   ``K-e-s-t-r-e-l Japan``); other separators (``- _ . / * ,`` ...) join anything. So ``a CME
   contract`` never names ``Acme``, and ``Os prey`` — ordinary words split at a space — is not
   read as ``Osprey`` either (list such a form when it matters).
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Mapping, Sequence

from ragspine.security.fold import compact, skeleton

__all__ = ["MIN_SPELLED", "MIN_SPELLED_CJK", "TermMatcher", "normalize"]

#: The fewest letters or digits a form needs to be found spelled out (rule 1).
MIN_SPELLED = 4
#: The same for a form written in CJK characters only (no word boundaries to protect).
MIN_SPELLED_CJK = 2

_SEPARATORS = re.compile(r"[\s\-_.\u00b7\u30fb\u2027\u2010-\u2015\u2212]+")
_CJK = r"\u2e80-\u2fff\u3000-\u303f\u3040-\u30ff\u3100-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef"
_SPACE_NEAR_CJK = re.compile(rf" ?([{_CJK}]) ?")
_CJK_ONLY = re.compile(rf"[{_CJK}]+")
#: A letter or digit outside the CJK ranges: what a form ending in such a character must not touch.
_WORD = rf"[^\W_{_CJK}]"


def normalize(text: str) -> str:
    """The form the matcher compares (see the module docstring)."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = "".join(ch for ch in text if unicodedata.category(ch) != "Cf")  # zero-width spaces, soft hyphens
    text = _SEPARATORS.sub(" ", text).strip()
    return _SPACE_NEAR_CJK.sub(r"\1", text)


@lru_cache(maxsize=8192)
def _is_word_char(ch: str) -> bool:
    return re.fullmatch(_WORD, ch) is not None


@lru_cache(maxsize=8192)
def _is_separator(ch: str) -> bool:
    """A character :func:`~ragspine.security.fold.compact` drops (of a skeleton text)."""
    return not compact(ch)


def _pattern(form: str) -> re.Pattern[str]:
    body = re.escape(form)
    if _is_word_char(form[0]):
        body = rf"(?<!{_WORD})" + body
    if _is_word_char(form[-1]):
        body += rf"(?!{_WORD})"
    return re.compile(body)


class _Spelled:
    """A skeleton text without its separators, with, for each kept character, its place in the
    text and the letters of the run (between separators) it belongs to."""

    def __init__(self, text: str) -> None:
        self.text = text
        kept: list[str] = []
        self.at: list[int] = []
        self.run: list[int] = []
        start = 0
        for i, ch in enumerate(text):
            if _is_separator(ch):
                continue
            if self.at and self.at[-1] != i - 1:  # a new run after a gap
                self._close(start)
                start = len(kept)
            kept.append(ch)
            self.at.append(i)
        self._close(start)
        self.compact = "".join(kept)

    def _close(self, start: int) -> None:
        letters = sum(1 for i in self.at[start:] if self.text[i].isalnum())
        self.run += [letters] * (len(self.at) - start)

    def finds(self, form: _SpelledForm) -> bool:
        """Whether ``form`` occurs here under the module docstring's rules 2 and 3."""
        start = self.compact.find(form.compact)
        while start >= 0:
            if self._fits(start, form):
                return True
            start = self.compact.find(form.compact, start + 1)
        return False

    def _fits(self, start: int, form: _SpelledForm) -> bool:
        end = start + len(form.compact) - 1
        if self._continues(start - 1, start) or self._continues(end, end + 1):
            return False
        for k in range(1, len(form.compact)):
            i = start + k - 1
            if self._spaced(i) and k not in form.breaks and not (self.run[i] == 1 and self.run[i + 1] == 1):
                return False
        return True

    def _spaced(self, i: int) -> bool:
        """Whether kept characters ``i`` and ``i + 1`` are apart by spaces alone."""
        left, right = self.at[i], self.at[i + 1]
        return right > left + 1 and self.text[left + 1:right].isspace()

    def _continues(self, i: int, j: int) -> bool:
        """Whether kept characters ``i`` and ``j = i + 1`` belong to one word (rule 2): both
        letters or digits of an alphabetic script, and side by side or two single letters
        joined by a separator other than spaces (``u-s-e-r`` is one word)."""
        if i < 0 or j >= len(self.at) or not (_is_word_char(self.compact[i]) and _is_word_char(self.compact[j])):
            return False
        if self.at[j] == self.at[i] + 1:
            return True
        return not self._spaced(i) and self.run[i] == 1 and self.run[j] == 1


class _SpelledForm:
    """A form as it is looked for spelled out: its compact text and where its own breaks fall."""

    def __init__(self, form: str) -> None:
        spelled = _Spelled(skeleton(form))
        self.compact = spelled.compact
        self.breaks = frozenset(k for k in range(1, len(spelled.at)) if spelled.at[k] != spelled.at[k - 1] + 1)

    @staticmethod
    def of(form: str) -> _SpelledForm | None:
        """The spelled-out form of ``form``, or ``None`` when it is too short (rule 1)."""
        spelled = _SpelledForm(form)
        letters = sum(1 for ch in spelled.compact if ch.isalnum())
        short = MIN_SPELLED_CJK if _CJK_ONLY.fullmatch(spelled.compact) else MIN_SPELLED
        return spelled if letters >= short else None


class TermMatcher:
    """Finds the terms of ``terms`` (``{key: [forms]}``) a text names, by the rules of the
    module docstring (the key is a form too); ``lookalikes``: fold confusables and find forms
    spelled out too (the security gate's matching)."""

    def __init__(self, terms: Mapping[str, Sequence[str]], *, lookalikes: bool = False) -> None:
        self.lookalikes = lookalikes
        patterns: list[tuple[str, str, str, re.Pattern[str]]] = []
        spelled: list[tuple[int, str, str, _SpelledForm]] = []
        for key, forms in terms.items():
            for form in dict.fromkeys([key, *forms]):
                folded = self._fold(form)
                if folded:
                    patterns.append((folded, key, form, _pattern(folded)))
                    found = _SpelledForm.of(form) if lookalikes else None
                    if found is not None:
                        spelled.append((len(folded), key, form, found))
        patterns.sort(key=lambda p: (-len(p[0]), p[1], p[2]))  # the longest form is the one reported
        spelled.sort(key=lambda p: (-p[0], p[1], p[2]))
        self._patterns = [(key, form, folded, pattern) for folded, key, form, pattern in patterns]
        self._spelled = [(key, form, found) for _, key, form, found in spelled]
        self.keys = tuple(sorted(terms))

    def _fold(self, text: str) -> str:
        return normalize(skeleton(text) if self.lookalikes else text)

    def _views(self, text: str) -> tuple[str, _Spelled | None]:
        """``text`` as the forms are compared as written, and (with lookalikes) spelled out."""
        if not self.lookalikes:
            return normalize(text), None
        shape = skeleton(text)
        return normalize(shape), _Spelled(shape) if self._spelled else None

    def first(self, text: str) -> tuple[str, str] | None:
        """``(key, form)`` of the longest form ``text`` names (as written, then spelled out), else ``None``."""
        folded, spelled = self._views(text)
        for key, form, literal, pattern in self._patterns:
            if literal in folded and pattern.search(folded):  # the substring test first: a fast C scan
                return key, form
        if spelled is not None:
            for key, form, found in self._spelled:
                if spelled.finds(found):
                    return key, form
        return None

    def keys_in(self, text: str) -> list[str]:
        """Every key ``text`` names, sorted."""
        folded, spelled = self._views(text)
        keys = {key for key, _, literal, pattern in self._patterns if literal in folded and pattern.search(folded)}
        if spelled is not None:
            keys |= {key for key, _, found in self._spelled if key not in keys and spelled.finds(found)}
        return sorted(keys)
