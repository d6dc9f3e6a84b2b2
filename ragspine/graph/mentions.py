"""Which glossary entities a text names: exact forms, found deterministically.

A text and the forms are compared in the security gate's normal form
(:func:`ragspine.security.gate.normalize`: NFKC, case folded, separators one space, none next to
a CJK character), so ``ＫＳＴＲ`` is ``kstr`` and ``ケストレル ・ ジャパン`` is ``ケストレルジャパン``.
Unlike the gate's :class:`~ragspine.security.gate.TermMatcher`, which reports every key any form
names (what a refusal needs), the scan here is leftmost-longest and non-overlapping — what a
mention is — so ``Kestrel China`` names ``KESTREL_CN`` only, not also ``KESTREL``. A form that starts or ends with a letter or digit of
an alphabetic script must start or end a word there (``Kestrel`` is not in ``Kestrelville``);
a CJK form matches anywhere (Chinese and Japanese have no word boundaries). Codes and keys are
forms too. No model, no fuzzy matching: a misspelling names nothing.
"""

from __future__ import annotations

import re

from ragspine.security.gate import normalize
from ragspine.structured.glossary import Glossary

__all__ = ["EntityMatcher"]

_CJK = r"\u2e80-\u2fff\u3000-\u303f\u3040-\u30ff\u3100-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef"
_WORD = rf"[^\W_{_CJK}]"


def _pattern(form: str) -> str:
    body = re.escape(form)
    if re.fullmatch(_WORD, form[0]):
        body = rf"(?<!{_WORD})" + body
    if re.fullmatch(_WORD, form[-1]):
        body += rf"(?!{_WORD})"
    return body


class EntityMatcher:
    """The entity keys of ``glossary`` a text names (see the module docstring)."""

    def __init__(self, glossary: Glossary) -> None:
        self.glossary = glossary
        self._key_of: dict[str, str] = {}
        for key, term in glossary.terms["entities"].items():
            for form in term.forms:
                folded = normalize(form)
                if folded and folded not in self._key_of:
                    self._key_of[folded] = key
        ordered = sorted(self._key_of, key=lambda f: (-len(f), f))  # the longest form wins at a position
        self._regex = re.compile("|".join(f"({_pattern(f)})" for f in ordered)) if ordered else None
        self._forms = ordered

    def keys_in(self, text: str) -> list[str]:
        """Every entity key ``text`` names, sorted."""
        if self._regex is None or not isinstance(text, str):
            return []
        keys = {self._key_of[self._forms[m.lastindex - 1]] for m in self._regex.finditer(normalize(text)) if m.lastindex}
        return sorted(keys)
