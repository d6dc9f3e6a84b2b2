"""Automatic filter extraction: a seam whose output can only be a ``MetadataFilter``.

``FilterExtractor.extract(query) -> MetadataFilter | None``. The result is AND-ed with the
caller's own filter, so it can only narrow; ``safe_extract`` turns any failure into "no
automatic filter" (never a wider candidate set than the caller asked for).

``make_filter_extractor(spec, vocabulary=, provider=)``: ``none`` → ``None``;
``controlled_vocab`` → :class:`ControlledVocabFilterExtractor` (offline, deterministic);
``llm`` → :class:`LLMFilterExtractor` (opt-in; values outside the vocabulary are dropped; an
answer that is not a JSON object is reported as malformed and adds no filter).

A vocabulary maps ``field -> {canonical value -> [surface forms]}``, e.g.
``{"entity": {"ACME_CN": ["acme china", "艾克美"]}}``; :func:`load_vocabulary` reads one from
a YAML or JSON file (``RAGSPINE_FILTER_VOCABULARY``; a field may also list bare values).
"""

from __future__ import annotations

import json
import logging
import re
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from ragspine.errors import ConfigError
from ragspine.llm.observe import report_malformed
from ragspine.retrieval.filtering.base import FilterExtractor
from ragspine.retrieval.filtering.filters import FilterCondition, MetadataFilter

if TYPE_CHECKING:
    from ragspine.llm.base import LLMProvider

__all__ = [
    "ControlledVocabFilterExtractor", "FilterExtractor", "LLMFilterExtractor", "load_vocabulary", "make_filter_extractor", "safe_extract",
]

log = logging.getLogger(__name__)

Vocabulary = Mapping[str, Mapping[str, Sequence[str]]]


def safe_extract(extractor: FilterExtractor | None, query: str) -> MetadataFilter | None:
    """``extractor.extract(query)``, or ``None`` when there is none, it fails or returns junk."""
    if extractor is None:
        return None
    try:
        result = extractor.extract(query)
    except Exception as exc:
        log.warning("filter extraction failed, no automatic filter: %s", exc)
        return None
    return result if isinstance(result, MetadataFilter) and result else None


def _mentions(query: str, form: str) -> bool:
    if form.isascii():
        return re.search(rf"(?<![0-9a-z]){re.escape(form.lower())}(?![0-9a-z])", query.lower()) is not None
    return form in query


class ControlledVocabFilterExtractor:
    """One condition per field whose surface forms the query mentions (``eq``, or ``in``
    when several canonical values of one field are mentioned)."""

    def __init__(self, vocabulary: Vocabulary) -> None:
        self.vocabulary = {f: {v: tuple(forms) + (v,) for v, forms in values.items()} for f, values in vocabulary.items()}

    def extract(self, query: str) -> MetadataFilter | None:
        conditions = []
        for field, values in self.vocabulary.items():
            hits = [value for value, forms in values.items() if any(_mentions(query, f) for f in forms)]
            if len(hits) == 1:
                conditions.append(FilterCondition(field, "eq", hits[0]))
            elif hits:
                conditions.append(FilterCondition(field, "in", sorted(hits)))
        return MetadataFilter(tuple(conditions)) if conditions else None


class LLMFilterExtractor:
    """Asks an LLM (``provider.chat``) for ``{"field": "value"}`` JSON; keeps only
    vocabulary fields and canonical values, as ``eq`` conditions."""

    def __init__(self, provider: Any, vocabulary: Vocabulary) -> None:
        if provider is None:
            raise ConfigError("the llm filter extractor needs an LLM provider")
        self.provider = provider
        self.vocabulary = vocabulary

    def extract(self, query: str) -> MetadataFilter | None:
        allowed = {f: sorted(values) for f, values in self.vocabulary.items()}
        prompt = (
            "Extract metadata filters from the question. Reply with one JSON object mapping "
            f"field to value, using only these fields and values: {json.dumps(allowed, ensure_ascii=False)}. "
            f"Reply {{}} if none apply.\nQuestion: {query}"
        )
        answer = self.provider.chat([{"role": "user", "content": prompt}])
        match = re.search(r"\{.*\}", answer if isinstance(answer, str) else "", re.S)
        try:
            data = json.loads(match.group()) if match else None
        except ValueError:
            data = None
        if not isinstance(data, dict):
            report_malformed(self.provider, "filter_extractor", answer)
            return None
        conditions = [
            FilterCondition(field, "eq", value)
            for field, value in data.items()
            if field in allowed and value in allowed[field]
        ]
        return MetadataFilter(tuple(conditions)) if conditions else None


def load_vocabulary(path: str) -> dict[str, dict[str, list[str]]]:
    """The vocabulary in the YAML/JSON file at ``path``: ``field -> {value: [surface forms]}``
    (or ``field -> [values]``); ``ConfigError`` naming the file and the problem."""
    import yaml

    where = f"RAGSPINE_FILTER_VOCABULARY {path!r}"
    try:
        with open(path, encoding="utf-8") as fh:
            data = yaml.safe_load(fh)
    except OSError as exc:
        raise ConfigError(f"cannot read {where}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{where} is not valid YAML or JSON: {str(exc).splitlines()[0]}") from None
    if not isinstance(data, dict) or not data:
        raise ConfigError(f"{where} must map each field to its values ({{field: {{value: [surface forms]}}}})")
    vocabulary: dict[str, dict[str, list[str]]] = {}
    for field, values in data.items():
        if isinstance(values, list):
            values = {value: [] for value in values}
        if not isinstance(values, dict) or not all(isinstance(forms, (list, type(None))) for forms in values.values()):
            raise ConfigError(f"{where}: field {field!r} must map each value to a list of surface forms")
        vocabulary[str(field)] = {str(value): [str(form) for form in forms or []] for value, forms in values.items()}
    return vocabulary


def make_filter_extractor(
    spec: str = "none", *, vocabulary: Vocabulary | None = None, provider: LLMProvider | None = None
) -> FilterExtractor | None:
    """The extractor named ``spec`` (the caller's ``RAGSPINE_FILTER_EXTRACTOR``; default ``none``,
    the seed's); ``None`` for ``none``. ``controlled_vocab`` needs ``vocabulary``; ``llm`` needs
    ``provider``."""
    from ragspine.registries import FILTER_EXTRACTORS

    name = FILTER_EXTRACTORS.canonical(spec)
    if name == "llm" and provider is None:
        raise ConfigError("the llm filter extractor needs an LLM provider (RAGSPINE_LLM)")
    if name in ("controlled_vocab", "llm") and not vocabulary:
        raise ConfigError(f"the {name} filter extractor needs a vocabulary: set RAGSPINE_FILTER_VOCABULARY to a YAML/JSON file")
    if name == "controlled_vocab":
        extractor: FilterExtractor | None = FILTER_EXTRACTORS.build(name, vocabulary)
    elif name == "llm":
        extractor = FILTER_EXTRACTORS.build(name, provider, vocabulary)
    else:
        extractor = FILTER_EXTRACTORS.build(name)
    return extractor
