"""The security gate: a deterministic refusal of queries that name a deny-listed entity.

It runs **before any retrieval** on the user's query and on every text generated from it
(RAG-Fusion variants, the step-back query, HyDE's passage, sub-questions, a corrective
rewrite): a refused text never reaches an index, and the answer lists what was refused. It
reads no model output to decide: the same text always gets the same decision.

**The deny list** (``RAGSPINE_SECURITY_DENYLIST``) is a YAML/JSON file in the structured
channel's glossary format (:mod:`ragspine.structured.glossary`), so an entity's synonyms in
every language come from one place::

    entities:                     # the competitors, with their forms by language
      ACME:
        en: [Acme, Acme Corp]
        zh: [艾克米]
        ja: [アクメ]
        codes: [ACM]
    deny: [ACME]                  # optional: which entities are refused (default: all of them)

or ``glossary: path/to/glossary.yaml`` (relative to the deny-list file) with ``deny: [KEY, ...]``
naming entities of that glossary (required then: not every entity of a glossary is a competitor).

**Matching** (:func:`normalize`): NFKC (full-width ``ＡＣＭＥ`` is ``acme``, half-width kana are
kana), case-folded, invisible format characters (zero-width spaces, soft hyphens) removed,
runs of spaces, ``- _ . · ・`` one space, and no space next to a CJK character (``红隼 机器人``
is ``红隼机器人``, ``ケストレル・ロボティクス`` is ``ケストレルロボティクス``). A form whose
end is a letter or digit of an alphabetic script must end a word there: ``Acme`` matches
``Acme's``, ``ACME-led`` and ``Acme的营收`` but not ``Acmeville`` or ``Acme2`` (list such
forms when they mean the entity). CJK forms match anywhere (Chinese and Japanese have no word
boundaries): ``艾克米`` matches ``艾克米公司``. Traditional and Simplified Chinese are
different forms: list both.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from ragspine.errors import ConfigError

__all__ = ["GateDecision", "SecurityGate", "TermMatcher", "load_denylist", "make_security_gate", "normalize"]

_SEPARATORS = re.compile(r"[\s\-_.\u00b7\u30fb\u2027\u2010-\u2015\u2212]+")
_CJK = r"\u2e80-\u2fff\u3000-\u303f\u3040-\u30ff\u3100-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef"
_SPACE_NEAR_CJK = re.compile(rf" ?([{_CJK}]) ?")


def normalize(text: str) -> str:
    """The form the gate compares (see the module docstring)."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = "".join(ch for ch in text if unicodedata.category(ch) != "Cf")  # zero-width spaces, soft hyphens
    text = _SEPARATORS.sub(" ", text).strip()
    return _SPACE_NEAR_CJK.sub(r"\1", text)


#: A letter or digit outside the CJK ranges: what a form ending in such a character must not touch.
_WORD = rf"[^\W_{_CJK}]"


def _is_word_char(ch: str) -> bool:
    return re.fullmatch(_WORD, ch) is not None


def _pattern(form: str) -> re.Pattern[str]:
    body = re.escape(form)
    if _is_word_char(form[0]):
        body = rf"(?<!{_WORD})" + body
    if _is_word_char(form[-1]):
        body += rf"(?!{_WORD})"
    return re.compile(body)


@dataclass(frozen=True)
class GateDecision:
    """``allowed``, or the deny-listed ``entity`` (its key) and the ``form`` that named it."""

    allowed: bool
    entity: str | None = None
    form: str | None = None


ALLOWED = GateDecision(True)


class TermMatcher:
    """Finds the terms of ``terms`` (``{key: [forms]}``) a text names, by the rules of the
    module docstring (the key is a form too); what the gate, and Adaptive-RAG's entity count,
    match with."""

    def __init__(self, terms: Mapping[str, Sequence[str]]) -> None:
        patterns: list[tuple[int, str, str, re.Pattern[str]]] = []
        for key, forms in terms.items():
            for form in dict.fromkeys([key, *forms]):
                folded = normalize(form)
                if folded:
                    patterns.append((len(folded), key, form, _pattern(folded)))
        patterns.sort(key=lambda p: (-p[0], p[1], p[2]))  # the longest form is the one reported
        self._patterns = [(key, form, pattern) for _, key, form, pattern in patterns]
        self.keys = tuple(sorted(terms))

    def first(self, text: str) -> tuple[str, str] | None:
        """``(key, form)`` of the longest form ``text`` names, else ``None``."""
        folded = normalize(text)
        for key, form, pattern in self._patterns:
            if pattern.search(folded):
                return key, form
        return None

    def keys_in(self, text: str) -> list[str]:
        """Every key ``text`` names, sorted."""
        folded = normalize(text)
        return sorted({key for key, _, pattern in self._patterns if pattern.search(folded)})


class SecurityGate:
    """Refuses texts naming an entity of ``denied`` (``{key: [forms]}``); see the module docstring."""

    def __init__(self, denied: Mapping[str, Sequence[str]]) -> None:
        self.matcher = TermMatcher(denied)
        if not self.matcher.keys:
            raise ConfigError("the security deny list names no entity: add one under entities/deny, or unset RAGSPINE_SECURITY_DENYLIST")
        self.entities = self.matcher.keys

    def check(self, text: str) -> GateDecision:
        """Whether ``text`` may be searched (deterministic: no model, no I/O)."""
        found = self.matcher.first(text)
        return ALLOWED if found is None else GateDecision(False, *found)

    def __repr__(self) -> str:
        return f"SecurityGate(entities={list(self.entities)})"


def load_denylist(path: str | Path) -> dict[str, list[str]]:
    """``{entity key: [forms]}`` of a deny-list file (see the module docstring)."""
    import yaml

    from ragspine.structured.glossary import Glossary

    where = f"RAGSPINE_SECURITY_DENYLIST {str(path)!r}"
    try:
        data: Any = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read {where}: {exc.strerror}") from None
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"{where} is not UTF-8 YAML or JSON: {str(exc).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: write a mapping with entities (glossary format) and/or glossary + deny")
    data = dict(data)
    deny = data.pop("deny", None)
    source = data.pop("glossary", None)
    if deny is not None and (not isinstance(deny, list) or not all(isinstance(k, str) for k in deny)):
        raise ConfigError(f"{where}: deny must be a list of entity keys")
    if source is not None:
        if any(data.get(section) for section in ("metrics", "entities", "channels", "periods", "units")):
            raise ConfigError(f"{where}: give either glossary: FILE or the entities inline, not both")
        if not deny:
            raise ConfigError(f"{where}: with glossary: FILE, list the refused entities under deny: [KEY, ...]")
        glossary = Glossary.load(Path(path).parent / str(source))
    else:
        glossary = Glossary.from_mapping(data, where)
    entities = glossary.terms["entities"]
    keys = list(entities) if deny is None else list(dict.fromkeys(deny))
    unknown = [k for k in keys if k not in entities]
    if unknown:
        raise ConfigError(f"{where}: deny names {unknown[0]!r}, which is no entity of its glossary")
    return {key: list(entities[key].forms) for key in keys}


def make_security_gate(path: str | Path | None) -> SecurityGate | None:
    """The gate of the deny-list file at ``path`` (``RAGSPINE_SECURITY_DENYLIST``); ``None``: no gate."""
    if path is None or not str(path).strip() or str(path).strip().lower() in ("none", "off"):
        return None
    return SecurityGate(load_denylist(str(path).strip()))
