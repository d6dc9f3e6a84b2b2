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

**Aliases** (:func:`expand_denylist`): built with the fact glossary in use
(``RAGSPINE_FACT_GLOSSARY``, else the shipped one), a denied entity also covers every entity of
that glossary that any of its forms names — the glossary key, its codes and its forms in every
language: denying ``KESTREL_JP`` (or only its form ``Kestrel Japan``) denies ``KSTR_JP``,
``红隼日本`` and ``ケストレル・ジャパン`` too, whatever the deny list itself spells out.

**Matching** (:mod:`ragspine.security.matching`, with lookalikes): the text and the forms are
folded to their lookalike skeleton (:mod:`ragspine.security.fold`: NFKC, zero-width characters
removed, case-folded, confusables such as Cyrillic ``О`` to their Latin letter), then compared
as written (separators one space, none next to CJK; a form ending in a letter or digit of an
alphabetic script ends a word there: ``Acme`` matches ``Acme's``, ``ACME-led`` and ``Acme的营收``,
never ``Acmeville``) and spelled out (``O-s-p-r-e-y``, ``O s p r e y``, ``KestrelJapan``; a
form of at least four letters, at word boundaries, letter spacing or a break of the form's own
— never ``a CME contract`` for ``Acme``). CJK forms match anywhere (Chinese and Japanese have no
word boundaries): ``艾克米`` matches ``艾克米公司``. Traditional and Simplified Chinese are
different forms: list both.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from ragspine.errors import ConfigError
from ragspine.security.fold import compact
from ragspine.security.matching import TermMatcher, normalize

if TYPE_CHECKING:
    from ragspine.config import Settings
    from ragspine.structured.glossary import Glossary

__all__ = [
    "GateDecision", "SecurityGate", "TermMatcher", "expand_denylist", "load_denylist", "make_security_gate", "normalize",
    "refusal", "security_gate_for",
]


@dataclass(frozen=True)
class GateDecision:
    """``allowed``, or the deny-listed ``entity`` (its key) and the ``form`` that named it."""

    allowed: bool
    entity: str | None = None
    form: str | None = None


ALLOWED = GateDecision(True)
#: The status of a lookup the gate refused.
REFUSED = "refused"


class SecurityGate:
    """Refuses texts naming an entity of ``denied`` (``{key: [forms]}``); see the module docstring."""

    def __init__(self, denied: Mapping[str, Sequence[str]]) -> None:
        self.matcher = TermMatcher(denied, lookalikes=True)
        if not self.matcher.keys:
            raise ConfigError("the security deny list names no entity: add one under entities/deny, or unset RAGSPINE_SECURITY_DENYLIST")
        self.entities = self.matcher.keys

    def check(self, text: str) -> GateDecision:
        """Whether ``text`` may be searched (deterministic: no model, no I/O)."""
        found = self.matcher.first(text)
        return ALLOWED if found is None else GateDecision(False, *found)

    def check_all(self, texts: Iterable[str | None]) -> GateDecision:
        """The first refusal among ``texts`` (``None`` and empty ones skipped), else allowed:
        what a lookup of several inputs (metric, entity, period, channel) passes."""
        for text in texts:
            if text:
                decision = self.check(text)
                if not decision.allowed:
                    return decision
        return ALLOWED

    def check_entities(self, glossary: Glossary, keys: Iterable[str]) -> GateDecision:
        """The first refusal among the glossary entities ``keys`` — each key and every form the
        glossary knows for it: what a graph utility passes for every member it would read."""
        for key in keys:
            term = glossary.term("entities", key)
            decision = self.check_all([key, *(term.forms if term is not None else ())])
            if not decision.allowed:
                return decision
        return ALLOWED

    def check_lookup(self, glossary: Glossary, texts: Sequence[str | None]) -> GateDecision:
        """A structured lookup's inputs: each text, then each entity of ``glossary`` a text
        names exactly (:meth:`check_entities`) — nothing is looked up when it refuses."""
        decision = self.check_all(texts)
        if decision.allowed:
            named = [match.key for text in texts if text and (match := glossary.entity(text)) is not None]
            decision = self.check_entities(glossary, named)
        return decision

    def __repr__(self) -> str:
        return f"SecurityGate(entities={list(self.entities)})"


def refusal(decision: GateDecision, kind: str, language: str) -> dict[str, Any]:
    """What a refused lookup answers (``ragspine metric``, ``/v1/metric``, ``ragspine graph``):
    status ``refused``, the agent's fixed refusal in ``language`` (no number, no echo of the
    input) and ``refused`` — ``[{kind, entity}]``, as an agent answer lists it."""
    from ragspine.agent.messages import GATE_REFUSAL, message

    return {"status": REFUSED, "text": message(GATE_REFUSAL, language), "language": language,
            "refused": [{"kind": kind, "entity": decision.entity}]}


def load_denylist(path: str | Path, glossary: Glossary | None = None) -> dict[str, list[str]]:
    """``{entity key: [forms]}`` of a deny-list file (see the module docstring), each entity's
    forms expanded through ``glossary`` (:func:`expand_denylist`) when one is given."""
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
        own = Glossary.load(Path(path).parent / str(source))
    else:
        own = Glossary.from_mapping(data, where)
    entities = own.terms["entities"]
    keys = list(entities) if deny is None else list(dict.fromkeys(deny))
    unknown = [k for k in keys if k not in entities]
    if unknown:
        raise ConfigError(f"{where}: deny names {unknown[0]!r}, which is no entity of its glossary")
    denied = {key: list(entities[key].forms) for key in keys}
    return expand_denylist(denied, glossary) if glossary is not None else denied


def expand_denylist(denied: Mapping[str, Sequence[str]], glossary: Glossary) -> dict[str, list[str]]:
    """Each denied entity's forms, then every form (key, codes, each language's) of each entity
    of ``glossary`` that its key or any of its forms names — compared by their compact
    lookalike skeleton (:func:`~ragspine.security.fold.compact`), so ``Kestrel-Japan`` names
    ``KESTREL_JP`` as ``Kestrel Japan`` does. A form two glossary entities share denies both."""
    entities = glossary.terms["entities"]
    named: dict[str, set[str]] = {}
    for key, term in entities.items():
        for form in (key, *term.forms):
            if compact(form):
                named.setdefault(compact(form), set()).add(key)
    expanded: dict[str, list[str]] = {}
    for key, forms in denied.items():
        hits = sorted({hit for form in (key, *forms) for hit in named.get(compact(form), ())})
        extra = [form for hit in hits for form in (hit, *entities[hit].forms)]
        expanded[key] = list(dict.fromkeys([*forms, *extra]))
    return expanded


def make_security_gate(path: str | Path | None, glossary: Glossary | None = None) -> SecurityGate | None:
    """The gate of the deny-list file at ``path`` (``RAGSPINE_SECURITY_DENYLIST``), its
    entities expanded through ``glossary`` (the fact glossary in use); ``None``: no gate."""
    if path is None or not str(path).strip() or str(path).strip().lower() in ("none", "off"):
        return None
    return SecurityGate(load_denylist(str(path).strip(), glossary))


def security_gate_for(settings: Settings, glossary: Glossary | None = None) -> SecurityGate | None:
    """The gate of ``settings.security_denylist`` expanded through ``glossary``, else the fact
    glossary ``settings.fact_glossary`` names (else the shipped one): what every route and
    command that reaches the structured channel, the graph or an index uses."""
    path = settings.security_denylist
    if path is None or not str(path).strip() or str(path).strip().lower() in ("none", "off"):
        return None
    if glossary is None:
        from ragspine.agent.spotting import load_fact_glossary

        glossary = load_fact_glossary(settings.fact_glossary)
    return make_security_gate(path, glossary)
