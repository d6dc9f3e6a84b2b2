"""Controlled glossaries: surface forms in Chinese, Japanese and English → one canonical key.

A glossary file is YAML (or JSON) with up to five sections::

    metrics:                      # canonical key → its forms, by language
      revenue:
        en: [revenue, sales, turnover]      # the first form of a language is its label
        zh: [营收, 营业收入, 销售额]
        ja: [売上高, 売上]
        codes: [REV]                        # codes: any language
      operating_margin:
        en: [operating margin]
        derived_from: [operating_profit, revenue]   # optional: the metrics it is computed from
    entities:
      KESTREL_JP:
        en: [Kestrel Japan]
        parent: KESTREL                     # optional: the entity key it is a subsidiary of
        fiscal_year_start_month: 4          # optional: the entity's fiscal calendar
        fiscal_year_named_by: start         # start (2024年度 = Apr 2024–Mar 2025) | end
    channels:                     # ``total`` (all channels) is added when not declared
      direct: {en: [direct sales], zh: [直销], ja: [直販]}
    periods:                      # aliases the period grammar does not read; keys are canonical
      2024Q3: {en: [autumn quarter 2024]}
    units:                        # labels of the units facts carry (found answers use them)
      EUR_M: {en: [million euros], zh: [百万欧元], ja: [百万ユーロ]}

Forms match exactly after folding (NFKC, case, whitespace), never approximately: a near miss is
*unrecognized*, and :meth:`Glossary.suggest` may list candidates, which are never substituted.
A form naming two keys of one section is an error. The key itself is always a form.
``parent`` and ``derived_from`` name keys of the same glossary (never forms), never the term
itself, and never close a cycle; they are what :mod:`ragspine.graph` builds its relation graph from.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

from ragspine.errors import ConfigError
from ragspine.structured.base import TOTAL_CHANNEL
from ragspine.structured.calendar import CALENDAR_YEAR, FiscalCalendar, parse_key
from ragspine.structured.periods import fold

LANGUAGES = ("en", "zh", "ja")
SECTIONS = ("metrics", "entities", "channels", "periods", "units")
_KEY = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$")
_CALENDAR_FIELDS = ("fiscal_year_start_month", "fiscal_year_named_by")
#: Relation fields: an entity's ``parent`` (a key), a metric's ``derived_from`` (keys).
_RELATION_FIELDS = {"entities": "parent", "metrics": "derived_from"}
_TOTAL_FORMS = {"en": ["all channels", "total", "all"], "zh": ["全部渠道", "合计", "全渠道"], "ja": ["全チャネル", "合計", "全体"]}


@dataclass(frozen=True)
class Term:
    """One canonical key: its labels by language and every form that names it."""

    key: str
    labels: Mapping[str, str]
    forms: tuple[str, ...]
    calendar: FiscalCalendar = CALENDAR_YEAR
    parent: str = ""  # entities: the key of the entity it is a subsidiary of
    inputs: tuple[str, ...] = ()  # metrics: the keys of the metrics it is derived from

    def label(self, language: str) -> str:
        """The label in ``language``, else the English one, else the key."""
        return self.labels.get(language) or self.labels.get("en") or self.key


@dataclass(frozen=True)
class Match:
    """A recognized form: the canonical ``key`` and the language of the form (``None``: a key or code)."""

    key: str
    language: str | None = None


@dataclass(frozen=True)
class Glossary:
    """Terms by section; see the module docstring for the file format."""

    terms: Mapping[str, Mapping[str, Term]]
    where: str = "glossary"
    _index: Mapping[str, Mapping[str, Match]] = field(default_factory=dict, repr=False, compare=False)

    # -- loading ------------------------------------------------------------------------------
    @classmethod
    def from_mapping(cls, data: object, where: str = "glossary") -> Glossary:
        if not isinstance(data, Mapping):
            raise ConfigError(f"{where}: a glossary is a mapping of sections ({', '.join(SECTIONS)})")
        unknown = [str(k) for k in data if k not in SECTIONS and k != "version"]
        if unknown:
            raise ConfigError(f"{where}: unknown section {unknown[0]!r}; the sections are {', '.join(SECTIONS)}")
        terms: dict[str, dict[str, Term]] = {}
        index: dict[str, dict[str, Match]] = {}
        for section in SECTIONS:
            spec = data.get(section) or {}
            if not isinstance(spec, Mapping):
                raise ConfigError(f"{where}: {section} must map each key to its forms")
            terms[section], index[section] = {}, {}
            for key, entry in spec.items():
                term = _term(section, key, entry, f"{where}: {section}.{key}")
                terms[section][term.key] = term
                _index_term(index[section], term, entry, f"{where}: {section}")
        _check_relations(terms, where)
        if TOTAL_CHANNEL not in terms["channels"]:
            total = _term("channels", TOTAL_CHANNEL, _TOTAL_FORMS, where)
            terms["channels"][TOTAL_CHANNEL] = total
            _index_term(index["channels"], total, _TOTAL_FORMS, f"{where}: channels", keep_existing=True)
        return cls(terms, where, index)

    @classmethod
    def load(cls, path: str | Path) -> Glossary:
        """A glossary file (YAML or JSON); errors name the file."""
        import yaml

        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot read the glossary {str(path)!r}: {exc.strerror}") from None
        except UnicodeDecodeError:
            raise ConfigError(f"the glossary {str(path)!r} is not UTF-8 text") from None
        try:
            data = json.loads(text) if str(path).endswith(".json") else yaml.safe_load(text)
        except (ValueError, yaml.YAMLError) as exc:
            raise ConfigError(f"the glossary {str(path)!r} is not valid YAML or JSON: {str(exc).splitlines()[0]}") from None
        return cls.from_mapping(data, str(path))

    @classmethod
    def default(cls) -> Glossary:
        """The glossary shipped for the demo corpus (Kestrel Robotics)."""
        import yaml

        text = resources.files("ragspine.structured").joinpath("data/glossary.yaml").read_text(encoding="utf-8")
        return cls.from_mapping(yaml.safe_load(text), "the default glossary")

    # -- lookups -------------------------------------------------------------------------------
    def match(self, section: str, text: object) -> Match | None:
        """The key ``text`` names in ``section`` (exact after folding), else ``None``."""
        if not isinstance(text, str) or not text.strip() or len(text) > 200:
            return None
        return self._index[section].get(fold(text))

    def metric(self, text: object) -> Match | None:
        return self.match("metrics", text)

    def entity(self, text: object) -> Match | None:
        return self.match("entities", text)

    def channel(self, text: object) -> Match | None:
        return self.match("channels", text)

    def unit(self, text: object) -> Match | None:
        return self.match("units", text)

    def term(self, section: str, key: str) -> Term | None:
        return self.terms[section].get(key)

    def label(self, section: str, key: str, language: str) -> str:
        term = self.terms[section].get(key)
        return term.label(language) if term is not None else key

    def calendar(self, entity_key: str) -> FiscalCalendar:
        term = self.terms["entities"].get(entity_key)
        return term.calendar if term is not None else CALENDAR_YEAR

    @property
    def period_aliases(self) -> dict[str, str]:
        """Folded alias → canonical period key (for :func:`~ragspine.structured.periods.read_period`)."""
        return {form: m.key for form, m in self._index["periods"].items()}

    def keys(self, section: str) -> list[str]:
        return sorted(self.terms[section])

    def suggest(self, section: str, text: object, language: str = "en", limit: int = 3) -> list[str]:
        """Labels (in ``language``) of the terms whose forms are closest to ``text`` — for a
        message to list, never to substitute. May be empty."""
        if not isinstance(text, str) or not text.strip():
            return []
        folded = fold(text)[:200]
        forms = self._index[section]
        close = difflib.get_close_matches(folded, list(forms), n=limit * 3, cutoff=0.6)
        close += [f for f in forms if len(folded) >= 2 and (folded in f or f in folded) and f not in close]
        keys = list(dict.fromkeys(forms[f].key for f in close))[:limit]
        return [self.label(section, key, language) for key in keys]


def _forms(entry: Mapping[str, Any], name: str, where: str) -> list[str]:
    raw = entry.get(name) or []
    values = [raw] if isinstance(raw, str) else raw
    if not isinstance(values, list) or not all(isinstance(v, str) and v.strip() for v in values):
        raise ConfigError(f"{where}: {name} must be a list of non-empty strings")
    return [v.strip() for v in values]


def _term(section: str, key: object, entry: object, where: str) -> Term:
    key = str(key) if isinstance(key, int) and section == "periods" else key
    if section == "periods":
        if not isinstance(key, str) or parse_key(key) is None:
            raise ConfigError(f"{where}: a period alias's key must be canonical (2024, 2024Q3, 2024-07, FY2024, FY2024Q3)")
    elif not isinstance(key, str) or not _KEY.match(key):
        raise ConfigError(f"{where}: a key is a letter then letters, digits, '_', '.' or '-' (at most 64)")
    if not isinstance(entry, Mapping):
        raise ConfigError(f"{where}: give the forms by language, e.g. {{en: [...], zh: [...], ja: [...]}}")
    allowed = set(LANGUAGES) | {"codes"} | (set(_CALENDAR_FIELDS) if section == "entities" else set())
    allowed |= {_RELATION_FIELDS[section]} if section in _RELATION_FIELDS else set()
    unknown = [str(k) for k in entry if k not in allowed]
    if unknown:
        raise ConfigError(f"{where}: unknown field {unknown[0]!r}; the fields are {', '.join(sorted(allowed))}")
    labels = {lang: forms[0] for lang in LANGUAGES if (forms := _forms(entry, lang, where))}
    every = [key, *(f for lang in LANGUAGES for f in _forms(entry, lang, where)), *_forms(entry, "codes", where)]
    calendar = CALENDAR_YEAR
    if section == "entities" and any(f in entry for f in _CALENDAR_FIELDS):
        try:
            calendar = FiscalCalendar(entry.get("fiscal_year_start_month", 1), str(entry.get("fiscal_year_named_by", "start")))
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None
    parent = entry.get("parent") or ""
    if parent and (not isinstance(parent, str) or not _KEY.match(parent)):
        raise ConfigError(f"{where}: parent must be the key of an entity, got {parent!r}")
    inputs = _forms(entry, "derived_from", where)
    if len(set(inputs)) != len(inputs):
        raise ConfigError(f"{where}: derived_from names a metric twice")
    return Term(key, labels, tuple(dict.fromkeys(every)), calendar, str(parent), tuple(inputs))


def _check_relations(terms: Mapping[str, Mapping[str, Term]], where: str) -> None:
    """``parent`` / ``derived_from`` name other keys of their section and close no cycle."""
    for section, name in _RELATION_FIELDS.items():
        keys = terms[section]
        links = {key: ((t.parent,) if t.parent else ()) if section == "entities" else t.inputs for key, t in keys.items()}
        for key, targets in links.items():
            for target in targets:
                if target == key or target not in keys:
                    what = "itself" if target == key else f"{target!r}, which is no key of {section}"
                    raise ConfigError(f"{where}: {section}.{key}.{name} names {what}")
        state: dict[str, int] = {}  # 1: on the current path, 2: done
        for start in links:  # depth-first: a key met again on the path closes a cycle
            if start in state:
                continue
            path, pending = [start], [iter(links[start])]
            state[start] = 1
            while pending:
                step = next(pending[-1], None)
                if step is None:
                    state[path.pop()] = 2
                    pending.pop()
                elif state.get(step) == 1:
                    cycle = " -> ".join([*path[path.index(step):], step])
                    raise ConfigError(f"{where}: {section} {name} closes a cycle: {cycle}")
                elif step not in state:
                    state[step] = 1
                    path.append(step)
                    pending.append(iter(links[step]))


def _index_term(index: dict[str, Match], term: Term, entry: Mapping[str, Any], where: str, keep_existing: bool = False) -> None:
    tagged = [(term.key, None), *((f, lang) for lang in LANGUAGES for f in _forms(entry, lang, where)),
              *((f, None) for f in _forms(entry, "codes", where))]
    for form, language in tagged:
        folded = fold(form)
        other = index.get(folded)
        if other is not None and other.key != term.key:
            if keep_existing:
                continue
            raise ConfigError(f"{where}: {form!r} names both {other.key!r} and {term.key!r}; a form names one key")
        if other is None:
            index[folded] = Match(term.key, language)
