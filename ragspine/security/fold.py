"""Lookalike folding: the one normalisation labels and deny-list matching compare through (pure).

:func:`skeleton` is what a text *looks like*: NFKC (full-width and compatibility forms to their
plain letters), format characters removed (zero-width spaces and joiners, soft hyphens, bidi
marks), case-folded, and every character whose Unicode confusable skeleton is ASCII letters or
digits replaced by it (Cyrillic ``Е`` and ``О``, Greek ``Ο``, mathematical alphanumerics ...;
``data/confusables_ascii.tsv``, derived from Unicode's ``confusables.txt``, UTS #39). So
``RESTRICTED`` followed by a zero-width space, ``ＲＥＳＴＲＩＣＴＥＤ`` and ``RЕSTRICTED`` with a
Cyrillic Е all have the skeleton ``restricted``.

:func:`compact` is the skeleton without separators between letters (spaces, hyphens, dots,
underscores, middle dots): ``O-s-p-r-e-y`` and ``Оsprey`` both compact to ``osprey``.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from importlib import resources

__all__ = ["compact", "skeleton"]

_SEPARATORS = re.compile(r"[\s\-_.,'’·・‧‐-―−/\\|*+~]+")


@lru_cache(maxsize=1)
def _table() -> dict[int, str]:
    text = resources.files("ragspine.security").joinpath("data/confusables_ascii.tsv").read_text(encoding="utf-8")
    table: dict[int, str] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            code, _, target = line.partition("\t")
            table[int(code, 16)] = target.lower()
    return table


def skeleton(text: str) -> str:
    """What ``text`` looks like (see the module docstring)."""
    text = unicodedata.normalize("NFKC", text)
    text = "".join(ch for ch in text if unicodedata.category(ch) != "Cf")
    return text.translate(_capitals()).casefold().translate(_table())


@lru_cache(maxsize=1)
def _capitals() -> dict[int, str]:
    """The confusables whose lower case is none (Cyrillic К, Т, М, Н, В and Greek Κ, Τ, Μ look
    Latin only as capitals): folded before case-folding would lose them. Others (Cyrillic І)
    fold by their lower case, as the plain letter does (``I`` is ``i``)."""
    table = _table()
    return {code: target for code, target in table.items() if chr(code).casefold().translate(table) == chr(code).casefold()
            and chr(code).casefold() != chr(code)}


def compact(text: str) -> str:
    """:func:`skeleton` with every separator removed (``O-s-p-r-e-y`` → ``osprey``)."""
    return _SEPARATORS.sub("", skeleton(text))
